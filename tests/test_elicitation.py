"""Elicitation (issue 17 points 1, 2, 8): a server's form or URL goes to the person, through the
daemon's broker, bound to its call; real daemon, real fixture server (tests/servers/asking.py).
"""

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.daemon_helpers import MODERN_ONLY
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

ASKING = Path(__file__).resolve().parent / "servers" / "asking.py"
TOPICS = ["elicitation.requested", "elicitation.resolved", "elicitation.completed"]


def asking(*args: str, **fields: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(ASKING), *args], **fields}


async def _setup(mw: Harness, *servers: str) -> tuple[Any, dict[str, Any], dict[str, str]]:
    # "m" (2026-07-28 through a relay) starts slowly: only where a test needs it.
    modern = {"command": sys.executable, "args": [MODERN_ONLY, "--server", str(ASKING)]}
    entries = {"a": asking(), "m": modern}
    await mw.start(document({s: entries[s] for s in servers or ("a",)}))
    events = await mw.connect(TOPICS)
    conv = await mw.conversation(list(servers or ("a",)))
    turn = await mw.begin(conv)
    return events, turn, bound(turn, servers[0] if servers else "a")


async def test_form_answered_checked_and_completed(mw: Harness) -> None:
    events, turn, tools = await _setup(mw)
    # A 1 s call timeout (once connected): the form stays open past it, the clock stopped.
    await mw.edit_settings(lambda doc: doc["assets"]["mcpServers"]["a"].update(timeoutSeconds=1))
    async with anyio.create_task_group() as tg:
        call = start_call(
            tg, mw.c, "turns.callTool", {"turnId": turn["turnId"], "name": tools["ask_prefs"]}
        )
        asked = await wait_event(events, "elicitation.requested")
        assert asked["conversationId"] == turn_conv(turn, mw)
        assert (asked["turnId"], asked["server"], asked["mode"]) == (turn["turnId"], "a", "form")
        assert asked["callId"]
        assert asked["origin"] == "tool_call"
        assert asked["message"] == "Tell me your preferences"
        assert asked["requestedSchema"]["properties"]["count"]["default"] == 3
        assert "approvalId" not in asked
        assert "decision" not in asked
        assert (await mw.call("elicitations.list"))["elicitations"] == [asked]
        eid = asked["elicitationId"]
        # Never answerable as a tool approval.
        wrong = await rpc_error(
            mw.call("approvals.respond", {"approvalId": eid, "decision": "allow"})
        )
        assert wrong.data["kind"] == "approval_not_found"
        bad = await rpc_error(
            mw.call(
                "elicitations.respond",
                {"elicitationId": eid, "action": "accept", "content": {"name": "Ada", "count": 99}},
            )
        )
        assert bad.data["kind"] == "invalid_params"
        assert "count: expected at most 10" in bad.message
        missing = await rpc_error(
            mw.call(
                "elicitations.respond", {"elicitationId": eid, "action": "accept", "content": {}}
            )
        )
        assert "name: required" in missing.message
        extra = await rpc_error(
            mw.call(
                "elicitations.respond",
                {"elicitationId": eid, "action": "accept", "content": {"name": "A", "age": 3}},
            )
        )
        assert "no field 'age'" in extra.message
        await anyio.sleep(1.5)  # past the call's own 1 s timeout: it must not have fired
        assert not call.done.is_set()
        await mw.call(
            "elicitations.respond",
            {"elicitationId": eid, "action": "accept", "content": {"name": "Ada"}},
        )
        again = await rpc_error(
            mw.call("elicitations.respond", {"elicitationId": eid, "action": "decline"})
        )
        assert again.data["kind"] == "elicitation_not_found"
        result = await call.wait()
    expected = {"color": "green", "count": 3, "name": "Ada", "notify": False}
    assert text_of(result) == f"accepted {json.dumps(expected, sort_keys=True)}"
    resolved = await wait_event(events, "elicitation.resolved")
    assert resolved == {"elicitationId": eid, "action": "accept", "reason": "accepted by the user"}
    assert (await mw.call("elicitations.list"))["elicitations"] == []


