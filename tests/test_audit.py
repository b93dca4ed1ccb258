"""The audit log (issue 5.5): every call with its decision, provenance, digest, size and timing."""

from typing import Any

import anyio
import msgspec
import pytest

from meworkd.base.errors import AuditUnavailable
from tests.common import fake
from tests.turn_helpers import (
    EVENT_TIMEOUT,
    Harness,
    approval_for,
    bound,
    document,
    hook_socket,
    mw_fixture,  # noqa: F401  (the mw fixture)
    permission_hooks,
    rpc_error,
    start_call,
    text_of,
    wait_event,
    write_hook,
)

pytestmark = pytest.mark.anyio

SECRET = "s3cr3t-argument-value"


async def _entries(mw: Harness, **params: Any) -> list[dict[str, Any]]:
    return (await mw.call("audit.list", params))["entries"]  # type: ignore[no-any-return]


def _reply_bytes(result: dict[str, Any]) -> int:
    return len(msgspec.json.encode(result))


async def test_every_call_is_audited_with_its_provenance(mw: Harness) -> None:
    hooks_dir = mw.root / "hooks"
    script = write_hook(hooks_dir)
    await mw.start(document({"k": fake()}, hooks=permission_hooks("^mcp__k_", script)))
    events = await mw.connect(["approval.requested", "turn.progress"])
    conv = await mw.conversation(["k"], level="request_approval")
    other = await mw.conversation(["k"], level="full_access")
    turn = await mw.begin(conv)
    n = bound(turn, "k")

    async def asked(arguments: dict[str, Any], answer: str | None, call_id: str) -> Any:
        params = {
            "turnId": turn["turnId"],
            "name": n["echo"],
            "arguments": arguments,
            "callId": call_id,
        }
        async with anyio.create_task_group() as tg:
            call = start_call(tg, mw.c, "turns.callTool", params)
            request = await approval_for(events, turn)
            if answer == "cancel":
                await mw.call("turns.cancel", {"turnId": turn["turnId"], "callId": call_id})
            elif answer is not None:
                await mw.call(
                    "approvals.respond", {"approvalId": request["approvalId"], "decision": answer}
                )
            return await call.wait()

    replies: dict[str, Any] = {}
    replies["hook-allow"] = await mw.tool(
        turn, n["echo"], {"text": SECRET, "hook": "allow"}, callId="hook-allow"
    )
    replies["hook-deny"] = await mw.tool(
        turn, n["echo"], {"text": SECRET, "hook": "deny"}, callId="hook-deny"
    )
    replies["user-allow"] = await asked({"hook": "none", "text": SECRET}, "allow", "user-allow")
    replies["user-deny"] = await asked({"text": "other"}, "deny", "user-deny")
    await mw.call("settings.setMcpOptions", {"approval_timeout_seconds": 0.3})
    replies["timeout"] = await asked({"text": "late"}, None, "timeout")
    await mw.call("settings.setMcpOptions", {"approval_timeout_seconds": 600})
    replies["cancel-waiting"] = await asked({"text": "never"}, "cancel", "cancel-waiting")
    # Cancelled while its PermissionRequest hook runs: denied, and the hook is killed.
    async with (
        await anyio.create_unix_listener(hook_socket(hooks_dir)) as listener,
        anyio.create_task_group() as tg,
    ):
        params = {
            "turnId": turn["turnId"],
            "name": n["echo"],
            "arguments": {"text": "hooked", "hook": "signal"},
            "callId": "cancel-hook",
        }
        call = start_call(tg, mw.c, "turns.callTool", params)
        with anyio.fail_after(EVENT_TIMEOUT):
            hook = await listener.accept()
            assert await hook.receive() == b"running\n"
        await mw.call("turns.cancel", {"turnId": turn["turnId"], "callId": "cancel-hook"})
        replies["cancel-hook"] = await call.wait()
        with anyio.fail_after(EVENT_TIMEOUT), pytest.raises(anyio.EndOfStream):
            await hook.receive()  # the hook process is gone
        await hook.aclose()

    await mw.call("conversations.update", {"id": conv, "approvalLevel": "full_access"})
    replies["level-error"] = await mw.tool(turn, n["error"], callId="level-error")
    replies["level-big"] = await mw.tool(turn, n["big"], {"bytes": 70000}, callId="level-big")
    # Cancelled while running: allowed by the level, recorded as cancelled (and an error).
    slow = {"turnId": turn["turnId"], "name": n["slow"], "arguments": {"seconds": 60}}
    async with anyio.create_task_group() as tg:
        call = start_call(tg, mw.c, "turns.callTool", {**slow, "callId": "cancel-running"})
        await wait_event(events, "turn.progress", lambda d: d["callId"] == "cancel-running")
        await mw.call("turns.cancel", {"turnId": turn["turnId"], "callId": "cancel-running"})
        replies["cancel-running"] = await call.wait()

    # Another conversation's calls are listed only under it.
    other_turn = await mw.begin(other)
    await mw.tool(other_turn, bound(other_turn, "k")["echo"], {"text": "elsewhere"})

    entries = await _entries(mw, conversationId=conv)
    by_call = {e["callId"]: e for e in entries}
    assert [e["callId"] for e in entries] == list(replies)  # every call, oldest first
    expected = {
        "hook-allow": ("allow", "hook", False),
        "hook-deny": ("deny", "hook", True),
        "user-allow": ("allow", "user", False),
        "user-deny": ("deny", "user", True),
        "timeout": ("deny", "timeout", True),
        "cancel-waiting": ("deny", "cancelled", True),
        "cancel-hook": ("deny", "cancelled", True),
        "level-error": ("allow", "level", True),
        "level-big": ("allow", "level", True),
        "cancel-running": ("allow", "level", True),
    }
    for call_id, (decision, decided_by, is_error) in expected.items():
        entry = by_call[call_id]
        assert (entry["decision"], entry["decidedBy"], entry["isError"]) == (
            decision,
            decided_by,
            is_error,
        ), entry
        assert replies[call_id]["isError"] is is_error
        assert entry["conversationId"] == conv
        assert entry["turnId"] == turn["turnId"]
        assert entry["server"] == "k"
        assert isinstance(entry["durationMs"], float | int)
        assert entry["durationMs"] >= 0
        assert isinstance(entry["time"], str)
    assert by_call["hook-allow"]["tool"] == "echo"
    assert by_call["hook-allow"]["name"] == n["echo"]
    assert by_call["level-error"]["tool"] == "error"
    assert by_call["hook-deny"]["reason"] == "the hook says no"
    assert by_call["cancel-running"]["reason"] == "cancelled"

    # replyBytes: the reply's JSON size when a reply came; none when the call never ran.
    assert by_call["hook-allow"]["replyBytes"] == _reply_bytes(replies["hook-allow"])
    assert by_call["user-allow"]["replyBytes"] == _reply_bytes(replies["user-allow"])
    assert by_call["level-error"]["replyBytes"] == _reply_bytes(replies["level-error"])
    assert by_call["level-big"]["replyBytes"] > 70000  # the refused reply's own size
    assert text_of(replies["level-big"]).startswith("The tool's reply was")
    never_ran = ("hook-deny", "user-deny", "timeout", "cancel-waiting", "cancel-hook")
    for call_id in (*never_ran, "cancel-running"):
        assert by_call[call_id]["replyBytes"] is None

    # argumentsDigest: a digest, not the arguments; equal arguments give equal digests.
    digests = {c: e["argumentsDigest"] for c, e in by_call.items()}
    assert all(len(d) == 16 and int(d, 16) >= 0 for d in digests.values())
    assert digests["user-deny"] != digests["timeout"]
    assert digests["timeout"] != digests["cancel-waiting"]
    everything = str(await _entries(mw, limit=1000))
    assert SECRET not in everything

    # Filters: another conversation, no filter, a limit (the newest, oldest first).
    (elsewhere,) = await _entries(mw, conversationId=other)
    assert (elsewhere["decision"], elsewhere["decidedBy"]) == ("allow", "level")
    assert len(await _entries(mw)) == len(replies) + 1
    newest = await _entries(mw, conversationId=conv, limit=2)
    assert [e["callId"] for e in newest] == ["level-big", "cancel-running"]

    # It is kept in the state dir: a restarted daemon lists the same entries.
    await mw.restart()
    assert await _entries(mw, conversationId=conv) == entries


