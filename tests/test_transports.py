"""Transports against a real in-process daemon: stdio (command, args, cwd, environment, ``${VAR}``),
Streamable HTTP (url, headers, long calls, forgotten sessions), both protocol eras, and the
server's stderr (log ring, ``server.log`` events, flood bound, secret redaction).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import psutil
import pytest
from mework_client.aio import connect

from meworkd import __version__
from meworkd.core import serverlogs as serverlog
from meworkd.mcp.http import HTTP_CONNECT_TIMEOUT, http_client_for
from meworkd.settings import parse_server
from tests.common import fake
from tests.daemon_helpers import (
    ENVDUMP,
    MODERN_ONLY,
    PY,
    RAW_BAD,
    begin_turn,
    call_tool,
    envdump,
    http_fixture,
    session_for,
    start_daemon,
    text_of,
    wait_event,
)

pytestmark = pytest.mark.anyio

CANARY = "canary-do-not-leak-7f3a9c"
SAFE = {"HOME", "USER", "LOGNAME", "PATH", "SHELL", "TERM", "LANG", "TZ"}


def daemon_environ(**extra: str) -> dict[str, str]:
    """A daemon environment with every kind of variable: safe ones, LC_*/XDG_*, secrets."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": "/home/mw-test",
        "USER": "mw-user",
        "LOGNAME": "mw-user",
        "SHELL": "/bin/sh",
        "TERM": "dumb",
        "LANG": "C.UTF-8",
        "LC_TIME": "C.UTF-8",
        "TZ": "UTC",
        "XDG_RUNTIME_DIR": "/run/user/4242",
        "MW_CANARY_SECRET": CANARY,
        "AWS_SECRET_ACCESS_KEY": CANARY + "-aws",
        "PYTHONPATH": "/nowhere",
        **extra,
    }


async def test_stdio_command_args_cwd_and_a_safe_environment(short_tmp: Path) -> None:
    workdir = short_tmp / "work dir"
    workdir.mkdir()
    entry = {
        "command": "${MW_PYTHON}",
        "args": [ENVDUMP, "--stderr-env", "${MW_ARG}"],
        "cwd": "${MW_CWD}",
        "env": {"FROM_ENTRY": "${MW_ENV_VALUE}", "PLAIN": "plain-value"},
    }
    environ = daemon_environ(
        MW_PYTHON=PY, MW_ARG="expanded-arg", MW_CWD=str(workdir), MW_ENV_VALUE="expanded-env"
    )
    async with start_daemon(short_tmp, {"e": entry}, environ=environ) as (daemon, sock):
        async with connect(sock) as c:
            turn = await begin_turn(c, ["e"])
            assert turn["failures"] == []
            proc = json.loads(text_of(await call_tool(c, turn, "e", "process")))
            assert proc["argv"] == ["--stderr-env", "expanded-arg"]
            assert Path(proc["cwd"]) == workdir
            # The pooled session's pid is the process that answered.
            session = session_for(daemon, turn["conversationId"], "e")
            assert session.pid == proc["pid"]

            reply = await call_tool(c, turn, "e", "env")
            assert CANARY not in json.dumps(reply)
            child_env = json.loads(text_of(reply))
            # Nothing but the safe part of the daemon's environment plus the entry's env, and the
            # session's marker (its helpers are told apart from other sessions' by it).
            unexpected = {
                k
                for k in child_env
                if k not in SAFE | {"FROM_ENTRY", "PLAIN", "MEWORKD_SESSION"}
                and not k.startswith(("LC_", "XDG_"))
            }
            assert unexpected == set(), child_env
            assert len(child_env["MEWORKD_SESSION"]) == 32, child_env
            for key in (*SAFE, "LC_TIME", "XDG_RUNTIME_DIR"):
                assert child_env[key] == environ[key], key
            # A value from ${VAR} is a secret: the RPC reply shows it redacted; a plain value
            # under an ordinary name is not (issue 14: secrets are exactly the secrets) ...
            assert child_env["FROM_ENTRY"] == "[redacted]"
            assert child_env["PLAIN"] == "plain-value"

            # ... so look at the child's real environment in-process, past the redactor.
            async with session.lease() as client:
                raw = await client.call_tool("env", {})
            real = json.loads(raw.content[0].text)
            assert real["FROM_ENTRY"] == "expanded-env"
            assert real["PLAIN"] == "plain-value"
            assert "MW_CANARY_SECRET" not in real
            assert "PYTHONPATH" not in real

        # ${VAR} is expanded at connect time only, never written back.
        on_disk = json.loads(daemon.paths.settings.read_text())["assets"]["mcpServers"]["e"]
        assert on_disk["command"] == "${MW_PYTHON}"
        assert on_disk["args"][-1] == "${MW_ARG}"
        assert on_disk["env"]["FROM_ENTRY"] == "${MW_ENV_VALUE}"


