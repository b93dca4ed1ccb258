"""Calls that move to the background (issue 30.2): past ``mcp.background_after_seconds`` the
model gets a reply at once, the turn can end, and the outcome is audited, announced and kept
for ``calls.result``; ``calls.cancel`` and a deleted conversation end such a call.

The server's ``gated`` tool answers only when the test writes to its FIFO, so whether a call is
still running when its time comes is decided by the test, not by the machine's speed.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mework_client import RpcError
from mework_client.aio import AsyncClient, connect

from meworkd.base.errors import InvalidSettings
from meworkd.settings.parse import parse_mcp_options
from tests.common import fake
from tests.daemon_helpers import Running, begin_turn, bound, start_daemon, wait_event

pytestmark = pytest.mark.anyio

MEWORKCTL = str(Path(sys.executable).with_name("meworkctl"))
AFTER = 0.2  # seconds; the gated call cannot end before the test opens its gate


@pytest.fixture
async def gated(short_tmp: Path) -> AsyncIterator[tuple[Running, Path]]:
    gate = short_tmp / "gate"
    os.mkfifo(gate)
    servers = {"bg": fake("--gate", str(gate)), "quick": fake()}
    mcp = {"background_after_seconds": AFTER}
    async with start_daemon(short_tmp, servers, mcp=mcp) as running:
        yield running, gate


async def open_gate(gate: Path, text: str) -> None:
    def write() -> None:
        with open(gate, "w", encoding="utf-8") as fifo:
            fifo.write(text)

    await anyio.to_thread.run_sync(write)


def text_of(result: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in result["content"])


async def subscribed(client: AsyncClient) -> AsyncClient:
    topics = ["call.backgrounded", "call.finished"]
    await client.call("events.subscribe", {"topics": topics})
    return client


async def test_a_call_past_its_time_moves_and_its_result_is_there_later(
    gated: tuple[Running, Path],
) -> None:
    running, gate = gated
    async with connect(running.socket) as client, connect(running.socket) as events:
        await subscribed(events)
        turn = await begin_turn(client, ["bg"])
        params = {"turnId": turn["turnId"], "name": bound(turn, "bg", "gated"), "callId": "g1"}
        reply = await client.call("turns.callTool", {**params, "arguments": {}})
        assert reply["isError"] is False
        assert "goes on in the background (call g1)" in text_of(reply)
        said = await meworkctl(running, "turn", "result", "g1")
        assert said == "g1 is still running in the background\n"
        moved = await wait_event(events, "call.backgrounded", lambda d: d["callId"] == "g1")
        assert (moved["server"], moved["tool"], moved["afterSeconds"]) == ("bg", "gated", AFTER)
        assert await client.call("calls.result", {"callId": "g1"}) == {
            "callId": "g1",
            "conversationId": turn["conversationId"],
            "turnId": turn["turnId"],
            "status": "running",
        }
        # The turn ends; the call does not.
        await client.call("turns.end", {"turnId": turn["turnId"]})
        await open_gate(gate, "the long answer")
        finished = await wait_event(events, "call.finished", lambda d: d["callId"] == "g1")
        assert (finished["decision"], finished["isError"]) == ("allow", False)
        kept = await client.call("calls.result", {"callId": "g1"})
        assert kept["status"] == "finished"
        assert text_of(kept["result"]) == "the long answer"
        audit = await client.call("audit.list", {"conversationId": turn["conversationId"]})
        assert [(e["callId"], e["decision"]) for e in audit["entries"]] == [("g1", "allow")]
    # And as a person sees it.
    assert await meworkctl(running, "turn", "result", "g1") == "the long answer\n"
    said = await meworkctl(running, "turn", "stop", "g1")
    assert said == "g1 had finished already: nothing to cancel\n"


async def meworkctl(running: Running, *args: str) -> str:
    done = await anyio.run_process([MEWORKCTL, "--socket", str(running.socket), *args])
    return done.stdout.decode()


async def test_a_quick_call_stays_in_the_foreground(gated: tuple[Running, Path]) -> None:
    running, _gate = gated
    async with connect(running.socket) as client:
        turn = await begin_turn(client, ["quick"])
        name = bound(turn, "quick", "echo")
        params = {"turnId": turn["turnId"], "name": name, "callId": "q1"}
        reply = await client.call("turns.callTool", {**params, "arguments": {"text": "hi"}})
        assert text_of(reply) == "hi"
        with pytest.raises(RpcError) as refused:
            await client.call("calls.result", {"callId": "q1"})
        assert refused.value.kind == "call_not_found"


async def test_calls_cancel_ends_a_moved_call(gated: tuple[Running, Path]) -> None:
    running, _gate = gated
    async with connect(running.socket) as client, connect(running.socket) as events:
        await subscribed(events)
        turn = await begin_turn(client, ["bg"])
        params = {"turnId": turn["turnId"], "name": bound(turn, "bg", "gated"), "callId": "c1"}
        await client.call("turns.callTool", {**params, "arguments": {}})
        await wait_event(events, "call.backgrounded", lambda d: d["callId"] == "c1")
        assert await client.call("calls.cancel", {"callId": "c1"}) == {"cancelled": True}
        await wait_event(events, "call.finished", lambda d: d["callId"] == "c1")
        kept = await client.call("calls.result", {"callId": "c1"})
        assert text_of(kept["result"]) == "The call was cancelled."
        # Finished: nothing left to cancel.
        assert await client.call("calls.cancel", {"callId": "c1"}) == {"cancelled": False}


async def test_a_deleted_conversation_takes_its_moved_calls(gated: tuple[Running, Path]) -> None:
    running, _gate = gated
    async with connect(running.socket) as client, connect(running.socket) as events:
        await subscribed(events)
        turn = await begin_turn(client, ["bg"])
        params = {"turnId": turn["turnId"], "name": bound(turn, "bg", "gated"), "callId": "d1"}
        await client.call("turns.callTool", {**params, "arguments": {}})
        await wait_event(events, "call.backgrounded", lambda d: d["callId"] == "d1")
        await client.call("conversations.delete", {"id": turn["conversationId"]})
        await wait_event(events, "call.finished", lambda d: d["callId"] == "d1")
        with pytest.raises(RpcError) as gone:  # its results went with it
            await client.call("calls.result", {"callId": "d1"})
        assert gone.value.kind == "call_not_found"


async def test_a_kept_result_survives_a_restart(short_tmp: Path) -> None:
    gate = short_tmp / "gate"
    os.mkfifo(gate)
    servers = {"bg": fake("--gate", str(gate))}
    mcp = {"background_after_seconds": AFTER}
    async with (
        start_daemon(short_tmp, servers, mcp=mcp) as running,
        connect(running.socket) as client,
        connect(running.socket) as events,
    ):
        await subscribed(events)
        turn = await begin_turn(client, ["bg"])
        name = bound(turn, "bg", "gated")
        params = {"turnId": turn["turnId"], "name": name, "callId": "r1", "arguments": {}}
        await client.call("turns.callTool", params)
        await open_gate(gate, json.dumps({"answer": 42}))
        await wait_event(events, "call.finished", lambda d: d["callId"] == "r1")
        # A second one is still running when meworkd stops: cut off, with its one outcome.
        await client.call("turns.callTool", {**params, "callId": "r2"})
        await wait_event(events, "call.backgrounded", lambda d: d["callId"] == "r2")
    async with start_daemon(short_tmp) as running, connect(running.socket) as client:
        kept = await client.call("calls.result", {"callId": "r1"})
        assert json.loads(text_of(kept["result"])) == {"answer": 42}
        audit = await client.call("audit.list", {"conversationId": turn["conversationId"]})
        outcomes = {e["callId"]: (e["decision"], e["reason"]) for e in audit["entries"]}
        assert outcomes["r2"] == ("allow", "meworkd stopped during the call")
        with pytest.raises(RpcError) as cut_off:
            await client.call("calls.result", {"callId": "r2"})
        assert cut_off.value.kind == "call_not_found"


@pytest.mark.parametrize("value", [0, -1, "soon", 10**9])
def test_a_bad_background_after_is_refused_with_its_reason(value: object) -> None:
    with pytest.raises(InvalidSettings) as refused:
        parse_mcp_options({"background_after_seconds": value})
    assert "mcp.background_after_seconds" in str(refused.value)


def test_background_after_is_off_by_default_and_null_is_off() -> None:
    assert parse_mcp_options({}).background_after_seconds is None
    assert parse_mcp_options({"background_after_seconds": None}).background_after_seconds is None
    assert parse_mcp_options({"background_after_seconds": 120}).background_after_seconds == 120