async def test_equal_arguments_give_equal_digests(mw: Harness) -> None:
    await mw.start(document({"k": fake()}))
    conv = await mw.conversation(["k"], level="full_access")
    turn = await mw.begin(conv)
    t_echo = bound(turn, "k")["echo"]
    for call_id, arguments in (
        ("a", {"text": "x", "extra": {"p": 1, "q": [1, 2]}}),
        ("b", {"extra": {"q": [1, 2], "p": 1}, "text": "x"}),  # same, other key order
        ("c", {"text": "y", "extra": {"p": 1, "q": [1, 2]}}),
    ):
        assert text_of(await mw.tool(turn, t_echo, arguments, callId=call_id)) in ("x", "y")
    digests = {e["callId"]: e["argumentsDigest"] for e in await _entries(mw, conversationId=conv)}
    assert digests["a"] == digests["b"]
    assert digests["a"] != digests["c"]


async def test_a_call_is_on_record_before_it_is_sent(mw: Harness) -> None:
    """Issue 14.7: the ``requested`` record exists while the call runs; the outcome completes it."""
    await mw.start(document({"k": fake()}))
    events = await mw.connect(["turn.progress"])
    conv = await mw.conversation(["k"], level="full_access")
    turn = await mw.begin(conv)
    slow = {
        "turnId": turn["turnId"],
        "name": bound(turn, "k")["slow"],
        "arguments": {"seconds": 60},
        "callId": "running",
    }
    async with anyio.create_task_group() as tg:
        call = start_call(tg, mw.c, "turns.callTool", slow)
        # The server reports progress from inside the handler: the call has been sent.
        await wait_event(events, "turn.progress", lambda d: d["callId"] == "running")
        (entry,) = await _entries(mw, conversationId=conv)
        assert (entry["callId"], entry["decision"], entry["decidedBy"]) == (
            "running",
            "requested",
            None,
        )
        assert entry["durationMs"] is None
        await mw.call("turns.cancel", {"turnId": turn["turnId"], "callId": "running"})
        await call.wait()
    (done,) = await _entries(mw, conversationId=conv)
    assert done["id"] == entry["id"]  # the same record, its outcome added
    assert (done["decision"], done["decidedBy"], done["reason"]) == ("allow", "level", "cancelled")


