"""Approvals (issue 5): every cell of the DESIGN.md table, real hook scripts, real frontends.

| call | request_approval / allow_edits / plan | full_access |
|---|---|---|
| ordinary tool | ask, unless a PermissionRequest hook allows (or denies) | run |
| requiresUserInteraction == true | ask; a hook cannot pre-approve | ask |
| in disabledAutoApproveTools | ask; a hook cannot pre-approve | ask |

Waiting is always on events (``approval.requested``) under ``anyio.fail_after``; a call that
must run without asking is awaited directly, so if it asked it would hang and fail the bound.
"""

from typing import Any

import anyio
import pytest

from tests.common import fake
from tests.turn_helpers import (
    Harness,
    approval_for,
    bound,
    counting,
    document,
    hook_runs,
    mw_fixture,  # noqa: F401  (the mw fixture)
    permission_hooks,
    rpc_error,
    start_call,
    text_of,
    wait_event,
    write_hook,
)

pytestmark = pytest.mark.anyio

ASKING_LEVELS = ("request_approval", "allow_edits", "plan")
PREFIX = "[ASK] "


async def _audit(mw: Harness, conversation: str) -> list[dict[str, Any]]:
    return (await mw.call("audit.list", {"conversationId": conversation}))["entries"]  # type: ignore[no-any-return]


async def _last_decision(mw: Harness, conversation: str) -> tuple[str, str]:
    last = (await _audit(mw, conversation))[-1]
    return last["decision"], last["decidedBy"]