def turn_conv(turn: dict[str, Any], mw: Harness) -> str:
    assert mw.daemon is not None
    return str(mw.daemon.turns._turns[turn["turnId"]].conversation_id)


async def test_url_mode_and_completion(mw: Harness) -> None:
    events, turn, tools = await _setup(mw)
    async with anyio.create_task_group() as tg:
        call = start_call(
            tg, mw.c, "turns.callTool", {"turnId": turn["turnId"], "name": tools["open_url"]}
        )
        asked = await wait_event(events, "elicitation.requested")
        assert (asked["mode"], asked["url"]) == ("url", "https://example.com/login")
        assert "requestedSchema" not in asked
        eid = asked["elicitationId"]
        bad = await rpc_error(
            mw.call(
                "elicitations.respond",
                {"elicitationId": eid, "action": "accept", "content": {"x": 1}},
            )
        )
        assert bad.data["kind"] == "invalid_params"
        await mw.call("elicitations.respond", {"elicitationId": eid, "action": "accept"})
        result = await call.wait()
    server_id = text_of(result).split()[1]
    assert text_of(result) == f"accept {server_id}"
    completed = await wait_event(events, "elicitation.completed")
    assert completed == {
        "server": "a",
        "conversationId": asked["conversationId"],
        "serverElicitationId": server_id,
    }
    # A -32042 "URL elicitation required" error becomes the same prompt, then the call again.
    async with anyio.create_task_group() as tg:
        call = start_call(
            tg, mw.c, "turns.callTool", {"turnId": turn["turnId"], "name": tools["needs_login"]}
        )
        asked = await wait_event(events, "elicitation.requested")
        assert (asked["mode"], asked["url"]) == ("url", "https://example.com/auth")
        assert asked["serverElicitationId"] == "auth-1"
        assert asked["callId"]
        await mw.call(
            "elicitations.respond", {"elicitationId": asked["elicitationId"], "action": "accept"}
        )
        result = await call.wait()
    assert text_of(result) == "logged in"  # the call was made again after consent


async def test_refusals_without_a_person(mw: Harness) -> None:
    await mw.start(document({"a": asking()}))
    turn = await mw.begin(await mw.conversation(["a"]))
    tools = bound(turn, "a")
    # Nobody watching: cancelled at once (a "decline" would be a refusal nobody made).
    assert text_of(await mw.tool(turn, tools["ask_prefs"])) == "cancel"
    events = await mw.connect(TOPICS)
    # Not a flat form: refused to the server (-32602), nobody is asked.
    assert text_of(await mw.tool(turn, tools["nested_form"])) == "refused -32602"
    await mw.call("settings.setMcpOptions", {"question_timeout_seconds": 0.3})
    result = await mw.tool(turn, tools["ask_prefs"])  # nobody answers in time
    assert text_of(result) == "cancel"
    resolved = await wait_event(events, "elicitation.resolved")
    assert resolved["action"] == "cancel"
    assert resolved["reason"] == "nobody answered in time"