async def test_calls_are_refused_while_the_audit_cannot_be_written(mw: Harness) -> None:
    """Issue 14.7: a full database refuses calls (audit_unavailable) and says why; then recovers."""
    await mw.start(document({"k": fake()}))
    conv = await mw.conversation(["k"], level="full_access")
    turn = await mw.begin(conv)
    echo = bound(turn, "k")["echo"]
    assert not (await mw.tool(turn, echo, {"text": "before"}))["isError"]
    state = mw.d.state_db
    connection = state._db  # the daemon's own connection: the page cap is per connection
    pages = connection.execute("PRAGMA page_count").fetchone()[0]
    connection.execute(f"PRAGMA max_page_count = {pages}")
    # Fill what is left of the last pages, with ever smaller rows, until not even one fits.
    for size in (2000, 200, 20, 0):
        with pytest.raises(AuditUnavailable):  # noqa: PT012 - filling takes a loop
            for _ in range(100_000):
                state.record_request("filler", "t", "c", "s", "x" * size, "n", "d")
    error = await rpc_error(mw.tool(turn, echo, {"text": "during"}, callId="refused"))
    assert (error.code, error.kind) == (-32068, "audit_unavailable")
    assert "cannot write its audit log" in error.message
    assert "full" in error.message
    connection.execute("PRAGMA max_page_count = 1073741823")
    assert not (await mw.tool(turn, echo, {"text": "after"}))["isError"]
    calls = [e["callId"] for e in await _entries(mw, conversationId=conv)]
    assert "refused" not in calls
    assert len(calls) == 2