async def test_client_introduces_itself_as_meworkd(short_tmp: Path) -> None:
    async with start_daemon(short_tmp, {"e": envdump()}) as (_daemon, sock), connect(sock) as c:
        turn = await begin_turn(c, ["e"])
        init = json.loads(text_of(await call_tool(c, turn, "e", "initialize")))
    assert init["clientInfo"] == {"name": "meworkd", "version": __version__}
    assert init["protocolVersion"] == "2025-11-25"


async def test_both_protocol_eras(short_tmp: Path) -> None:
    """kitchen: handshake era; modern_only: 2026-07-28 only (initialize is method-not-found);
    raw_bad --mode legacy silently ignores unknown requests: no probe delay may hit it."""
    servers = {
        "k": fake(),
        "modern": {"command": PY, "args": [MODERN_ONLY]},
        "legacy": {"command": PY, "args": [RAW_BAD, "--mode", "legacy"]},
    }
    async with start_daemon(short_tmp, servers) as (daemon, sock), connect(sock) as c:
        conv = await c.call(
            "conversations.create", {"mcpServers": ["legacy"], "approvalLevel": "full_access"}
        )
        with anyio.fail_after(5):  # an auto-probing client would wait ~10 s here
            turn = await begin_turn(c, [], conversation=conv["id"])
        assert turn["failures"] == []
        reply = await call_tool(c, turn, "legacy", "t", {"x": "1"})
        assert text_of(reply) == '{"x": "1"}'
        legacy = session_for(daemon, conv["id"], "legacy")
        assert legacy.server_info.name == "raw_bad"

        turn = await begin_turn(c, ["k", "modern"])
        assert turn["failures"] == []
        k = session_for(daemon, turn["conversationId"], "k")
        modern = session_for(daemon, turn["conversationId"], "modern")
        assert k.protocol_version == "2025-11-25"
        assert modern.protocol_version == "2026-07-28"
        for server in ("k", "modern"):
            reply = await call_tool(c, turn, server, "echo", {"text": f"hi {server}"})
            assert text_of(reply) == f"hi {server}"


async def test_http_url_headers_and_timeout(short_tmp: Path) -> None:
    token = "tok-" + CANARY
    async with http_fixture() as url:
        entry = {
            "type": "streamable_http",
            "url": "${MW_URL}",
            "headers": {"Authorization": "Bearer ${MW_TOKEN}"},
        }
        environ = daemon_environ(MW_URL=url, MW_TOKEN=token)
        async with (
            start_daemon(short_tmp, {"h": entry}, environ=environ) as (daemon, sock),
            connect(sock) as c,
        ):
            turn = await begin_turn(c, ["h"])
            assert turn["failures"] == []
            # The header is a secret: the RPC reply carries it redacted ...
            reply = await call_tool(c, turn, "h", "whoami")
            assert token not in json.dumps(reply)
            assert text_of(reply) == "[redacted]"
            # ... the server received it expanded.
            session = session_for(daemon, turn["conversationId"], "h")
            async with session.lease() as client:
                raw = await client.call_tool("whoami", {})
            assert raw.content[0].text == f"Bearer {token}"

    # httpx2's default 5 s read timeout would cut long calls short: meworkd sets its own.
    config = parse_server("h", {"url": "http://127.0.0.1:1/mcp", "timeoutSeconds": 400})
    timeout = http_client_for(config).timeout
    assert timeout.connect == HTTP_CONNECT_TIMEOUT
    assert timeout.read is not None
    assert timeout.read >= 800
    default = http_client_for(parse_server("h", {"url": "http://127.0.0.1:1/mcp"})).timeout
    assert default.read is not None
    assert default.read >= 300


