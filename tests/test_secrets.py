"""Secrets are exactly the secrets, and they never leave (issue 14, points 1 and 2).

A real in-process daemon on a real socket, real fixture servers over pipes and HTTP. Ordinary
values (``LOG_LEVEL=info``, ``Content-Type: application/json``) pass through untouched; secrets
stay out as dict keys, inside URLs, in a hook's message kept in the audit, in the exit output of
a process whose secret was just rotated, and in text cut to a length.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mework_client import RpcError
from mework_client.aio import connect

from meworkd.base.log import REDACTED, Redactor
from meworkd.core.catalog import shown_name, tool_name
from meworkd.settings import is_secret_name, masked_entry, parse_server, secret_values
from tests.daemon_helpers import (
    BOUND,
    begin_turn,
    bound,
    call_tool,
    envdump,
    free_port,
    session_for,
    start_daemon,
    text_of,
    wait_event,
)
from tests.reliability.harness import LOCAL_SERVERS, DaemonProc, HttpFixture, daemon_dir
from tests.turn_helpers import (
    Harness,
    approval_for,
    document,
    mw_fixture,  # noqa: F401  (the mw fixture)
    permission_hooks,
    start_call,
)

pytestmark = pytest.mark.anyio

PAT = "ghp-secret-4b7d1f0a9c2e"  # GITHUB_PAT
HDR = "hdr-secret-9e1a5c7b3d"  # Authorization: Bearer …
ORDINARY = "info production application/json mework desktop"
ECHO_AUTH = str(LOCAL_SERVERS / "http_echo_auth.py")


def _ordinary_servers(port: int) -> dict[str, Any]:
    return {
        "e": envdump(env={"LOG_LEVEL": "info", "NODE_ENV": "production", "GITHUB_PAT": PAT}),
        "h": {
            "type": "streamable_http",
            "url": f"http://127.0.0.1:{port}/mcp",
            "headers": {
                "Content-Type": "application/json",
                "User-Agent": "mework desktop",
                "Authorization": f"Bearer {HDR}",
            },
            "enabled": False,
        },
    }


# --- the definition (pure) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("GITHUB_PAT", True),
        ("API_KEY", True),
        ("apiKey", True),
        ("APIKey", True),
        ("X-Api-Key", True),
        ("MY_TOKENS", True),
        ("TOKEN2", True),
        ("db.password", True),
        ("SESSION_ID", True),
        ("sessionCookie", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("PASSWD", True),
        ("PATH", False),
        ("NODE_ENV", False),
        ("LOG_LEVEL", False),
        ("MONKEY", False),
        ("KEYBOARD_LAYOUT", False),
        ("PATHEXT", False),
        ("PASSTHROUGH", False),
        ("AUTHOR", False),
        ("MYTOKEN", False),  # a word part, not any substring
        ("", False),
    ],
)
def test_secret_names_are_told_by_whole_words(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_secret_values_are_exactly_the_secrets() -> None:
    config = parse_server(
        "s",
        {
            "url": "https://${MW_USER}:${MW_PW}@example.com/hooks/${MW_PATH}/mcp?k=${MW_Q:-dflt-q}",
            "headers": {
                "Authorization": "Bearer ${MW_TOK}",
                "Content-Type": "application/json",
                "User-Agent": "mework desktop",
                "X-Tenant": "tenant-literal",
                "X-Phrase": "open sesame please",
            },
        },
    )
    environ = {"MW_USER": "user-x", "MW_PW": "pw-secret", "MW_PATH": "path/seg", "MW_TOK": "tok1"}
    found = set(secret_values(config, environ))
    assert {"user-x", "pw-secret", "path/seg", "path%2Fseg", "dflt-q", "tok1"} <= found
    assert "Bearer tok1" in found
    assert "tenant-literal" in found  # a header not known to be descriptive is a secret
    assert "open sesame please" in found
    assert "open" not in found  # its words are not secrets each
    assert "please" not in found
    for ordinary in ("application/json", "mework", "desktop", "mework desktop", "example.com"):
        assert ordinary not in found
    env = parse_server(
        "e",
        {
            "command": "x",
            "env": {
                "LOG_LEVEL": "info",
                "NODE_ENV": "production",
                "GITHUB_PAT": "pat-value",
                "FROM": "${MW_FROM}",
                "DEFAULTED": "${MW_UNSET:-default-literal}",
            },
        },
    )
    found = set(secret_values(env, {"MW_FROM": "from-var"}))
    assert found == {"pat-value", "from-var", "default-literal"}


def test_masks_keep_references_and_ordinary_values_and_hide_defaults() -> None:
    raw = {
        "url": "https://h/${A:-url-default}/mcp",
        "env": {"LOG_LEVEL": "info", "GITHUB_PAT": "x", "REF": "${T:-env-default}"},
        "headers": {"User-Agent": "mework desktop", "Authorization": "Bearer ${T:-hdr-dflt}"},
    }
    masked = masked_entry(raw)
    assert masked["url"] == "https://h/${A:-********}/mcp"
    assert masked["env"] == {"LOG_LEVEL": "info", "GITHUB_PAT": "********", "REF": "${T:-********}"}
    assert masked["headers"] == {
        "User-Agent": "mework desktop",
        "Authorization": "Bearer ${T:-********}",
    }


def test_redactor_redacts_keys_and_forgets_a_rotated_secret_only_when_told() -> None:
    redactor = Redactor()
    redactor.update(["old-secret"])
    assert redactor.redact_value({"old-secret": {"a": "old-secret"}}) == {REDACTED: {"a": REDACTED}}
    gone = False
    redactor.update(["new-secret"], retire_when=lambda: gone)
    assert redactor.redact("old-secret new-secret") == f"{REDACTED} {REDACTED}"
    gone = True
    assert redactor.redact("old-secret new-secret") == f"old-secret {REDACTED}"


# --- ordinary values pass through --------------------------------------------------------------


async def test_ordinary_values_pass_through_replies_events_and_prompts(short_tmp: Path) -> None:
    async with (
        start_daemon(short_tmp, _ordinary_servers(free_port())) as (_d, sock),
        connect(sock) as c,
    ):
        await c.subscribe(["approval.requested"])
        turn = await begin_turn(c, ["e"])
        echoed = await call_tool(c, turn, "e", "args", {"text": ORDINARY})
        assert json.loads(text_of(echoed)) == {"text": ORDINARY}
        child_env = json.loads(text_of(await call_tool(c, turn, "e", "env")))
        assert (child_env["LOG_LEVEL"], child_env["NODE_ENV"]) == ("info", "production")
        assert child_env["GITHUB_PAT"] == REDACTED
        got = await c.call("servers.get", {"name": "e"})
        assert got["server"]["env"] == {
            "LOG_LEVEL": "info",
            "NODE_ENV": "production",
            "GITHUB_PAT": "********",
        }
        headers = (await c.call("servers.get", {"name": "h"}))["server"]["headers"]
        assert headers == {
            "Content-Type": "application/json",
            "User-Agent": "mework desktop",
            "Authorization": "********",
        }
        # The approval prompt shows what the call carries, and the server gets exactly that.
        conv = await c.call(
            "conversations.create", {"mcpServers": ["e"], "approvalLevel": "request_approval"}
        )
        asked = await begin_turn(c, ["e"], conv["id"])
        arguments = {"text": ORDINARY, "nested": {"production": [None, 1.5, "info"]}}
        async with anyio.create_task_group() as tg:
            pending = start_call(
                tg,
                c,
                "turns.callTool",
                {
                    "turnId": asked["turnId"],
                    "name": bound(asked, "e", "args"),
                    "arguments": arguments,
                },
            )
            prompt = await approval_for(c, asked)
            assert prompt["arguments"] == arguments
            await c.call(
                "approvals.respond", {"approvalId": prompt["approvalId"], "decision": "allow"}
            )
            reply = await pending.wait()
        assert json.loads(text_of(reply)) == arguments


# --- masked values sent back --------------------------------------------------------------------


async def test_a_masked_value_sent_back_keeps_the_stored_secret(short_tmp: Path) -> None:
    servers = {
        "e": envdump(env={"GITHUB_PAT": PAT, "D": "${MW_UNSET_X:-default-secret}"}),
        "h": _ordinary_servers(free_port())["h"],
    }
    async with start_daemon(short_tmp, servers) as (_d, sock), connect(sock) as c:
        shown = (await c.call("servers.get", {"name": "e"}))["server"]
        assert shown["env"]["D"] == "${MW_UNSET_X:-********}"
        shown["env"]["LOG_LEVEL"] = "debug"
        await c.call("servers.update", {"name": "e", "patch": {"env": shown["env"]}})
        exported = await c.call("servers.export")
        await c.call("servers.import", {"text": json.dumps(exported), "onConflict": "replace"})
        stored = json.loads((short_tmp / "settings.json").read_text())["assets"]["mcpServers"]
        assert stored["e"]["env"] == {
            "GITHUB_PAT": PAT,
            "D": "${MW_UNSET_X:-default-secret}",
            "LOG_LEVEL": "debug",
        }
        assert stored["h"]["headers"]["Authorization"] == f"Bearer {HDR}"
        # A mask that stands for no stored value is refused, never written.
        for method, params in (
            ("servers.add", {"name": "new", "server": envdump(env={"TOKEN": "********"})}),
            ("servers.update", {"name": "e", "patch": {"env": {"NEW_KEY": "********"}}}),
            ("servers.update", {"name": "e", "patch": {"url": None, "env": {"A": REDACTED}}}),
        ):
            with pytest.raises(RpcError):
                await c.call(method, params)
        text = (short_tmp / "settings.json").read_text()
        assert "********" not in text
        assert REDACTED not in text


def test_shown_names_keep_secrets_out_of_the_slugs_only() -> None:
    redactor = Redactor()
    redactor.update(["Tok_Secret_9f8e7d6c5b4a39281706", "abc-def-secret"])
    plain = ("github", "read_file")
    assert shown_name(*plain, redactor.redact) == tool_name(*plain)  # the naming contract
    long = shown_name("github", "get_Tok_Secret_9f8e7d6c5b4a39281706", redactor.redact)
    assert long.startswith("mcp__github_")
    assert "__get-redacted__" in long
    folded = shown_name("github", "ABC_DEF_SECRET", redactor.redact)  # only folding spells it
    assert "__redacted__" in folded
    assert "abc-def" not in folded
    # The digests stay the originals': two tools differing only in a secret stay two names.
    assert folded != shown_name("github", "abc_def_secret", redactor.redact)


# --- secrets never leave ------------------------------------------------------------------------


async def test_secrets_as_keys_are_redacted(short_tmp: Path) -> None:
    servers = {"e": envdump("--key-env", "TOKEN", env={"TOKEN": PAT})}
    async with start_daemon(short_tmp, servers) as (_d, sock), connect(sock) as c:
        turn = await begin_turn(c, ["e"])
        assert any(t["name"] == bound(turn, "e", "keys") for t in turn["tools"])
        reply = await call_tool(c, turn, "e", "keys")
        assert reply["structuredContent"] == {REDACTED: True}
        for value in (turn, reply, await c.call("servers.test", {"name": "e"})):
            assert PAT not in json.dumps(value)


async def test_a_tool_named_after_a_secret_is_bound_without_it(short_tmp: Path) -> None:
    # Longer than a tool slug and changed by folding: neither the secret, nor its folded form,
    # nor the prefix a cut would keep may reach the model, the reply or the audit.
    secret = "Ghp_Tool_Secret_7c3e9a1f5b2d8e40"
    servers = {"e": envdump("--tool-named-env", "TOOL_TOKEN", env={"TOOL_TOKEN": secret})}
    async with start_daemon(short_tmp, servers) as (_d, sock), connect(sock) as c:
        turn = await begin_turn(c, ["e"])
        name = bound(turn, "e", REDACTED)  # the reply's bindings name the tool redacted
        assert name in {t["name"] for t in turn["tools"]}
        assert "__redacted__" in name
        reply = await call_tool(c, turn, "e", REDACTED)  # still reaches the real tool
        assert not reply.get("isError")
        assert json.loads(text_of(reply)) == "named"
        audit = await c.call("audit.list", {"conversationId": turn["conversationId"]})
        assert [e["name"] for e in audit["entries"]] == [name]
        for value in (turn, reply, audit):
            dumped = json.dumps(value).lower()
            assert "ghp" not in dumped, value
            assert "7c3e9a1f" not in dumped, value


async def test_expanded_url_parts_and_defaults_never_leave(short_tmp: Path) -> None:
    port = free_port()  # nothing listens: every connect fails, quoting the URL
    url = f"http://u:${{MW_PW}}@127.0.0.1:{port}/hooks/${{MW_PATH_TOKEN}}/mcp?key=${{MW_Q}}"
    servers = {
        "h": {"type": "streamable_http", "url": url, "timeoutSeconds": 5},
        "d": {
            "type": "streamable_http",
            "url": f"http://127.0.0.1:{port}/${{MW_NO:-dflt-seg-5c1}}",
        },
    }
    environ = {"PATH": "/usr/bin:/bin", "MW_PW": "pw-3f9a7c", "MW_PATH_TOKEN": "path-tok-8d2e6b"}
    environ["MW_Q"] = "query-tok-1a4f"
    secrets = ("pw-3f9a7c", "path-tok-8d2e6b", "query-tok-1a4f", "dflt-seg-5c1")
    async with start_daemon(short_tmp, servers, environ=environ) as (_d, sock), connect(sock) as c:
        turn = await begin_turn(c, ["h", "d"])
        assert {f["server"] for f in turn["failures"]} == {"h", "d"}
        seen: list[Any] = [turn]
        for name in ("h", "d"):
            seen.append(await c.call("servers.test", {"name": name}))
            seen.append(await c.call("servers.get", {"name": name}))
        seen += [await c.call("settings.get"), await c.call("servers.export")]
        assert "could not connect" in json.dumps(turn["failures"])
        for value in seen:
            for secret in secrets:
                assert secret not in json.dumps(value), (secret, value)


async def test_expanded_url_query_stays_out_of_the_debug_log() -> None:
    # At debug level the HTTP client logs every request's URL, query included.
    query = "query-dbg-7e4a2c9b"
    fixture = HttpFixture("normal")
    with daemon_dir() as root:
        d = DaemonProc(root)
        try:
            url = await anyio.to_thread.run_sync(fixture.start)
            d.write_settings({"h": {"type": "streamable_http", "url": url + "?key=${MW_DBG_Q}"}})
            await anyio.to_thread.run_sync(
                lambda: d.start(extra_env={"MW_DBG_Q": query}, log_level="debug")
            )
            async with d.connect() as c:
                turn = await begin_turn(c, ["h"])
                assert turn["failures"] == []
                tested = await c.call("servers.test", {"name": "h"})
            d.stop()
        finally:
            d.kill()
            fixture.stop()
        log = d.log_text()
    assert "?key=" in log  # the URL is in the debug log ...
    assert query not in log  # ... without what ${MW_DBG_Q} put into it
    assert tested["ok"] is True


async def test_http_error_text_is_redacted_before_it_is_cut(short_tmp: Path) -> None:
    # The 401 body quotes the header; the quote is cut at 200 characters, inside the token.
    token = "tok-" + "7c3e9a1f" * 40
    fixture = HttpFixture("normal", ECHO_AUTH)
    try:
        url = await anyio.to_thread.run_sync(fixture.start)
        entry = {"type": "streamable_http", "url": url, "headers": {"Authorization": token}}
        async with start_daemon(short_tmp, {"h": entry}) as (_d, sock), connect(sock) as c:
            tested = await c.call("servers.test", {"name": "h"})
            turn = await begin_turn(c, ["h"])
    finally:
        fixture.stop()
    assert "HTTP 401" in json.dumps(tested)
    for value in (tested, turn):
        assert token[:12] not in json.dumps(value), value


async def test_a_stray_stdout_line_is_redacted_before_it_is_cut(short_tmp: Path) -> None:
    # Such a line was quoted cut to 200 bytes, inside the token, before the log redacted it.
    servers = {"e": envdump(env={"TOKEN": PAT})}
    async with start_daemon(short_tmp, servers) as (_d, sock), connect(sock) as c:
        await c.subscribe(["server.log"])
        turn = await begin_turn(c, ["e"])
        await call_tool(c, turn, "e", "stray", {"line": "y" * 190 + PAT})
        said = await wait_event(c, "server.log", lambda d: "non-JSON-RPC" in d["line"])
        logs = await c.call("servers.logs", {"name": "e"})
    assert said["line"].endswith("y" * 190 + REDACTED)
    assert PAT[:4] not in json.dumps(logs)


async def test_hook_message_is_redacted_before_it_is_cut_and_audited(mw: Harness) -> None:
    token = "hook-tok-" + "5e8b2d4f" * 8
    script = mw.root / "deny.py"
    message = "x" * 990 + token  # the 1000-character cut falls inside the token
    script.write_text(
        f"#!{sys.executable} -I\nimport json\n"
        "out = {'hookEventName': 'PermissionRequest', "
        f"'decision': {{'behavior': 'deny', 'message': {message!r}}}}}\n"
        "print(json.dumps({'hookSpecificOutput': out}))\n"
    )
    script.chmod(0o755)
    doc = document({"e": envdump(env={"TOKEN": token})}, hooks=permission_hooks(".*", script))
    await mw.start(doc)
    conv = await mw.conversation(["e"], level="request_approval")
    turn = await mw.begin(conv)
    reply = await mw.tool(turn, bound(turn, "e", "args"))
    audit = await mw.call("audit.list", {"conversationId": conv})
    for value in (reply, audit):
        assert token[:8] not in json.dumps(value), value
    assert REDACTED in audit["entries"][0]["reason"]


async def test_a_rotated_secret_stays_redacted_until_its_process_is_gone(short_tmp: Path) -> None:
    old, new = "rotated-old-6a2c9e", "rotated-new-3f7b1d"
    servers = {"e": envdump("--exit-env", "TOKEN", env={"TOKEN": old})}
    async with start_daemon(short_tmp, servers) as (daemon, sock), connect(sock) as c:
        await c.subscribe(["server.log"])
        turn = await begin_turn(c, ["e"])
        session = session_for(daemon, turn["conversationId"], "e")
        await c.call("servers.update", {"name": "e", "patch": {"env": {"TOKEN": new}}})
        said = await wait_event(c, "server.log", lambda d: "envdump: exit" in d["line"])
        assert said["line"] == f"envdump: exit TOKEN={REDACTED}"
        logs = await c.call("servers.logs", {"name": "e"})
        assert old not in json.dumps(logs)
        with anyio.fail_after(BOUND):
            await session.closed.wait()
        # Once the process is gone the old value is ordinary text again; the new one is not.
        assert daemon.redactor.redact(f"{old} {new}") == f"{old} {REDACTED}"
