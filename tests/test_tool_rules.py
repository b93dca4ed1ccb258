"""Per-tool rules a user sets once: ``disabledTools`` and ``alwaysAllowTools``, names or globs.

Precedence (docs/api.md, "Per-tool rules"): the mandatory asks first (``requiresUserInteraction``,
``disabledAutoApproveTools``: no rule pre-approves them), then ``disabledTools``, then
``alwaysAllowTools``, then hooks and the conversation's level.
"""

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from meworkd.base.errors import InvalidSettings
from meworkd.settings import parse_server
from meworkd.settings.toolrules import first_match, pattern_problem, unmatched
from tests.common import fake
from tests.turn_helpers import (
    Harness,
    approval_for,
    bound,
    document,
    mw_fixture,  # noqa: F401  (the mw fixture)
    rpc_error,
    start_call,
    text_of,
)

pytestmark = pytest.mark.anyio


def test_a_rule_is_a_name_or_a_glob() -> None:
    assert first_match(["echo"], "echo") == "echo"
    assert first_match(["get_*", "echo"], "get_time") == "get_*"
    assert first_match(["ech?"], "echo") == "ech?"
    assert first_match(["[ab]dd"], "add") == "[ab]dd"
    assert first_match(["Echo"], "echo") is None  # tool names are case-sensitive
    assert unmatched(["ec*", "nothing_*"], ["echo", "add"]) == ["nothing_*"]


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("", "an empty pattern matches no tool"),
        ("get_[ab", "'[' at position 5 is never closed by ']'"),
        ("x" * 300, "longer than 256 characters"),
    ],
)
def test_a_bad_pattern_is_refused_where_it_goes_wrong(pattern: str, why: str) -> None:
    assert pattern_problem(pattern) == why
    with pytest.raises(InvalidSettings) as refused:
        parse_server("s", {"command": "x", "alwaysAllowTools": ["ok", pattern]})
    assert f"s.alwaysAllowTools[1]: {why}" in refused.value.message
    with pytest.raises(InvalidSettings, match=r"s\.disabledTools\[0\]"):
        parse_server("s", {"command": "x", "disabledTools": [pattern]})


def test_closed_sets_are_fine() -> None:
    for pattern in ("[!a]dd", "[]]x", "a[b]c*", "plain_name"):
        assert pattern_problem(pattern) is None, pattern


async def _audit_last(mw: Harness, conversation: str) -> dict[str, Any]:
    entries = (await mw.call("audit.list", {"conversationId": conversation}))["entries"]
    return entries[-1]  # type: ignore[no-any-return]


async def test_always_allowed_tools_run_at_every_level_and_are_audited_by_their_rule(
    mw: Harness,
) -> None:
    await mw.start(document({"k": fake(alwaysAllowTools=["ec*"], disabledTools=["bad_*"])}))
    conv = await mw.conversation(["k"], level="request_approval")
    turn = await mw.begin(conv)
    tools = bound(turn, "k")
    assert "bad_output" not in tools  # a disabledTools glob: never offered
    # Awaited directly: if it asked, nobody would answer and the bound would fail the test.
    with anyio.fail_after(20):
        assert text_of(await mw.tool(turn, tools["echo"], {"text": "hi"})) == "hi"
    last = await _audit_last(mw, conv)
    assert (last["decision"], last["decidedBy"]) == ("allow", "rule")
    assert last["reason"] == "alwaysAllowTools: ec*"
    shown = await mw.call("servers.get", {"name": "k"})
    assert shown["alwaysAllowTools"] == ["ec*"]
    assert shown["warnings"] == []


async def test_no_rule_pre_approves_a_mandatory_ask(mw: Harness) -> None:
    entry = fake(alwaysAllowTools=["echo"], disabledAutoApproveTools=["echo"])
    await mw.start(document({"k": entry}))
    events = await mw.connect(["approval.requested"])
    conv = await mw.conversation(["k"], level="full_access")
    turn = await mw.begin(conv)
    echo = bound(turn, "k")["echo"]
    async with anyio.create_task_group() as tg:
        params = {"turnId": turn["turnId"], "name": echo, "arguments": {"text": "x"}}
        call = start_call(tg, mw.c, "turns.callTool", params)
        request = await approval_for(events, turn, echo)
        assert request["reason"] == "auto-approve is switched off for this tool"
        await mw.call(
            "approvals.respond", {"approvalId": request["approvalId"], "decision": "deny"}
        )
        assert (await call.wait())["isError"] is True
    assert (await _audit_last(mw, conv))["decidedBy"] == "user"


