"""A call's one cancel scope (``meworkd.mcp.callclock``): its timeout and its cancel stay apart.

The turn's cancel and the server's timeout share one scope per call (bench B1). A timeout must
still read and be audited as a failed allowed call, a cancel as a cancelled one, and neither may
leave anything armed for the turn's next call. One daemon for the module's one test.
"""

import json
from typing import Any

import anyio
import pytest
from mework_client.aio import AsyncClient

from tests.common import fake
from tests.turn_helpers import (
    Harness,
    bound,
    document,
    mw_fixture,  # noqa: F401  (the mw fixture)
    start_call,
    text_of,
    wait_event,
)

pytestmark = pytest.mark.anyio


async def _finished(events: AsyncClient, call_id: str) -> dict[str, Any]:
    return await wait_event(events, "call.finished", lambda d: d["callId"] == call_id)


async def _audited(mw: Harness, call_id: str) -> dict[str, Any]:
    entries = (await mw.call("audit.list", {"limit": 50}))["entries"]
    (entry,) = [e for e in entries if e["callId"] == call_id]
    return entry  # type: ignore[no-any-return]


async def test_timeout_and_cancel_of_one_scope(mw: Harness) -> None:
    await mw.start(document({"k": fake()}))
    events = await mw.connect(["call.finished", "turn.progress"])
    conv = await mw.conversation(["k"])
    turn = await mw.begin(conv)
    n = bound(turn, "k")
    await mw.call("servers.update", {"name": "k", "patch": {"timeoutSeconds": 1}})

    # The deadline: an allowed call that failed, worded as before, its reply's size audited.
    with anyio.fail_after(4):  # well before the server's 5 s sleep would end
        result = await mw.tool(turn, n["slow"], {"seconds": 5}, callId="late")
    assert result == {
        "content": [
            {
                "type": "text",
                "text": "The call to k timed out after 1 s without a reply and was cancelled.",
            }
        ],
        "isError": True,
    }
    finished = await _finished(events, "late")
    assert finished == await _audited(mw, "late")
    assert finished["decision"] == "allow"
    assert finished["isError"] is True
    assert finished["replyBytes"] == len(json.dumps(result, separators=(",", ":")).encode())

    # A cancel while the deadline is armed: cancelled, not timed out; who allowed it is kept.
    params = {"turnId": turn["turnId"], "name": n["slow"], "arguments": {"seconds": 60}}
    async with anyio.create_task_group() as tg:
        call = start_call(tg, mw.c, "turns.callTool", {**params, "callId": "stopped"})
        await wait_event(events, "turn.progress", lambda d: d["callId"] == "stopped")
        cancel = {"turnId": turn["turnId"], "callId": "stopped"}
        assert await mw.call("turns.cancel", cancel) == {"cancelled": 1}
        result = await call.wait()
    assert text_of(result) == "The call was cancelled."
    finished = await _finished(events, "stopped")
    assert finished == await _audited(mw, "stopped")
    assert (finished["decision"], finished["reason"]) == ("allow", "cancelled")
    assert finished["decidedBy"] == (await _audited(mw, "late"))["decidedBy"]

    # Nothing of either is left armed: the next calls of the turn run and answer.
    for call_id in ("after-1", "after-2"):
        reply = await mw.tool(turn, n["echo"], {"text": call_id}, callId=call_id)
        assert reply == {"content": [{"type": "text", "text": call_id}], "isError": False}