async def test_cancelled_call_and_ended_turn_cancel_the_question(mw: Harness) -> None:
    events, turn, tools = await _setup(mw)
    conv = turn_conv(turn, mw)
    for how in ("turns.cancel", "turns.end"):
        if how == "turns.end":
            turn = await mw.begin(conv)
        async with anyio.create_task_group() as tg:
            call = start_call(
                tg, mw.c, "turns.callTool", {"turnId": turn["turnId"], "name": tools["slow_elicit"]}
            )
            eid = (await wait_event(events, "elicitation.requested"))["elicitationId"]
            await mw.call(how, {"turnId": turn["turnId"]})
            resolved = await wait_event(
                events, "elicitation.resolved", lambda d, eid=eid: d["elicitationId"] == eid
            )
            assert resolved["action"] == "cancel"
            result = await call.wait()
        assert result["isError"] is True
        assert (await mw.call("elicitations.list"))["elicitations"] == []
    # The session closes (its server dies) while the form is open.
    turn = await mw.begin(conv)
    async with anyio.create_task_group() as tg:
        call = start_call(
            tg, mw.c, "turns.callTool", {"turnId": turn["turnId"], "name": tools["slow_elicit"]}
        )
        eid = (await wait_event(events, "elicitation.requested"))["elicitationId"]
        os.kill(mw.pid(conv, "a"), signal.SIGKILL)
        resolved = await wait_event(
            events, "elicitation.resolved", lambda d, eid=eid: d["elicitationId"] == eid
        )
        assert resolved["action"] == "cancel"
        assert (await call.wait())["isError"] is True
    # Two calls in flight on one stdio session: which one asks is unknown, so the question is
    # "background" and names both (both clocks stopped); cancelling the turn ends both.
    async with anyio.create_task_group() as tg:
        for _ in range(2):
            start_call(
                tg, mw.c, "turns.callTool", {"turnId": turn["turnId"], "name": tools["slow_elicit"]}
            )
        await wait_event(events, "elicitation.requested")  # before or after the 2nd call began
        second = await wait_event(events, "elicitation.requested")
        assert (second["origin"], second["callId"]) == ("background", None)
        assert second["turnId"] == turn["turnId"]  # both calls are this turn's
        assert len(set(second["inFlight"])) == 2
        await mw.call("turns.cancel", {"turnId": turn["turnId"]})
    assert (await mw.call("elicitations.list"))["elicitations"] == []
    # The daemon stops while a form is open: answered as cancelled, nothing left pending.
    daemon = mw.d
    async with anyio.create_task_group() as tg:
        call = start_call(
            tg, mw.c, "turns.callTool", {"turnId": turn["turnId"], "name": tools["slow_elicit"]}
        )
        await wait_event(events, "elicitation.requested")
        await mw.stop()
    assert daemon.asks.elicitations() == []


async def test_modern_server_rounds_reach_the_same_broker(mw: Harness) -> None:
    events, turn, tools = await _setup(mw, "m")
    name = tools["prefs_any_era"]
    async with anyio.create_task_group() as tg:
        call = start_call(tg, mw.c, "turns.callTool", {"turnId": turn["turnId"], "name": name})
        asked = await wait_event(events, "elicitation.requested")
        # In 2026-07-28 rounds the callback runs in the call's task: bound to the call exactly.
        assert (asked["server"], asked["turnId"], asked["mode"]) == ("m", turn["turnId"], "form")
        await mw.call(
            "elicitations.respond", {"elicitationId": asked["elicitationId"], "action": "decline"}
        )
        result = await call.wait()
    assert text_of(result) == "decline"
    assert mw.sessions(asked["conversationId"], "m")[0].protocol_version == "2026-07-28"


async def test_meworkctl_requests_watch_fills_a_form(mw: Harness) -> None:
    """The terminal frontend: a real ``meworkctl requests watch`` answers the form on stdin."""
    _events, turn, tools = await _setup(mw)
    ctl = Path(sys.executable).with_name("meworkctl")
    async with await anyio.open_process(
        [str(ctl), "requests", "watch", "--socket", str(mw.paths.socket)]
    ) as proc:
        assert proc.stdin is not None
        assert proc.stderr is not None
        with anyio.fail_after(15):
            seen = b""
            while b"Waiting for requests" not in seen:
                seen += await proc.stderr.receive()
        # accept; name "Ada"; count "oops" (refused by the daemon, asked again); then defaults.
        await proc.stdin.send(b"y\nAda\noops\n\n\ny\nAda\n\n\n\n")
        result = await mw.tool(turn, tools["ask_prefs"])
        proc.terminate()
    expected = {"color": "green", "count": 3, "name": "Ada", "notify": False}
    assert text_of(result) == f"accepted {json.dumps(expected, sort_keys=True)}"
