"""How meworkd learns a server's protocol era, through a real daemon (issue 23).

A server of the 2026-07-28 era only refuses ``initialize`` with HTTP 400 (as the conformance
suite's mock does): meworkd discovers it, stamps every request (``_meta``, ``Mcp-Method``,
``Mcp-Name``, ``Mcp-Param-*``), leaves out tools whose ``x-mcp-header`` is invalid, and Test
connection names the revision. A server of the handshake era refuses the probe and is spoken to
as before; its era is remembered, so later sessions pay for no probe, and probed again when it
no longer holds. Over stdio ``initialize`` goes first, and a refusal of it, whatever its
code, leads to discovery.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from mework_client.aio import connect

from tests.daemon_helpers import (
    HTTP_SERVER,
    MODERN_ONLY,
    PY,
    begin_turn,
    call_tool,
    free_port,
    http_fixture,
    serving,
    session_for,
    start_daemon,
    text_of,
)

pytestmark = pytest.mark.anyio


async def methods_seen(url: str) -> list[str]:
    """The JSON-RPC methods the fixture server at ``url`` (its ``/mcp``) was sent, in order."""
    async with httpx2.AsyncClient() as http:
        reply = await http.get(url.removesuffix("/mcp") + "/admin/methods")
    seen: list[str] = reply.json()
    return seen


@asynccontextmanager
async def fixture_on(port: int, mode: str) -> AsyncIterator[str]:
    # serving() passes --port 0 first; argparse keeps the last --port.
    async with serving(HTTP_SERVER, "--mode", mode, "--port", str(port)) as base:
        yield f"{base}/mcp"


async def test_a_2026_only_server_is_discovered_and_stamped(short_tmp: Path) -> None:
    async with (
        http_fixture("modern") as url,
        start_daemon(short_tmp, {"h": {"url": url}}) as (daemon, sock),
        connect(sock) as c,
    ):
        turn = await begin_turn(c, ["h"])
        assert turn["failures"] == []
        offered = {b["tool"] for b in turn["bindings"].values()}
        # bad_header's x-mcp-header is on an object: left out, the valid tools kept.
        assert offered == {"echo", "slow", "whoami", "progress", "forget_sessions", "regional"}
        assert session_for(daemon, turn["conversationId"], "h").protocol_version == "2026-07-28"

        assert text_of(await call_tool(c, turn, "h", "echo", {"text": "hi"})) == "hi"
        sent = json.loads(text_of(await call_tool(c, turn, "h", "regional", {"region": "eu 1"})))
        assert sent == {
            "mcp-method": "tools/call",
            "mcp-name": "regional",
            "mcp-param-region": "eu 1",
            "mcp-protocol-version": "2026-07-28",
        }

        tested = await c.call("servers.test", {"name": "h"})
        assert tested["ok"] is True
        assert tested["protocolVersion"] == "2026-07-28"
        assert tested["serverInfo"]["name"] == "kitchen-http"
        assert "bad_header" not in {t["name"] for t in tested["tools"]}

        # Inspection shows what the API promises, not the revision's resultType or _meta.
        prompt = await c.call("servers.getPrompt", {"name": "h", "prompt": "greet"})
        assert prompt == {
            "name": "h",
            "messages": [{"role": "user", "content": {"type": "text", "text": "hello"}}],
            "cut": [],
        }
        assert "initialize" not in await methods_seen(url)


async def test_a_handshake_era_server_is_probed_once(short_tmp: Path) -> None:
    async with (
        http_fixture("legacy") as url,
        start_daemon(short_tmp, {"h": {"url": url}}) as (daemon, sock),
        connect(sock) as c,
    ):
        first = await begin_turn(c, ["h"])
        second = await begin_turn(c, ["h"])  # another conversation: a session of its own
        for turn in (first, second):
            assert turn["failures"] == []
            session = session_for(daemon, turn["conversationId"], "h")
            assert session.protocol_version == "2025-11-25"
            assert text_of(await call_tool(c, turn, "h", "echo", {"text": "old"})) == "old"
        tested = await c.call("servers.test", {"name": "h"})
        assert tested["protocolVersion"] == "2025-11-25"
        seen = await methods_seen(url)
        assert seen.count("server/discover") == 1
        assert seen.count("initialize") == 3  # two conversations and the test


async def test_a_dual_era_server_speaks_2026(short_tmp: Path) -> None:
    async with (
        http_fixture() as url,
        start_daemon(short_tmp, {"h": {"url": url}}) as (daemon, sock),
        connect(sock) as c,
    ):
        turn = await begin_turn(c, ["h"])
        assert session_for(daemon, turn["conversationId"], "h").protocol_version == "2026-07-28"
        assert text_of(await call_tool(c, turn, "h", "whoami")) == "<none>"
        assert "initialize" not in await methods_seen(url)


async def test_a_remembered_handshake_era_server_that_moved_on_is_probed_again(
    short_tmp: Path,
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    async with (
        start_daemon(short_tmp, {"h": {"url": url}}) as (daemon, sock),
        connect(sock) as c,
    ):
        async with fixture_on(port, "legacy"):
            old = await begin_turn(c, ["h"])
            assert session_for(daemon, old["conversationId"], "h").protocol_version == "2025-11-25"
            await c.call("servers.closeSessions", {"name": "h"})
        async with fixture_on(port, "modern"):
            # initialize is refused now (HTTP 400): the server is discovered instead.
            new = await begin_turn(c, ["h"])
            assert new["failures"] == []
            session = session_for(daemon, new["conversationId"], "h")
            assert session.protocol_version == "2026-07-28"
            assert text_of(await call_tool(c, new, "h", "echo", {"text": "new"})) == "new"
            seen = await methods_seen(url)
            assert seen == ["initialize", "server/discover", "tools/list", "tools/call"]


async def test_a_stdio_server_refusing_initialize_with_any_code_is_discovered(
    short_tmp: Path,
) -> None:
    refusing = {"command": PY, "args": [MODERN_ONLY, "--refuse-with", "-32022"]}
    async with (
        start_daemon(short_tmp, {"m": refusing}) as (daemon, sock),
        connect(sock) as c,
    ):
        turn = await begin_turn(c, ["m"])
        assert turn["failures"] == []
        assert session_for(daemon, turn["conversationId"], "m").protocol_version == "2026-07-28"
        assert text_of(await call_tool(c, turn, "m", "echo", {"text": "hi"})) == "hi"


async def test_a_401_to_the_probe_is_met_with_initialize(short_tmp: Path) -> None:
    """A 401 says nothing of the era (a server may let initialize through without a login):
    initialize follows, and when it is refused too the failure asks for a login."""
    async with (
        http_fixture("unauthorized") as url,
        start_daemon(short_tmp, {"h": {"url": url}}) as (_daemon, sock),
        connect(sock) as c,
    ):
        turn = await begin_turn(c, ["h"])
        [failure] = turn["failures"]
        assert failure["kind"] == "auth_required"  # an HTTP server may log in with OAuth
        assert await methods_seen(url) == ["server/discover", "initialize"]
        # With the header the same server answers, in its newest era.
        await c.call(
            "servers.update", {"name": "h", "patch": {"headers": {"Authorization": "Bearer t"}}}
        )
        tested = await c.call("servers.test", {"name": "h"})
        assert tested["protocolVersion"] == "2026-07-28"


async def test_a_2026_server_that_wants_a_login_is_reported_as_wanting_one(
    short_tmp: Path,
) -> None:
    """The probe meets a 401; initialize passes the login check but is refused for its era (HTTP
    400, -32020): what the server needs is the login, not another protocol."""
    async with (
        http_fixture("modern_login") as url,
        start_daemon(short_tmp, {"h": {"url": url}}) as (_daemon, sock),
        connect(sock) as c,
    ):
        turn = await begin_turn(c, ["h"])
        [failure] = turn["failures"]
        assert failure["kind"] == "auth_required"
        assert await methods_seen(url) == ["server/discover", "initialize"]
        await c.call(
            "servers.update", {"name": "h", "patch": {"headers": {"Authorization": "Bearer t"}}}
        )
        tested = await c.call("servers.test", {"name": "h"})
        assert tested["protocolVersion"] == "2026-07-28"
