"""A server's questions to a person (issue 17 follow-ups): at most eight of one session wait at
once, the rest are refused to the server while other sessions ask on; and every outcome is on
the audit record, who decided it but never what a form held. One daemon for the module."""

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mework_client.ctl.approvals import format_audit
from mework_protocol.audit import is_question

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

FLOODING = Path(__file__).resolve().parent / "servers" / "flooding.py"
ASKING = FLOODING.parent / "asking.py"
MODEL_SAID = "the-model-said-this-7c1d"
SECRET = "hunter2-f00dface"
CAP = 8  # meworkd.mcp.asks.MAX_PENDING_QUESTIONS, as the wire shows it


async def test_a_flooding_session_is_capped_others_ask_on_and_outcomes_are_audited(
    mw: Harness,
) -> None:
    servers = {
        "flood": {"command": sys.executable, "args": [str(FLOODING)]},
        "ask": {"command": sys.executable, "args": [str(ASKING)]},
    }
    await mw.start(document(servers, mcp={"sampling": True}))
    topics = ["elicitation.requested", "elicitation.resolved", "sampling.requested"]
    events = await mw.connect(topics)
    flooder, other = await mw.conversation(["flood"]), await mw.conversation(["flood", "ask"])
    turns: dict[str, dict[str, Any]] = {}

    async def begin(conversation: str) -> None:
        turns[conversation] = await mw.begin(conversation)

    async with anyio.create_task_group() as tg:  # the two sessions start side by side
        tg.start_soon(begin, flooder)
        tg.start_soon(begin, other)
    turn, other_turn = turns[flooder], turns[other]
    name = bound(turn, "flood")["flood"]

    async with anyio.create_task_group() as tg:
        flood = start_call(
            tg,
            mw.c,
            "turns.callTool",
            {"turnId": turn["turnId"], "name": name, "arguments": {"n": 12}},
        )
        asked = [await wait_event(events, "elicitation.requested") for _ in range(CAP)]
        assert {q["conversationId"] for q in asked} == {flooder}
        # The flooder's session is at its cap; another session of the same server asks on.
        single = start_call(
            tg,
            mw.c,
            "turns.callTool",
            {"turnId": other_turn["turnId"], "name": name, "arguments": {"n": 1}},
        )
        theirs = await wait_event(events, "elicitation.requested")
        assert theirs["conversationId"] == other
        await mw.call(
            "elicitations.respond",
            {
                "elicitationId": theirs["elicitationId"],
                "action": "accept",
                "content": {"token": SECRET},
            },
        )
        assert json.loads(text_of(await single.wait())) == {"answered": ["accept"], "refused": []}
        for i, question in enumerate(asked):
            action = "accept" if i % 2 else "decline"
            params = {"elicitationId": question["elicitationId"], "action": action}
            await mw.call("elicitations.respond", params | ({"content": {}} if i % 2 else {}))
        flooded = json.loads(text_of(await flood.wait()))

    assert flooded["answered"] == ["accept"] * 4 + ["decline"] * 4
    assert len(flooded["refused"]) == 12 - CAP
    assert all(r.startswith("-32600: too many questions pending") for r in flooded["refused"])
    assert (await mw.call("daemon.status"))["sessions"] == 3  # the flooder's lives on

    entries = (await mw.call("audit.list", {"limit": 50}))["entries"]
    questions = [e for e in entries if e["name"] == "elicitation/create"]
    assert SECRET not in json.dumps(entries)
    # Frontends tell them from the calls (the UI's tool cards skip them; meworkctl shows them).
    assert [e for e in entries if is_question(e)] == questions
    assert [e["decision"] for e in entries if not is_question(e)] == ["allow", "allow"]
    assert "elicitation/create" in format_audit({"entries": questions})
    assert len(questions) == CAP + 1  # the refused ones asked nobody: the log has them
    mine = [e for e in questions if e["conversationId"] == flooder]
    assert sorted(e["decision"] for e in mine) == ["accept"] * 4 + ["decline"] * 4
    (theirs_entry,) = [e for e in questions if e["conversationId"] == other]
    assert theirs_entry["turnId"] == other_turn["turnId"]
    assert theirs_entry["callId"]  # the call that asked
    assert (theirs_entry["server"], theirs_entry["tool"]) == ("flood", "")
    assert (theirs_entry["decision"], theirs_entry["decidedBy"]) == ("accept", "user")
    assert theirs_entry["reason"] == "accepted by the user"
    assert len(theirs_entry["argumentsDigest"]) == 16
    assert theirs_entry["durationMs"] >= 0

    # A sampling request: answered by the user, the model's words not on record.
    async with anyio.create_task_group() as tg:
        summarize = {
            "turnId": other_turn["turnId"],
            "name": bound(other_turn, "ask")["summarize"],
            "arguments": {"topic": "tea"},
        }
        sampled = start_call(tg, mw.c, "turns.callTool", summarize)
        request = await wait_event(events, "sampling.requested")
        content = {"type": "text", "text": MODEL_SAID}
        result = {"role": "assistant", "model": "m1", "content": content}
        await mw.call("sampling.respond", {"requestId": request["requestId"], "result": result})
        assert MODEL_SAID in text_of(await sampled.wait())
    entries = (await mw.call("audit.list", {"limit": 50}))["entries"]
    assert MODEL_SAID not in json.dumps(entries)
    (sampling,) = [e for e in entries if e["name"] == "sampling/createMessage"]
    assert (sampling["server"], sampling["decision"], sampling["decidedBy"]) == (
        "ask",
        "answered",
        "user",
    )
    assert sampling["turnId"] == other_turn["turnId"]

    # Who ended it: a question whose call was cancelled, and one nobody was watching for.
    single_call = {"turnId": other_turn["turnId"], "name": name, "arguments": {"n": 1}}
    async with anyio.create_task_group() as tg:
        cancelled = start_call(tg, mw.c, "turns.callTool", single_call)
        await wait_event(events, "elicitation.requested")
        await mw.call("turns.cancel", {"turnId": other_turn["turnId"]})
        await wait_event(events, "elicitation.resolved")  # recorded as it is resolved
        assert (await cancelled.wait())["isError"] is True
    await events.subscribe(["server.status"])  # no frontend watches questions any more
    unwatched = await mw.call("turns.callTool", single_call)
    assert json.loads(text_of(unwatched))["answered"] == ["cancel"]
    entries = (await mw.call("audit.list", {"limit": 50}))["entries"]
    ended = [(e["decision"], e["decidedBy"], e["reason"]) for e in entries if is_question(e)]
    assert ended[-2:] == [
        ("cancel", "cancelled", "the call was cancelled"),
        ("cancel", "policy", "no frontend was watching"),
    ]
