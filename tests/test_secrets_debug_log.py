"""What ``${VAR}`` puts into a URL stays out of a real daemon's debug log (issue 14.2).

``tests/test_secrets.py`` proves the query of a URL absent from the log of a ``meworkd``
process, and every part in replies; its other tests run the daemon in-process, where the log
is not meworkd's own (no redactor is configured). Here the real process, at debug level, fails
to connect to URLs with a secret in every place the issue names (userinfo, path segment, query
value, and ``${VAR:-literal}`` defaults in the path and the query), which puts each URL into
failure messages, ``servers.test`` and the HTTP client's debug lines.
"""

import json
import socket

import pytest

from tests.reliability.harness import DaemonProc, begin, call, daemon_dir

pytestmark = pytest.mark.anyio

EXPANDED = {
    "MW_AUDIT_USER": "user-5e1d3a",
    "MW_AUDIT_PW": "pw-3f9a7c",
    "MW_AUDIT_PATH": "path-tok-8d2e6b",
    "MW_AUDIT_Q": "query-tok-1a4f",
}
DEFAULTS = ("dflt-seg-5c1", "dflt-q-77a")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_url_secrets_stay_out_of_the_debug_log() -> None:
    port = _free_port()  # nothing listens: every attempt fails, quoting the URL
    base = f"http://127.0.0.1:{port}"
    servers = {
        "h": {
            "type": "streamable_http",
            "url": f"http://${{MW_AUDIT_USER}}:${{MW_AUDIT_PW}}@127.0.0.1:{port}"
            "/hooks/${MW_AUDIT_PATH}/mcp?key=${MW_AUDIT_Q}",
        },
        "d": {
            "type": "streamable_http",
            "url": f"{base}/${{MW_AUDIT_UNSET:-{DEFAULTS[0]}}}/mcp"
            f"?q=${{MW_AUDIT_NO:-{DEFAULTS[1]}}}",
        },
    }
    with daemon_dir() as root:
        d = DaemonProc(root)
        d.write_settings(servers)
        d.start(extra_env=EXPANDED, log_level="debug")
        try:
            async with d.connect() as client:
                turn = await begin(client, ["h", "d"])
                tested = [await call(client, "servers.test", {"name": n}) for n in ("h", "d")]
        finally:
            d.stop()
        log = d.log_text()
    assert {f["kind"] for f in turn["failures"]} == {"connect_failed"}, turn["failures"]
    assert f"{base}/hooks/" in log  # the URLs are in the log...
    for secret in (*EXPANDED.values(), *DEFAULTS):  # ... without what was put into them
        assert secret not in log, secret
        assert secret not in json.dumps([turn, tested]), secret
