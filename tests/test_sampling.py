"""Sampling (issue 17 point 3): declared only with mcp.sampling; every request goes to a frontend
(which shows it to the person and runs the model); refused when nobody can answer."""

from typing import Any

import anyio
import pytest

from tests.test_elicitation import asking
from tests.turn_helpers import (
    Harness,
    bound,
    document,
    mw_fixture,  # noqa: F401  (the mw fixture)
    rpc_error,
    start_call,
    text_of,
    wait_event,
)

pytestmark = pytest.mark.anyio

ANSWER = {"role": "assistant", "model": "m", "content": {"type": "text", "text": "otters float"}}


async def _summarize(
    mw: Harness, turn: dict[str, Any], events: Any, answer: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    async with anyio.create_task_group() as tg:
        call = start_call(
            tg,
            mw.c,
            "turns.callTool",
            {
                "turnId": turn["turnId"],
                "name": bound(turn, "a")["summarize"],
                "arguments": {"topic": "otters"},
            },
        )
        asked = await wait_event(events, "sampling.requested")
        assert (await mw.call("sampling.list"))["requests"] == [asked]
        await mw.call("sampling.respond", {"requestId": asked["requestId"], **answer})
        return asked, await call.wait()


async def test_sampling(mw: Harness) -> None:
    await mw.start(document({"a": asking()}))
    conv = await mw.conversation(["a"])
    # Off by default: not declared, so the server refuses to sample (its own error).
    off = await mw.tool(
        await mw.begin(conv), bound(await mw.begin(conv), "a")["summarize"], {"topic": "x"}
    )
    assert off["isError"] is True

    # Turning it on retires the open sessions: the next ones declare sampling.
    await mw.call("settings.setMcpOptions", {"sampling": True})
    turn = await mw.begin(conv)
    # No frontend that can sample: a clear refusal at once.
    nobody = await mw.tool(turn, bound(turn, "a")["summarize"], {"topic": "x"})
    assert nobody["isError"] is True
    assert "no frontend that can sample" in text_of(nobody)

    events = await mw.connect(["sampling.requested", "sampling.resolved"])
    asked, result = await _summarize(mw, turn, events, {"result": ANSWER})
    assert (asked["server"], asked["turnId"], asked["conversationId"]) == (
        "a",
        turn["turnId"],
        conv,
    )
    message = asked["request"]["messages"][0]
    assert message["content"] == {"type": "text", "text": "One line on otters"}
    assert asked["request"]["maxTokens"] == 50
    assert text_of(result) == "model=m text=otters float"
    assert (await wait_event(events, "sampling.resolved"))["outcome"] == "answered"

    _asked, refused = await _summarize(mw, turn, events, {"error": {"message": "the user said no"}})
    assert refused["isError"] is True
    assert "the user said no" in text_of(refused)

    async with anyio.create_task_group() as tg:
        call = start_call(
            tg,
            mw.c,
            "turns.callTool",
            {
                "turnId": turn["turnId"],
                "name": bound(turn, "a")["summarize"],
                "arguments": {"topic": "y"},
            },
        )
        asked = await wait_event(events, "sampling.requested")
        rid = asked["requestId"]
        both = await rpc_error(
            mw.call("sampling.respond", {"requestId": rid, "result": ANSWER, "error": {}})
        )
        assert "exactly one of result and error" in both.message
        bad = await rpc_error(
            mw.call("sampling.respond", {"requestId": rid, "result": {"role": "user"}})
        )
        assert bad.data["kind"] == "invalid_params"
        assert "assistant" in bad.message
        wrong = await rpc_error(
            mw.call("elicitations.respond", {"elicitationId": rid, "action": "accept"})
        )
        assert wrong.data["kind"] == "elicitation_not_found"
        await mw.call("turns.cancel", {"turnId": turn["turnId"]})
        assert (await call.wait())["isError"] is True
    assert (await mw.call("sampling.list"))["requests"] == []
