"""approvals.respond ``scope: "conversation"`` (issue 17, frontend note 2.8): the person allows a
tool for the rest of the conversation; never for a tool that asks every time."""

import anyio
import pytest

from tests.turn_helpers import (
    Harness,
    approval_for,
    bound,
    counting,
    document,
    mw_fixture,  # noqa: F401  (the mw fixture)
    rpc_error,
    start_call,
    text_of,
)

pytestmark = pytest.mark.anyio


async def test_conversation_grant(mw: Harness) -> None:
    await mw.start(document({"k": counting(), "m": counting(disabledAutoApproveTools=["echo"])}))
    events = await mw.connect(["approval.requested"])
    conv = await mw.conversation(["k", "m"], level="request_approval")
    turn = await mw.begin(conv)
    echo, mandatory = bound(turn, "k")["echo"], bound(turn, "m")["echo"]
    for name, scope, ok in ((mandatory, "conversation", False), (echo, "conversation", True)):
        async with anyio.create_task_group() as tg:
            call = start_call(
                tg,
                mw.c,
                "turns.callTool",
                {"turnId": turn["turnId"], "name": name, "arguments": {"text": "hi"}},
            )
            request = await approval_for(events, turn, name)
            answer = {"approvalId": request["approvalId"], "decision": "allow", "scope": scope}
            if not ok:
                refused = await rpc_error(mw.call("approvals.respond", answer))
                assert "cannot be allowed for the whole conversation" in refused.message
                answer["scope"] = "once"
            await mw.call("approvals.respond", answer)
            assert text_of(await call.wait()) == "hi"
    # Granted: the next call runs without asking (awaited directly: asking would hang the bound).
    assert text_of(await mw.tool(turn, echo, {"text": "again"})) == "again"
    last = (await mw.call("audit.list", {"conversationId": conv}))["entries"][-1]
    assert (last["decision"], last["decidedBy"]) == ("allow", "user")
    # Another conversation is not granted anything.
    other = await mw.conversation(["k"], level="request_approval")
    other_turn = await mw.begin(other)
    async with anyio.create_task_group() as tg:
        call = start_call(
            tg,
            mw.c,
            "turns.callTool",
            {"turnId": other_turn["turnId"], "name": echo, "arguments": {"text": "x"}},
        )
        request = await approval_for(events, other_turn, echo)
        await mw.call(
            "approvals.respond", {"approvalId": request["approvalId"], "decision": "deny"}
        )
        assert (await call.wait())["isError"] is True
    bad = await rpc_error(
        mw.call("approvals.respond", {"approvalId": "x", "decision": "allow", "scope": "forever"})
    )
    assert bad.data["kind"] == "invalid_params"
