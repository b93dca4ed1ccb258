"""Policy reaches running work, subagent turns included (issue 14.6).

A change of the settings, the conversation's selection or its level applies to the next call of
a turn that is already running: a binding that is gone is refused with its kind (an ``isError``
result the model reads, and a ``policy`` deny in the audit), one that holds runs under the new
rule.
"""

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from tests.common import fake
from tests.turn_helpers import (
    FAKE,
    Harness,
    approval_for,
    bound,
    document,
    mw_fixture,  # noqa: F401  (the mw fixture)
    start_call,
    text_of,
)

pytestmark = pytest.mark.anyio

Change = Callable[[Harness, str], Awaitable[Any]]


async def _turns(mw: Harness, level: str = "full_access") -> tuple[str, list[dict[str, Any]]]:
    """A conversation over k and other, a turn of it and a subagent turn of that turn."""
    conv = await mw.conversation(["k", "other"], level=level)
    turn = await mw.begin(conv)
    sub = await mw.begin(conv, parentTurnId=turn["turnId"])
    return conv, [turn, sub]


CHANGES: dict[str, Change] = {
    "tool_disabled": lambda mw, _conv: mw.call(
        "servers.setToolEnabled", {"name": "k", "tool": "echo", "enabled": False}
    ),
    "server_disabled": lambda mw, _conv: mw.call(
        "servers.update", {"name": "k", "patch": {"enabled": False}}
    ),
    "server_removed": lambda mw, _conv: mw.call("servers.remove", {"name": "k"}),
    "server_deselected": lambda mw, conv: mw.call(
        "conversations.update", {"id": conv, "mcpServers": ["other"]}
    ),
}


@pytest.mark.parametrize("kind", list(CHANGES))
async def test_a_binding_that_is_gone_is_refused_with_its_kind(mw: Harness, kind: str) -> None:
    await mw.start(document({"k": fake(), "other": fake()}))
    conv, turns = await _turns(mw)
    echo = bound(turns[0], "k")["echo"]
    for turn in turns:
        assert not (await mw.tool(turn, echo, {"text": "before"}))["isError"]
    await CHANGES[kind](mw, conv)
    for turn in turns:
        reply = await mw.tool(turn, echo, {"text": "after"}, callId=f"after-{turn['turnId']}")
        assert reply["isError"] is True
        assert text_of(reply).startswith(f"{kind}: "), reply
    entries = (await mw.call("audit.list", {"conversationId": conv}))["entries"]
    for entry in entries[-2:]:
        assert (entry["decision"], entry["decidedBy"]) == ("deny", "policy"), entry
        assert entry["reason"].startswith(f"{kind}: ")
    # What the change did not touch still runs.
    if kind != "server_deselected":
        other = bound(turns[0], "other")["echo"]
        assert text_of(await mw.tool(turns[1], other, {"text": "still"})) == "still"


async def test_a_redefined_server_keeps_the_bindings_it_still_offers(mw: Harness) -> None:
    await mw.start(document({"k": fake("--tools", "1"), "other": fake()}))
    _conv, turns = await _turns(mw)
    names = bound(turns[0], "k")
    assert not (await mw.tool(turns[0], names["t0"]))["isError"]
    await mw.call("servers.update", {"name": "k", "patch": {"args": [str(FAKE)]}})
    for turn in turns:
        gone = await mw.tool(turn, names["t0"])
        assert gone["isError"] is True
        assert text_of(gone).startswith("server_redefined: "), gone
        assert text_of(await mw.tool(turn, names["echo"], {"text": "kept"})) == "kept"


async def _asked(mw: Harness, events: Any, turn: dict[str, Any], name: str) -> None:
    """The call asks the user now; denied here."""
    async with anyio.create_task_group() as tg:
        params = {"turnId": turn["turnId"], "name": name, "arguments": {"text": "x"}}
        call = start_call(tg, mw.c, "turns.callTool", params)
        request = await approval_for(events, turn, name)
        await mw.call(
            "approvals.respond", {"approvalId": request["approvalId"], "decision": "deny"}
        )
        assert text_of(await call.wait()).startswith("The call was not approved")


async def test_the_rules_of_now_apply_to_running_turns(mw: Harness) -> None:
    await mw.start(document({"k": fake(), "other": fake()}))
    events = await mw.connect(["approval.requested"])
    conv, turns = await _turns(mw)
    echo, add = bound(turns[0], "k")["echo"], bound(turns[0], "k")["add"]
    for turn in turns:
        assert not (await mw.tool(turn, echo, {"text": "runs"}))["isError"]
    # Auto-approve switched off for one tool: that tool asks, the others still run.
    await mw.call("servers.setToolAutoApprove", {"name": "k", "tool": "echo", "autoApprove": False})
    for turn in turns:
        await _asked(mw, events, turn, echo)
        assert not (await mw.tool(turn, add, {"a": 1, "b": 2}))["isError"]
    # The level lowered: every call asks.
    await mw.call("servers.setToolAutoApprove", {"name": "k", "tool": "echo", "autoApprove": True})
    await mw.call("conversations.update", {"id": conv, "approvalLevel": "request_approval"})
    for turn in turns:
        await _asked(mw, events, turn, add)