async def test_http_call_longer_than_five_seconds(short_tmp: Path) -> None:
    """The one slow test: a 6 s tool call over Streamable HTTP succeeds."""
    async with (
        http_fixture() as url,
        start_daemon(short_tmp, {"h": {"url": url}}) as (_d, sock),
        connect(sock) as c,
    ):
        turn = await begin_turn(c, ["h"])
        with anyio.fail_after(20):
            reply = await call_tool(c, turn, "h", "slow", {"seconds": 6})
    assert reply == {"content": [{"type": "text", "text": "slept"}], "isError": False}


async def test_http_session_the_server_forgot_is_reinitialized(short_tmp: Path) -> None:
    async with (
        http_fixture() as url,
        start_daemon(short_tmp, {"h": {"url": url}}) as (daemon, sock),
        connect(sock) as c,
    ):
        await c.subscribe(["server.status"])
        turn = await begin_turn(c, ["h"])
        first = session_for(daemon, turn["conversationId"], "h")
        assert text_of(await call_tool(c, turn, "h", "forget_sessions")) == "forgot 1"
        # The next call gets HTTP 404 for the old session id, re-initializes once, succeeds.
        reply = await call_tool(c, turn, "h", "echo", {"text": "after"})
        assert reply == {"content": [{"type": "text", "text": "after"}], "isError": False}
        second = session_for(daemon, turn["conversationId"], "h")
        assert second is not first
        assert second.alive
        await wait_event(
            c, "server.status", lambda d: d["server"] == "h" and d["status"] == "closed"
        )
        # And it keeps working on the new session.
        assert text_of(await call_tool(c, turn, "h", "echo", {"text": "again"})) == "again"
        assert session_for(daemon, turn["conversationId"], "h") is second


# --- stderr: the log ring ----------------------------------------------------------------------


async def test_a_server_that_stops_reading_ends_its_session(short_tmp: Path) -> None:
    """Writing to a server whose stdin is closed fails at once (EPIPE): the call gets a clear
    answer, the session ends although the server's stdout is still open, the next call gets a
    fresh server."""
    server = {"command": PY, "args": [RAW_BAD, "--mode", "stop-reading"]}
    async with start_daemon(short_tmp, {"r": server}) as (daemon, sock), connect(sock) as c:
        turn = await begin_turn(c, ["r"])
        first = await call_tool(c, turn, "r", "t", {"x": "1"})
        assert text_of(first) == '{"x": "1"}'
        stopped = session_for(daemon, turn["conversationId"], "r")
        with anyio.fail_after(10):
            second = await call_tool(c, turn, "r", "t", {"x": "2"})
        assert second["isError"] is True
        assert "closed the connection" in text_of(second)
        with anyio.fail_after(10):
            await stopped.dead.wait()
        third = await call_tool(c, turn, "r", "t", {"x": "3"})
        assert text_of(third) == '{"x": "3"}'
        assert session_for(daemon, turn["conversationId"], "r") is not stopped


async def test_stderr_goes_to_the_ring_and_to_events(short_tmp: Path) -> None:
    async with (
        start_daemon(short_tmp, {"k": fake("--stderr-lines", "5")}) as (_d, sock),
        connect(sock) as c,
    ):
        await c.subscribe(["server.log"])
        turn = await begin_turn(c, ["k"])
        for i in range(5):
            event = await wait_event(c, "server.log")
            assert event == {
                "server": "k",
                "conversation": turn["conversationId"],
                "line": f"kitchen: stderr line {i}",
            }
        logs = await c.call("servers.logs", {"name": "k", "tail": 2})
        assert [entry["line"] for entry in logs["lines"]] == [
            "kitchen: stderr line 3",
            "kitchen: stderr line 4",
        ]
        assert all(entry["time"].endswith("+00:00") for entry in logs["lines"])
        everything = await c.call("servers.logs", {"name": "k"})
        assert len(everything["lines"]) == 5


