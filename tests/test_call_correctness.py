"""A duplicate callId, the hooks' permission_mode, a lone surrogate in a request (issue 14.9).

All against the real daemon on its real socket, with the kitchen server and a real hook script.
The duplicate callId case runs on both call paths (meworkd's own pipe path and the SDK's; see
tests/test_call_paths.py, which has the rest of issue 19.5's cases).
"""

import anyio
import pytest

from tests.common import fake
from tests.daemon_fixture import raw_session
from tests.test_call_paths import path  # noqa: F401  (the path fixture: both call paths)
from tests.turn_helpers import (
    Harness,
    bound,
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


@pytest.mark.usefixtures("path")
async def test_a_duplicate_call_id_is_refused_and_cancel_and_end_still_work(mw: Harness) -> None:
    await mw.start(document({"k": fake()}))
    events = await mw.connect(["turn.progress"])
    conv = await mw.conversation(["k"], level="full_access")
    turn = await mw.begin(conv)
    slow = {
        "turnId": turn["turnId"],
        "name": bound(turn, "k")["slow"],
        "arguments": {"seconds": 60},
        "callId": "same",
    }
    async with anyio.create_task_group() as tg:
        first = start_call(tg, mw.c, "turns.callTool", slow)
        await wait_event(events, "turn.progress", lambda d: d["callId"] == "same")
        error = await rpc_error(mw.call("turns.callTool", slow))
        assert (error.code, error.kind) == (-32061, "duplicate_call_id")
        assert "same" in error.message
        # The first call still answers to its callId...
        cancelled = await mw.call("turns.cancel", {"turnId": turn["turnId"], "callId": "same"})
        assert cancelled == {"cancelled": 1}
        assert text_of(await first.wait()) == "The call was cancelled."
        # ... and, once it is over, the id is free again; turns.end reaches the call.
        second = start_call(tg, mw.c, "turns.callTool", slow)
        await wait_event(events, "turn.progress", lambda d: d["callId"] == "same")
        await rpc_error(mw.call("turns.callTool", slow))
        assert await mw.call("turns.end", {"turnId": turn["turnId"]}) == {"ended": turn["turnId"]}
        assert text_of(await second.wait()) == "The call was cancelled."


async def test_hooks_get_claude_codes_permission_mode_and_meworkds_level(mw: Harness) -> None:
    hooks_dir = mw.root / "hooks"
    script = write_hook(hooks_dir)
    # Auto-approve off: the hook runs at every level, full_access included.
    server = fake(disabledAutoApproveTools=["echo"])
    await mw.start(document({"k": server}, hooks=permission_hooks("^mcp__k_", script)))
    levels = {
        "request_approval": "default",
        "allow_edits": "acceptEdits",
        "plan": "plan",
        "full_access": "bypassPermissions",
    }
    for level in levels:
        turn = await mw.begin(await mw.conversation(["k"], level=level))
        reply = await mw.tool(turn, bound(turn, "k")["echo"], {"text": level, "hook": "deny"})
        assert reply["isError"] is True
    seen = {r["approval_level"]: r["permission_mode"] for r in hook_runs(hooks_dir)}
    assert seen == levels


@pytest.mark.parametrize(
    ("escape", "detail"),
    [
        ("\\ud800", "lone UTF-16 surrogate"),  # a high surrogate, then the string ends
        ("\\udc00x", "lone UTF-16 surrogate"),  # a low one on its own
        ("\\ud800\\u0041", "lone UTF-16 surrogate"),  # a high one with no low one after it
    ],
)
async def test_a_lone_surrogate_is_a_parse_error_that_says_so(
    mw: Harness, escape: str, detail: str
) -> None:
    await mw.start(document({}))
    line = (
        '{"jsonrpc":"2.0","id":1,"method":"conversations.create","params":{"id":"' + escape + '"}}'
    )
    async with raw_session(mw.paths.socket) as raw:
        reply = await raw.exchange(line.encode() + b"\n")
        assert reply["error"]["code"] == -32700, reply
        assert reply["error"]["data"]["kind"] == "parse_error"
        assert detail in reply["error"]["data"]["detail"], reply
        # A proper pair is text like any other.
        pair = line.replace(escape, "\\ud83d\\ude00")
        created = await raw.exchange(pair.encode() + b"\n")
        assert created["result"]["id"] == "😀", created
