"""``meworkctl view``'s web host without a browser (issue 27, section 2): it serves nobody but
its page (token, exact Host, the page's own Origin), builds the view's CSP from its declaration,
relays only the view's own requests, and fails clearly for a call without a view.
"""

import json
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import pytest
from mework_client.viewhost.csp import view_csp

from tests.common import APPS_FAKE, document
from tests.turn_helpers import EVENT_TIMEOUT, Harness, bound, mw_fixture  # noqa: F401

pytestmark = pytest.mark.anyio

# The stdlib twin of apps_view.py: the host is the subject here, not the SDK's server.
APPS = {"type": "stdio", "command": sys.executable, "args": [APPS_FAKE]}


def _ctl(mw: Harness, *args: str) -> list[str]:
    return [sys.executable, "-m", "mework_client.ctl", "--socket", str(mw.paths.socket), *args]


@asynccontextmanager
async def _served(mw: Harness) -> AsyncIterator[str]:
    await mw.start(document({"apps": APPS}))
    conversation = await mw.conversation(["apps"])
    turn = await mw.begin(conversation)
    await mw.tool(turn, bound(turn, "apps")["show_counter"], callId="v1")
    process = await anyio.open_process(_ctl(mw, "view", "v1", "--no-browser"))
    try:
        assert process.stdout is not None
        line = b""
        with anyio.fail_after(EVENT_TIMEOUT):
            while not line.endswith(b"\n"):
                line += await process.stdout.receive(1)
        yield line.decode().strip()
    finally:
        process.terminate()
        await process.wait()


def _fetch(url: str, headers: dict[str, str] | None = None, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=EVENT_TIMEOUT) as reply:
            return reply.status, (reply.headers, reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, (exc.headers, exc.read())


async def fetch(url: str, headers: dict[str, str] | None = None, body: Any = None) -> Any:
    return await anyio.to_thread.run_sync(_fetch, url, headers, body)


async def test_only_the_page_with_its_token_host_and_origin_is_served(mw: Harness) -> None:
    async with _served(mw) as url:
        parts = urlsplit(url)
        origin, token = f"http://{parts.netloc}", parse_qs(parts.query)["t"][0]
        assert parts.hostname == "127.0.0.1"
        status, (headers, page) = await fetch(url)
        assert status == 200
        assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
        assert token.encode() in page  # the page's own script is asked for with it
        assert (await fetch(f"{origin}/"))[0] == 403
        assert (await fetch(f"{origin}/?t=wrong"))[0] == 403
        assert (await fetch(url, {"Host": f"localhost:{parts.port}"}))[0] == 403  # rebinding
        status, (_h, body) = await fetch(f"{origin}/view.json?t={token}")
        view = json.loads(body)
        assert (status, view["tool"]) == (200, "show_counter")
        # The sandbox: an origin of its own, its own token, the view's CSP as a header.
        sandbox = urlsplit(view["sandboxUrl"])
        assert sandbox.port != parts.port
        assert (await fetch(f"http://{sandbox.netloc}/sandbox?t={token}"))[0] == 403
        status, (headers, _b) = await fetch(view["sandboxUrl"])
        assert status == 200
        assert headers["Content-Security-Policy"] == view_csp({"connectDomains": []})
        # The relay: from the page's own Origin only, for this view's requests only.
        bridge = f"{origin}/bridge"
        call = {"method": "tools/call", "params": {"name": "bump"}}
        ok = {"X-Mework-Token": token, "Origin": origin, "Content-Type": "application/json"}
        for bad in ({**ok, "Origin": f"http://{sandbox.netloc}"}, {**ok, "X-Mework-Token": "x"}):
            assert (await fetch(bridge, bad, call))[0] == 403
        status, (_h, body) = await fetch(bridge, ok, call)
        assert json.loads(body)["result"]["content"][0]["text"] == "bumped 1"
        approve = {"method": "approve", "params": {"approvalId": "a1", "decision": "allow"}}
        assert "not an approval of this view" in (await fetch(bridge, ok, approve))[1][1].decode()
        status, (_h, body) = await fetch(bridge, ok, {"method": "servers.remove"})
        assert "not relayed" in body.decode()
        assert (await fetch(bridge, ok, ["not", "an", "object"]))[0] == 400


async def test_a_call_without_a_view_is_said_clearly(mw: Harness) -> None:
    await mw.start(document({"apps": APPS}))
    result = await anyio.run_process(_ctl(mw, "view", "nope", "--no-browser"), check=False)
    assert result.returncode == 1
    assert b"no tool call 'nope' with a view" in result.stderr


def test_the_csp_allows_only_what_the_view_declares() -> None:
    default = view_csp(None)
    assert "connect-src 'none'" in default
    assert "object-src 'none'" in default
    assert "frame-src 'none'" in default
    declared = view_csp(
        {
            "connectDomains": ["https://api.example.com", "https://x.com; script-src *"],
            "resourceDomains": ["https://*.cdn.example", "'unsafe-eval'"],
        }
    )
    assert "connect-src https://api.example.com;" in declared
    assert "script-src 'self' 'unsafe-inline' https://*.cdn.example;" in declared
    assert "unsafe-eval" not in declared
    assert "x.com" not in declared