async def test_stderr_flood_cannot_grow_the_daemon(short_tmp: Path) -> None:
    flood = 20_000_000
    async with start_daemon(short_tmp, {"k": fake()}) as (daemon, sock), connect(sock) as c:
        await c.subscribe(["server.status"])  # not server.log: the flood is not for us
        turn = await begin_turn(c, ["k"])
        before = psutil.Process().memory_info().rss
        with anyio.fail_after(30):
            reply = await call_tool(c, turn, "k", "flood_stderr", {"bytes": flood})
        assert text_of(reply) == "flooded"
        # The server is still usable, and its stderr was read to the end of the flood.
        assert text_of(await call_tool(c, turn, "k", "echo", {"text": "x"})) == "x"
        grown = psutil.Process().memory_info().rss - before
        ring = daemon.logs.ring("k")
        assert ring.size <= serverlog.MAX_BYTES
        assert len(ring.tail()) <= serverlog.MAX_LINES
        assert ring.dropped > 0
        assert grown < flood / 2, f"RSS grew by {grown} bytes"
        logs = await c.call("servers.logs", {"name": "k", "tail": 1})
        assert logs["lines"][0]["line"].startswith("kitchen flood ")
        assert logs["dropped"] == ring.dropped


async def test_secrets_are_redacted_in_logs_events_and_test_output(short_tmp: Path) -> None:
    secret = "canary-XYZ-" + CANARY
    servers = {"e": envdump("--stderr-env", "TOKEN", env={"TOKEN": secret}), "k": fake()}
    async with start_daemon(short_tmp, servers) as (_d, sock), connect(sock) as c:
        await c.subscribe(["server.log", "turn.progress"])
        turn = await begin_turn(c, ["e", "k"])
        event = await wait_event(c, "server.log", lambda d: "TOKEN" in d["line"])
        assert event["line"] == "envdump: TOKEN=[redacted]"
        # A server's own text in any event (here a progress message) is redacted too.
        await call_tool(c, turn, "k", "progress", {"steps": 1, "message": f"using {secret}"})
        progress = await wait_event(c, "turn.progress", lambda d: d["server"] == "k")
        assert progress["message"] == "using [redacted]"
        logs = await c.call("servers.logs", {"name": "e"})
        assert "envdump: TOKEN=[redacted]" in [entry["line"] for entry in logs["lines"]]
        tested = await c.call("servers.test", {"name": "e"})
        assert tested["ok"] is True
        assert "envdump: TOKEN=[redacted]" in tested["stderrTail"]
        reply = await call_tool(c, turn, "e", "env")
        shown = await c.call("servers.get", {"name": "e"})
        for value in (logs, tested, reply, shown):
            assert secret not in json.dumps(value)


async def test_server_info_quoting_a_secret_is_recorded_redacted(short_tmp: Path) -> None:
    """The serverInfo a test records (shown by servers.list and servers.get) is server text."""
    secret = "canary-INFO-" + CANARY
    # (The secret is in args here only to make the server quote it; args are the user's own.)
    servers = {"k": fake("--version", secret, env={"TOKEN": secret})}
    async with start_daemon(short_tmp, servers) as (_d, sock), connect(sock) as c:
        tested = await c.call("servers.test", {"name": "k"})
        assert tested["serverInfo"]["version"] == "[redacted]"
        (listed,) = (await c.call("servers.list"))["servers"]
        shown = await c.call("servers.get", {"name": "k"})
        for info in (listed["serverInfo"], shown["serverInfo"], shown["server"]["serverInfo"]):
            assert info["version"] == "[redacted]"