async def _asks(
    mw: Harness,
    events: Any,
    turn: dict[str, Any],
    name: str,
    arguments: dict[str, Any],
    answer: str = "allow",
    reason: str | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Call ``name``; it must ask. Answer it; return (the approval request, the call's result)."""
    async with anyio.create_task_group() as tg:
        call = start_call(
            tg,
            mw.c,
            "turns.callTool",
            {"turnId": turn["turnId"], "name": name, "arguments": arguments},
        )
        request = await approval_for(events, turn, name)
        listed = (await mw.call("approvals.list"))["approvals"]
        assert request in listed
        params = {"approvalId": request["approvalId"], "decision": answer}
        if reason is not None:
            params["reason"] = reason
        await mw.call("approvals.respond", params)
        result = await call.wait()
    assert (await mw.call("approvals.list"))["approvals"] == []
    return request, result


# --- levels ------------------------------------------------------------------------------------


async def test_levels_ask_or_run(mw: Harness) -> None:
    await mw.start(document({"k": counting()}))
    events = await mw.connect(["approval.requested"])
    conv = await mw.conversation(["k"], level="request_approval")
    turn = await mw.begin(conv)
    echo = bound(turn, "k")["echo"]

    for level in ASKING_LEVELS:
        await mw.call("conversations.update", {"id": conv, "approvalLevel": level})
        request, result = await _asks(mw, events, turn, echo, {"text": level})
        assert request == {
            "approvalId": request["approvalId"],
            "conversationId": conv,
            "turnId": turn["turnId"],
            "callId": request["callId"],
            "expiresAt": request["expiresAt"],
            "name": echo,
            "server": "k",
            "tool": "echo",
            "origin": "model",
            "arguments": {"text": level},
            "reason": f"approval level {level} asks for every call",
            "hookMayDecide": True,
        }
        assert result == {"content": [{"type": "text", "text": level}], "isError": False}
        assert await _last_decision(mw, conv) == ("allow", "user")

        _request, denied = await _asks(
            mw, events, turn, echo, {"text": "no"}, answer="deny", reason="not today"
        )
        assert denied["isError"] is True
        assert "not today" in text_of(denied)
        assert await _last_decision(mw, conv) == ("deny", "user")

    await mw.call("conversations.update", {"id": conv, "approvalLevel": "full_access"})
    result = await mw.tool(turn, echo, {"text": "free"})
    assert text_of(result) == "free"
    assert await _last_decision(mw, conv) == ("allow", "level")


# --- PermissionRequest hooks -------------------------------------------------------------------


async def test_permission_request_hooks(mw: Harness) -> None:
    hooks_dir = mw.root / "hooks"
    script = write_hook(hooks_dir)
    # A regex on the model-facing name: every tool of "k", none of "plain".
    await mw.start(
        document(
            {"k": counting(), "plain": counting()},
            hooks=permission_hooks("^mcp__k_.*", script),
        )
    )
    events = await mw.connect(["approval.requested"])
    conv = await mw.conversation(["k", "plain"], level="request_approval")
    turn = await mw.begin(conv)
    echo = bound(turn, "k")["echo"]

    # allow: runs without asking; the hook got Claude Code's request JSON.
    result = await mw.tool(turn, echo, {"text": "hooked", "hook": "allow"})
    assert text_of(result) == "hooked"
    assert await _last_decision(mw, conv) == ("allow", "hook")
    (run,) = hook_runs(hooks_dir)
    assert run["hook_event_name"] == "PermissionRequest"
    assert run["tool_name"] == echo
    assert run["tool_input"] == {"text": "hooked", "hook": "allow"}
    assert run["permission_mode"] == "default"  # Claude Code's name for request_approval
    assert run["approval_level"] == "request_approval"
    assert run["session_id"] == conv
    assert (run["mcp_server"], run["mcp_tool"]) == ("k", "echo")

    # deny: an isError result carrying the hook's message.
    result = await mw.tool(turn, echo, {"text": "x", "hook": "deny"})
    assert result["isError"] is True
    assert "the hook says no" in text_of(result)
    assert await _last_decision(mw, conv) == ("deny", "hook")

    # exit code 2: deny, with the hook's stderr as the reason.
    result = await mw.tool(turn, echo, {"text": "x", "hook": "exit2"})
    assert result["isError"] is True
    assert "blocked by exit code 2" in text_of(result)
    assert await _last_decision(mw, conv) == ("deny", "hook")

    # No decision (failing exit, crash, garbage, nothing, timeout, two decisions): ask the user.
    for mode in ("fail", "crash", "garbage", "empty", "sleep", "two"):
        arguments = {"text": mode, "hook": mode}
        request, result = await _asks(mw, events, turn, echo, arguments)
        assert request["hookMayDecide"] is True
        assert text_of(result) == mode
        assert await _last_decision(mw, conv) == ("allow", "user")
    assert len(hook_runs(hooks_dir)) == 9

    # The matcher does not select "plain": its calls ask, and the hook never runs for them.
    plain = bound(turn, "plain")["echo"]
    _request, result = await _asks(mw, events, turn, plain, {"text": "p", "hook": "allow"})
    assert text_of(result) == "p"
    assert len(hook_runs(hooks_dir)) == 9

    # At full_access an ordinary tool runs; hooks are not even asked.
    await mw.call("conversations.update", {"id": conv, "approvalLevel": "full_access"})
    result = await mw.tool(turn, echo, {"text": "free", "hook": "deny"})
    assert text_of(result) == "free"
    assert await _last_decision(mw, conv) == ("allow", "level")
    assert len(hook_runs(hooks_dir)) == 9


# --- tools that always ask ---------------------------------------------------------------------


async def test_requires_user_interaction(mw: Harness) -> None:
    hooks_dir = mw.root / "hooks"
    script = write_hook(hooks_dir)
    await mw.start(document({"k": fake()}, hooks=permission_hooks("^mcp__k_", script)))
    await mw.call("settings.setMcpOptions", {"mandatory_description_prefix": PREFIX})
    events = await mw.connect(["approval.requested"])
    conv = await mw.conversation(["k"], level="full_access")
    turn = await mw.begin(conv)
    n = bound(turn, "k")
    descriptions = {t["name"]: t["description"] for t in turn["tools"]}
    for tool in ("interactive_true", "interactive_string", "interactive_number"):
        assert descriptions[n[tool]].startswith(PREFIX), tool
    assert descriptions[n["interactive_object"]].startswith(PREFIX)
    assert not descriptions[n["interactive_false"]].startswith(PREFIX)
    assert descriptions[n["echo"]] == "Echo the text back"

    # true asks even at full_access; the user's answer decides.
    request, result = await _asks(mw, events, turn, n["interactive_true"], {})
    assert request["reason"] == "requires user interaction (server-declared)"
    assert request["hookMayDecide"] is False
    assert text_of(result) == "interactive_true ok"
    # A hook's allow cannot pre-approve it (the hook ran, and the user was asked anyway)...
    runs = len(hook_runs(hooks_dir))
    _request, result = await _asks(
        mw, events, turn, n["interactive_true"], {"hook": "allow"}, answer="deny"
    )
    assert result["isError"] is True
    assert len(hook_runs(hooks_dir)) == runs + 1
    assert await _last_decision(mw, conv) == ("deny", "user")
    # ...but a hook's deny denies.
    result = await mw.tool(turn, n["interactive_true"], {"hook": "deny"})
    assert result["isError"] is True
    assert "the hook says no" in text_of(result)
    assert await _last_decision(mw, conv) == ("deny", "hook")

    # A malformed value fails closed: ask, at full_access, even with a hook's allow.
    for tool in ("interactive_string", "interactive_number", "interactive_object"):
        request, result = await _asks(mw, events, turn, n[tool], {"hook": "allow"})
        assert request["hookMayDecide"] is False
        assert text_of(result) == f"{tool} ok"

    # false is an ordinary tool: runs at full_access; at request_approval a hook may allow it
    # and without one it asks.
    assert text_of(await mw.tool(turn, n["interactive_false"])) == "interactive_false ok"
    assert await _last_decision(mw, conv) == ("allow", "level")
    await mw.call("conversations.update", {"id": conv, "approvalLevel": "request_approval"})
    result = await mw.tool(turn, n["interactive_false"], {"hook": "allow"})
    assert text_of(result) == "interactive_false ok"
    assert await _last_decision(mw, conv) == ("allow", "hook")
    request, _result = await _asks(mw, events, turn, n["interactive_false"], {})
    assert request["hookMayDecide"] is True
    request, _result = await _asks(mw, events, turn, n["interactive_true"], {"hook": "allow"})
    assert request["hookMayDecide"] is False


async def test_disabled_auto_approve_asks_without_reconnecting(mw: Harness) -> None:
    hooks_dir = mw.root / "hooks"
    script = write_hook(hooks_dir)
    await mw.start(document({"k": fake()}, hooks=permission_hooks("^mcp__k_", script)))
    events = await mw.connect(["approval.requested"])
    conv = await mw.conversation(["k"], level="full_access")
    turn = await mw.begin(conv)
    echo = bound(turn, "k")["echo"]
    assert text_of(await mw.tool(turn, echo, {"text": "auto"})) == "auto"
    pid = mw.pid(conv, "k")

    reply = await mw.call(
        "servers.setToolAutoApprove", {"name": "k", "tool": "echo", "autoApprove": False}
    )
    assert reply["disabledAutoApproveTools"] == ["echo"]
    # The running turn's next call asks, at full_access, even when a hook allows.
    request, result = await _asks(mw, events, turn, echo, {"text": "asked", "hook": "allow"})
    assert request["reason"] == "auto-approve is switched off for this tool"
    assert request["hookMayDecide"] is False
    assert text_of(result) == "asked"
    result = await mw.tool(turn, echo, {"text": "x", "hook": "deny"})
    assert result["isError"] is True
    assert await _last_decision(mw, conv) == ("deny", "hook")
    # Same at an asking level; and the model is told (the prefix) from the next turn on.
    await mw.call("conversations.update", {"id": conv, "approvalLevel": "plan"})
    request, _result = await _asks(mw, events, turn, echo, {"text": "p", "hook": "allow"})
    assert request["hookMayDecide"] is False
    following = await mw.begin(conv)
    described = {t["name"]: t["description"] for t in following["tools"]}
    assert described[echo] == "[asks the user every time] Echo the text back"

    await mw.call("servers.setToolAutoApprove", {"name": "k", "tool": "echo", "autoApprove": True})
    await mw.call("conversations.update", {"id": conv, "approvalLevel": "full_access"})
    assert text_of(await mw.tool(following, echo, {"text": "auto again"})) == "auto again"
    assert mw.pid(conv, "k") == pid  # policy, not connection: never reconnected


# --- answering ---------------------------------------------------------------------------------


async def test_first_answer_wins(mw: Harness) -> None:
    await mw.start(document({"k": counting()}))
    topics = ["approval.requested", "approval.resolved"]
    first, second = await mw.connect(topics), await mw.connect(topics)
    conv = await mw.conversation(["k"], level="request_approval")
    turn = await mw.begin(conv)
    echo = bound(turn, "k")["echo"]
    params = {"turnId": turn["turnId"], "name": echo, "arguments": {"text": "race"}}
    async with anyio.create_task_group() as tg:
        call = start_call(tg, mw.c, "turns.callTool", params)
        seen_first = await approval_for(first, turn)
        seen_second = await approval_for(second, turn)
        assert seen_first == seen_second
        approval_id = seen_first["approvalId"]
        won = await first.call(
            "approvals.respond", {"approvalId": approval_id, "decision": "allow"}
        )
        assert won == {"approvalId": approval_id, "decision": "allow"}
        err = await rpc_error(
            second.call("approvals.respond", {"approvalId": approval_id, "decision": "deny"})
        )
        assert err.kind == "approval_not_found"
        result = await call.wait()
    assert text_of(result) == "race"
    resolved = await wait_event(second, "approval.resolved")
    assert resolved["approvalId"] == approval_id
    assert (resolved["decision"], resolved["decidedBy"]) == ("allow", "user")

    err = await rpc_error(mw.call("approvals.respond", {"approvalId": "nope", "decision": "allow"}))
    assert err.kind == "approval_not_found"
    err = await rpc_error(
        mw.call("approvals.respond", {"approvalId": approval_id, "decision": "maybe"})
    )
    assert err.code == -32602


async def test_unanswered_requests_deny(mw: Harness) -> None:
    await mw.start(document({"k": counting()}))
    events = await mw.connect(["approval.requested", "approval.resolved"])
    conv = await mw.conversation(["k"], level="request_approval")
    turn = await mw.begin(conv)
    echo = bound(turn, "k")["echo"]

    # Approval timeout.
    await mw.call("settings.setMcpOptions", {"approval_timeout_seconds": 0.3})
    async with anyio.create_task_group() as tg:
        call = start_call(
            tg, mw.c, "turns.callTool", {"turnId": turn["turnId"], "name": echo, "arguments": {}}
        )
        request = await approval_for(events, turn)
        result = await call.wait()
    assert result["isError"] is True
    assert "nobody answered" in text_of(result)
    resolved = await wait_event(
        events, "approval.resolved", lambda d: d["approvalId"] == request["approvalId"]
    )
    assert (resolved["decision"], resolved["decidedBy"]) == ("deny", "timeout")
    assert await _last_decision(mw, conv) == ("deny", "timeout")
    await mw.call("settings.setMcpOptions", {"approval_timeout_seconds": 600})

    # turns.cancel while waiting: only the call it names is denied.
    async with anyio.create_task_group() as tg:
        calls = {
            call_id: start_call(
                tg,
                mw.c,
                "turns.callTool",
                {
                    "turnId": turn["turnId"],
                    "name": echo,
                    "arguments": {"text": call_id},
                    "callId": call_id,
                },
            )
            for call_id in ("a", "b")
        }
        requests = {}
        for _ in calls:
            request = await approval_for(events, turn)
            requests[request["callId"]] = request
        reply = await mw.call("turns.cancel", {"turnId": turn["turnId"], "callId": "a"})
        assert reply == {"cancelled": 1}
        cancelled = await calls["a"].wait()
        assert cancelled["isError"] is True
        assert [r["callId"] for r in (await mw.call("approvals.list"))["approvals"]] == ["b"]
        await mw.call(
            "approvals.respond", {"approvalId": requests["b"]["approvalId"], "decision": "allow"}
        )
        assert text_of(await calls["b"].wait()) == "b"
    entries = {e["callId"]: e for e in await _audit(mw, conv)}
    assert (entries["a"]["decision"], entries["a"]["decidedBy"]) == ("deny", "cancelled")
    assert (entries["b"]["decision"], entries["b"]["decidedBy"]) == ("allow", "user")

    # turns.cancel of the whole turn, and turns.end, deny what waits.
    for method in ("turns.cancel", "turns.end"):
        async with anyio.create_task_group() as tg:
            call = start_call(
                tg,
                mw.c,
                "turns.callTool",
                {"turnId": turn["turnId"], "name": echo, "arguments": {"text": method}},
            )
            await approval_for(events, turn)
            await mw.call(method, {"turnId": turn["turnId"]})
            result = await call.wait()
        assert result["isError"] is True
        assert await _last_decision(mw, conv) == ("deny", "cancelled")
    assert (await mw.call("approvals.list"))["approvals"] == []


async def test_shutdown_while_waiting_denies(mw: Harness) -> None:
    await mw.start(document({"k": counting()}))
    events = await mw.connect(["approval.requested"])
    conv = await mw.conversation(["k"], level="request_approval")
    turn = await mw.begin(conv)
    echo = bound(turn, "k")["echo"]
    async with anyio.create_task_group() as tg:
        call = start_call(
            tg,
            mw.c,
            "turns.callTool",
            {"turnId": turn["turnId"], "name": echo, "arguments": {"text": "bye"}},
        )
        await approval_for(events, turn)
        mw.d.request_shutdown()
        result = await call.wait()  # the reply still arrives
    assert result["isError"] is True
    assert "shutting down" in text_of(result)

    await mw.restart()
    assert await _last_decision(mw, conv) == ("deny", "shutdown")
