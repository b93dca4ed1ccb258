"""Scale (issue 19), against a real in-process daemon and real stdio servers.

The live-session budget (``mcp.max_live_sessions``: least recently used idle sessions close, a
session with a call in flight never does, a closed one reconnects at its next use), why a session
closed (``server.status`` ``reason``), ``"sessionScope": "shared"`` (one session for every
conversation; calls and cancellation stay per conversation; a crash reaches only its users), and
``conversations.prepare`` (connect in the background; failures as events).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest
from mework_client import RpcError
from mework_client.aio import AsyncClient, connect

from meworkd.base.errors import InvalidSettings
from meworkd.settings.parse import parse_mcp_options, parse_server
from tests.common import fake
from tests.daemon_helpers import (
    begin_turn,
    call_tool,
    session_for,
    start_daemon,
    text_of,
    wait_event,
)

pytestmark = pytest.mark.anyio


def status(server: str, state: str, conversation: str | None, **extra: str) -> Any:
    def pred(data: dict[str, Any]) -> bool:
        return (
            data["server"] == server
            and data["status"] == state
            and data["conversation"] == conversation
            and all(data.get(k) == v for k, v in extra.items())
        )

    return pred


async def start_slow(
    tg: anyio.abc.TaskGroup, c: AsyncClient, turn: dict[str, Any], call_id: str, out: dict[str, Any]
) -> anyio.Event:
    """Start a long call; wait until the server runs it. The event is set when it returns."""
    done = anyio.Event()

    async def run() -> None:
        out[call_id] = await call_tool(c, turn, "k", "slow", {"seconds": 60}, call_id)
        done.set()

    tg.start_soon(run)
    await wait_event(c, "turn.progress", lambda d: d["callId"] == call_id)
    return done


async def test_budget_closes_the_least_recently_used_idle_session(short_tmp: Path) -> None:
    mcp = {"max_live_sessions": 2}
    async with (
        start_daemon(short_tmp, {"k": fake()}, mcp=mcp) as (daemon, sock),
        connect(sock) as c,
    ):
        await c.subscribe(["server.status", "turn.progress"])
        turn_a = await begin_turn(c, ["k"])
        turn_b = await begin_turn(c, ["k"])
        a, b = turn_a["conversationId"], turn_b["conversationId"]
        session_a = session_for(daemon, a, "k")
        calls: dict[str, Any] = {}
        async with anyio.create_task_group() as tg:
            # A is the least recently used, but its call in flight keeps it: B goes.
            await start_slow(tg, c, turn_a, "long", calls)
            turn_c = await begin_turn(c, ["k"])
            await wait_event(c, "server.status", status("k", "closed", b, reason="budget"))
            assert session_for(daemon, b, "k") is None
            assert session_for(daemon, a, "k") is session_a
            # B reconnects at its next use; C is now the idle one beyond the budget.
            assert text_of(await call_tool(c, turn_b, "k", "echo", {"text": "back"})) == "back"
            closed = status("k", "closed", turn_c["conversationId"], reason="budget")
            await wait_event(c, "server.status", closed)
            assert len(daemon.pool.sessions) == 2
            await c.call("turns.cancel", {"turnId": turn_a["turnId"]})
        assert calls["long"]["isError"]
        assert session_for(daemon, a, "k") is session_a


async def test_close_reasons_reload_and_conversation(short_tmp: Path) -> None:
    async with start_daemon(short_tmp, {"k": fake()}) as (_daemon, sock), connect(sock) as c:
        await c.subscribe(["server.status"])
        conv = (await begin_turn(c, ["k"]))["conversationId"]
        await c.call(
            "servers.update", {"name": "k", "patch": {"args": [*fake()["args"], "--name", "k2"]}}
        )
        await wait_event(c, "server.status", status("k", "closed", conv, reason="reload"))
        await begin_turn(c, [], conversation=conv)
        await c.call("conversations.delete", {"id": conv})
        await wait_event(c, "server.status", status("k", "closed", conv, reason="conversation"))


async def test_close_reason_idle(short_tmp: Path) -> None:
    mcp = {"session_idle_minutes": 0.002}  # 0.12 s
    async with (
        start_daemon(short_tmp, {"k": fake()}, mcp=mcp) as (_daemon, sock),
        connect(sock) as c,
    ):
        await c.subscribe(["server.status"])
        conv = (await begin_turn(c, ["k"]))["conversationId"]
        await wait_event(c, "server.status", status("k", "closed", conv, reason="idle"))


async def test_shared_scope_one_session_calls_stay_per_conversation(short_tmp: Path) -> None:
    servers = {"k": fake(sessionScope="shared")}
    async with start_daemon(short_tmp, servers) as (daemon, sock), connect(sock) as c:
        await c.subscribe(["server.status", "turn.progress"])
        turn_a = await begin_turn(c, ["k"])
        turn_b = await begin_turn(c, ["k"])
        [shared] = daemon.pool.sessions
        assert shared.conversation is None
        calls: dict[str, Any] = {}
        async with anyio.create_task_group() as tg:
            a_done = await start_slow(tg, c, turn_a, "a", calls)
            await start_slow(tg, c, turn_b, "b", calls)
            assert shared.in_flight == 2
            # Cancelling A's turn cancels A's call only, on the one session.
            assert await c.call("turns.cancel", {"turnId": turn_a["turnId"]}) == {"cancelled": 1}
            with anyio.fail_after(10):
                await a_done.wait()
            assert shared.in_flight == 1
            # Deleting A leaves the shared session to B.
            await c.call("conversations.delete", {"id": turn_a["conversationId"]})
            assert daemon.pool.sessions == [shared]
            # A crash reaches the call in flight (B's) and is reported once, for no conversation.
            os.kill(shared.pid, signal.SIGKILL)
            await wait_event(c, "server.status", status("k", "closed", None, reason="crash"))
        assert calls["a"]["isError"]
        assert "cancelled" in text_of(calls["a"])
        assert calls["b"]["isError"]
        assert text_of(await call_tool(c, turn_b, "k", "echo", {"text": "again"})) == "again"
        assert daemon.pool.sessions[0] is not shared


async def test_prepare_connects_in_the_background(short_tmp: Path) -> None:
    servers = {"k": fake(), "gone": {"command": str(short_tmp / "no-such-server")}}
    async with start_daemon(short_tmp, servers) as (daemon, sock), connect(sock) as c:
        await c.subscribe(["server.status"])
        conv = await c.call(
            "conversations.create", {"mcpServers": ["k", "gone"], "approvalLevel": "full_access"}
        )
        reply = await c.call("conversations.prepare", {"conversationId": conv["id"]})
        assert reply == {"conversationId": conv["id"], "connecting": ["k", "gone"], "failures": []}
        seen: dict[str, dict[str, Any]] = {}
        while len(seen) < 2:  # in either order
            event = await wait_event(c, "server.status")
            seen[event["server"]] = event
        assert seen["k"]["status"] == "connected"
        assert seen["gone"]["status"] == "failed"
        assert "command not found" in seen["gone"]["error"]
        session = session_for(daemon, conv["id"], "k")
        # Already live: nothing more to connect, and the turn uses the prepared session.
        again = await c.call("conversations.prepare", {"conversationId": conv["id"]})
        assert again["connecting"] == ["gone"]
        await begin_turn(c, [], conversation=conv["id"])
        assert session_for(daemon, conv["id"], "k") is session


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"conversationId": "nope"}, "nope"),
        ({}, "conversationId"),
        ({"conversationId": "x", "extra": 1}, "extra"),
        ({"conversationId": 3}, "conversationId"),
    ],
)
async def test_prepare_refuses_bad_input(short_tmp: Path, params: Any, fragment: str) -> None:
    async with start_daemon(short_tmp, {}) as (_daemon, sock), connect(sock) as c:
        with pytest.raises(RpcError) as caught:
            await c.call("conversations.prepare", params)
        assert fragment in str(caught.value)


@pytest.mark.parametrize(
    ("parse", "raw", "message"),
    [
        (
            parse_mcp_options,
            {"max_live_sessions": 0},
            "mcp.max_live_sessions: expected a number > 0",
        ),
        (
            parse_mcp_options,
            {"max_live_sessions": "x"},
            "mcp.max_live_sessions: expected int, got str",
        ),
        (
            lambda raw: parse_server("s", raw),
            {"command": "x", "sessionScope": "global"},
            "s.sessionScope: invalid enum value 'global'",
        ),
    ],
)
def test_scale_settings_are_validated(parse: Any, raw: Any, message: str) -> None:
    with pytest.raises(InvalidSettings) as caught:
        parse(raw)
    assert message in caught.value.message
