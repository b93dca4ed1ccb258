"""call.started and call.finished (issue 18, point 7): what a frontend's tool cards follow.

One daemon for the module's one test: each kind of outcome is a call of its own, told apart by
its callId, and every event is checked against the audit entry it announces.
"""

import json
from typing import Any

import anyio
import pytest
from mework_client.aio import AsyncClient

from tests.common import fake
from tests.turn_helpers import (
    EVENT_TIMEOUT,
    Harness,
    approval_for,
    bound,
    counting,
    document,
    mw_fixture,  # noqa: F401  (the mw fixture)
    start_call,
    wait_event,
)

pytestmark = pytest.mark.anyio

SECRET = "s3cr3t-argument-value"
STARTED_KEYS = {
    "conversationId",
    "turnId",
    "callId",
    "server",
    "tool",
    "name",
    "argumentsDigest",
    "origin",
    "time",
}


async def _calls_until(client: AsyncClient, last_call: str) -> list[tuple[str, dict[str, Any]]]:
    """Every call event up to the ``call.finished`` of ``last_call`` (events arrive in order)."""
    seen: list[tuple[str, dict[str, Any]]] = []
    with anyio.fail_after(EVENT_TIMEOUT):
        while True:
            topic, data = await client.event_stream.receive()
            seen.append((topic, data))
            if topic == "call.finished" and data["callId"] == last_call:
                return seen


async def _asked_and_answered(
    mw: Harness, asks: AsyncClient, turn: dict[str, Any], name: str, call_id: str, answer: str
) -> Any:
    params = {
        "turnId": turn["turnId"],
        "name": name,
        "arguments": {"text": SECRET},
        "callId": call_id,
    }
    async with anyio.create_task_group() as tg:
        call = start_call(tg, mw.c, "turns.callTool", params)
        request = await approval_for(asks, turn)
        answered = {"approvalId": request["approvalId"], "decision": answer}
        await mw.call("approvals.respond", answered)
        return await call.wait()


async def _cancelled_while_asking(
    mw: Harness, asks: AsyncClient, turn: dict[str, Any], name: str
) -> Any:
    params = {"turnId": turn["turnId"], "name": name, "arguments": {"text": "never"}}
    async with anyio.create_task_group() as tg:
        call = start_call(tg, mw.c, "turns.callTool", {**params, "callId": "cancelled"})
        await approval_for(asks, turn)
        await mw.call("turns.cancel", {"turnId": turn["turnId"], "callId": "cancelled"})
        return await call.wait()


async def test_every_started_call_finishes_once_as_its_audit_entry(mw: Harness) -> None:
    await mw.start(document({"k": counting(), "j": counting()}))
    calls = await mw.connect(["call.started", "call.finished"])
    asks = await mw.connect(["approval.requested"])
    only_j = await mw.connect()
    await only_j.call(
        "events.subscribe", {"topics": ["call.started", "call.finished"], "servers": ["j"]}
    )
    asking = await mw.begin(await mw.conversation(["k"], level="request_approval"))
    conversation = await mw.conversation(["k", "j"])
    full = await mw.begin(conversation)
    subagent = await mw.begin(conversation, parentTurnId=full["turnId"])
    k_asking, j_full = bound(asking, "k"), bound(full, "j")

    await _asked_and_answered(mw, asks, asking, k_asking["echo"], "allowed", "allow")
    await _asked_and_answered(mw, asks, asking, k_asking["echo"], "denied", "deny")
    cancelled = await _cancelled_while_asking(mw, asks, asking, k_asking["echo"])
    assert cancelled["isError"] is True
    unknown = await mw.tool(full, "mcp__made_up__tool", {"text": SECRET}, callId="unknown")
    assert unknown["isError"] is True
    await mw.tool(subagent, j_full["echo"], {"text": "from the subagent"}, callId="sub-j")
    await mw.tool(full, j_full["echo"], {"text": "last"}, callId="last")

    seen = await _calls_until(calls, "last")
    assert SECRET not in json.dumps(seen)  # the digest only, never the arguments or reply
    order = [(topic.split(".")[1], data["callId"]) for topic, data in seen]
    names = ["allowed", "denied", "cancelled", "unknown", "sub-j", "last"]
    # Each call: started (before any approval was asked), then exactly one finished.
    assert order == [(step, n) for n in names for step in ("started", "finished")]
    audit = {e["callId"]: e for e in (await mw.call("audit.list", {"limit": 50}))["entries"]}
    for topic, data in seen:
        entry = audit[data["callId"]]
        if topic == "call.finished":
            assert data == entry  # exactly the audit entry, id and time included
        else:
            assert set(data) == STARTED_KEYS
            assert data == {k: entry[k] for k in STARTED_KEYS}
    outcomes = {n: (audit[n]["decision"], audit[n]["decidedBy"], audit[n]["server"]) for n in names}
    assert outcomes == {
        "allowed": ("allow", "user", "k"),
        "denied": ("deny", "user", "k"),
        "cancelled": ("deny", "cancelled", "k"),  # cancelled while the user was asked
        "unknown": ("deny", "policy", ""),
        "sub-j": ("allow", "level", "j"),
        "last": ("allow", "level", "j"),
    }
    assert audit["cancelled"]["reason"] == "the call was cancelled"
    assert audit["unknown"]["reason"] == "unknown tool"
    assert audit["sub-j"]["turnId"] == subagent["turnId"]

    # Filtered by server: only j's calls, the subagent's included.
    j_seen = await _calls_until(only_j, "last")
    assert [(t, d["callId"]) for t, d in j_seen] == [
        ("call.started", "sub-j"),
        ("call.finished", "sub-j"),
        ("call.started", "last"),
        ("call.finished", "last"),
    ]


async def test_a_call_cut_off_by_shutdown_still_gets_its_outcome(mw: Harness) -> None:
    await mw.start(document({"k": fake()}))
    events = await mw.connect(["turn.progress", "call.finished"])
    turn = await mw.begin(await mw.conversation(["k"]))
    params = {
        "turnId": turn["turnId"],
        "name": bound(turn, "k")["slow"],
        "arguments": {"seconds": 60},
        "callId": "running",
    }
    async with anyio.create_task_group() as tg:
        start_call(tg, mw.c, "turns.callTool", params)
        # The kitchen's slow tool reports progress 0 once its handler runs.
        await wait_event(events, "turn.progress", lambda d: d["callId"] == "running")
        await mw.restart()  # the call is cut off once the daemon's grace for requests ends
    (entry,) = (await mw.call("audit.list"))["entries"]
    expected = ("allow", "level", "meworkd stopped during the call", True)
    assert (entry["decision"], entry["decidedBy"], entry["reason"], entry["isError"]) == expected