async def test_a_rule_matching_no_reported_tool_is_a_warning(mw: Harness) -> None:
    await mw.start(document({"k": fake(alwaysAllowTools=["ech*", "delete_*"])}))
    conv = await mw.conversation(["k"])
    await mw.begin(conv)  # the turn's discovery reports the tools
    shown = await mw.call("servers.get", {"name": "k"})
    assert shown["warnings"] == [
        "alwaysAllowTools: 'delete_*' matches none of the tools the server reported"
    ]


async def test_always_allow_from_an_approval_applies_everywhere_and_stays(mw: Harness) -> None:
    await mw.start(document({"k": fake(), "m": fake(disabledAutoApproveTools=["echo"])}))
    events = await mw.connect(["approval.requested"])
    conv = await mw.conversation(["k", "m"], level="request_approval")
    turn = await mw.begin(conv)
    echo, mandatory = bound(turn, "k")["echo"], bound(turn, "m")["echo"]
    async with anyio.create_task_group() as tg:
        params = {"turnId": turn["turnId"], "name": mandatory, "arguments": {"text": "m"}}
        call = start_call(tg, mw.c, "turns.callTool", params)
        request = await approval_for(events, turn, mandatory)
        answer = {"approvalId": request["approvalId"], "decision": "allow", "scope": "always"}
        refused = await rpc_error(mw.call("approvals.respond", answer))
        assert "echo cannot always be allowed: auto-approve is switched off" in refused.message
        answer["scope"] = "once"  # still open: the refusal answered nothing
        await mw.call("approvals.respond", answer)
        assert text_of(await call.wait()) == "m"

        params = {"turnId": turn["turnId"], "name": echo, "arguments": {"text": "k"}}
        call = start_call(tg, mw.c, "turns.callTool", params)
        request = await approval_for(events, turn, echo)
        answer = {"approvalId": request["approvalId"], "decision": "allow", "scope": "always"}
        await mw.call("approvals.respond", answer)
        assert text_of(await call.wait()) == "k"
    assert mw.read_settings()["assets"]["mcpServers"]["k"]["alwaysAllowTools"] == ["echo"]
    # Another conversation: runs without asking (awaited directly), by the rule.
    other = await mw.conversation(["k"], level="request_approval")
    other_turn = await mw.begin(other)
    assert text_of(await mw.tool(other_turn, echo, {"text": "again"})) == "again"
    last = await _audit_last(mw, other)
    assert (last["decidedBy"], last["reason"]) == ("rule", "alwaysAllowTools: echo")
    deny_always = {"approvalId": "x", "decision": "deny", "scope": "always"}
    bad = await rpc_error(mw.call("approvals.respond", deny_always))
    assert 'scope "always" goes only with decision "allow"' in bad.message


async def test_meworkctl_allows_always(mw: Harness) -> None:
    """``meworkctl approvals allow ID --always``, as a person types it in another terminal."""
    await mw.start(document({"k": fake()}))
    events = await mw.connect(["approval.requested"])
    conv = await mw.conversation(["k"], level="request_approval")
    turn = await mw.begin(conv)
    echo = bound(turn, "k")["echo"]
    meworkctl = Path(sys.executable).parent / "meworkctl"
    async with anyio.create_task_group() as tg:
        params = {"turnId": turn["turnId"], "name": echo, "arguments": {"text": "t"}}
        call = start_call(tg, mw.c, "turns.callTool", params)
        request = await approval_for(events, turn, echo)
        argv = [str(meworkctl), "--socket", str(mw.paths.socket), "approvals", "allow"]
        done = await anyio.run_process([*argv, request["approvalId"], "--always"])
        assert done.stdout.decode().split() == ["ok", "allowed", request["approvalId"]]
        assert text_of(await call.wait()) == "t"
    assert mw.read_settings()["assets"]["mcpServers"]["k"]["alwaysAllowTools"] == ["echo"]
