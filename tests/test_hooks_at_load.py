"""PermissionRequest hooks are read when the settings load: a malformed one is reported with the
settings (settings.get ``errors``, the settings.invalid event) and fails closed, so a call it may
have concerned is asked of the user even when a valid hook would allow it."""

from typing import Any

import anyio
import pytest

from meworkd.settings import Settings, parse_settings
from tests.turn_helpers import (
    Harness,
    approval_for,
    bound,
    counting,
    document,
    hook_runs,
    mw_fixture,  # noqa: F401  (the mw fixture)
    permission_hooks,
    start_call,
    text_of,
    wait_event,
    write_hook,
)

UNSUPPORTED = (
    "hooks.PermissionRequest[1].hooks[0].async: not supported by meworkd, the hook is skipped"
)


def _hooks(*groups: object) -> dict[str, Any]:
    return {"hooks": {"PermissionRequest": list(groups)}}


def _group(matcher: object, **hook: object) -> dict[str, Any]:
    return {"matcher": matcher, "hooks": [{"type": "command", "command": "true", **hook}]}


# --- parsed at load (pure) ---------------------------------------------------------------------


def test_valid_hooks_are_compiled_with_the_settings() -> None:
    settings = parse_settings(_hooks(_group("^mcp__k_"), _group("Bash|mcp__x", command="b")))
    assert settings.errors == ()
    assert settings.hooks.errors == ()
    assert [h.command for h in settings.hooks.select("mcp__k_1__echo__2")] == ["true"]
    assert [h.command for h in settings.hooks.select("mcp__x")] == ["b"]
    assert settings.hooks.select("Write") == []
    assert not settings.hooks.unreadable_for("mcp__k_1__echo__2")


def test_a_malformed_hook_is_a_settings_error_where_its_matcher_applies() -> None:
    settings = parse_settings(_hooks(_group("^mcp__k_"), _group("^mcp__k_", **{"async": True})))
    assert settings.errors == (UNSUPPORTED,)
    assert settings.hooks.errors == (UNSUPPORTED,)
    # The valid group still runs; the malformed one is left out but remembered where it applies.
    assert [h.command for h in settings.hooks.select("mcp__k_1__echo__2")] == ["true"]
    assert settings.hooks.unreadable_for("mcp__k_1__echo__2")
    assert not settings.hooks.unreadable_for("mcp__other_1__echo__2")


@pytest.mark.parametrize(
    ("doc", "error"),
    [
        (_hooks(_group("(")), "hooks.PermissionRequest[0].matcher: invalid regular expression"),
        (_hooks(_group(3)), "hooks.PermissionRequest[0].matcher: expected a string"),
        (_hooks("x"), "hooks.PermissionRequest[0]: expected an object"),
        ({"hooks": {"PermissionRequest": {}}}, "hooks.PermissionRequest: expected a list"),
        ({"hooks": []}, "hooks: expected an object"),
    ],
)
def test_an_unreadable_matcher_concerns_every_tool(doc: dict[str, Any], error: str) -> None:
    settings = parse_settings(doc)
    assert len(settings.errors) == 1
    assert settings.errors[0].startswith(error)
    assert settings.hooks.select("anything") == []
    assert settings.hooks.unreadable_for("anything")


def test_hooks_fail_closed_rather_than_keep_the_previous_ones() -> None:
    good = parse_settings(_hooks(_group("")))
    broken = parse_settings(_hooks(_group("", timeout=0)), previous=good)
    assert broken.hooks.select("t") == []
    assert broken.hooks.unreadable_for("t")
    assert parse_settings({}, previous=broken).hooks == Settings().hooks


# --- a real daemon and a real hook -------------------------------------------------------------


@pytest.mark.anyio
async def test_a_malformed_hook_is_reported_and_its_calls_ask(mw: Harness) -> None:
    hooks_dir = mw.root / "hooks"
    script = write_hook(hooks_dir)
    hooks = permission_hooks("^mcp__k_", script)
    broken = {"matcher": "^mcp__k_", "hooks": [{"type": "command", "command": str(script)}]}
    broken["hooks"][0]["async"] = True  # type: ignore[index]
    hooks["PermissionRequest"].append(broken)
    await mw.start(document({"k": counting()}, hooks=hooks))

    assert (await mw.call("settings.get"))["errors"] == [UNSUPPORTED]
    events = await mw.connect(["settings.invalid", "approval.requested"])
    await mw.call("settings.reload")
    invalid = await wait_event(events, "settings.invalid")
    assert invalid["errors"] == [UNSUPPORTED]

    conv = await mw.conversation(["k"], level="request_approval")
    turn = await mw.begin(conv)
    echo = bound(turn, "k")["echo"]

    # The valid hook allows, but the malformed one may have denied: the user is asked.
    async with anyio.create_task_group() as tg:
        arguments = {"text": "asked", "hook": "allow"}
        call = start_call(
            tg,
            mw.c,
            "turns.callTool",
            {"turnId": turn["turnId"], "name": echo, "arguments": arguments},
        )
        request = await approval_for(events, turn, echo)
        assert request["hookMayDecide"] is True
        await mw.call(
            "approvals.respond", {"approvalId": request["approvalId"], "decision": "allow"}
        )
        result = await call.wait()
    assert text_of(result) == "asked"
    assert len(hook_runs(hooks_dir)) == 1  # the valid hook ran; its allow was not enough
    entries = (await mw.call("audit.list", {"conversationId": conv}))["entries"]
    assert (entries[-1]["decision"], entries[-1]["decidedBy"]) == ("allow", "user")

    # A valid hook's deny still denies, without asking.
    denied = await mw.tool(turn, echo, {"text": "x", "hook": "deny"})
    assert denied["isError"] is True
    assert "the hook says no" in text_of(denied)

    # Fixed by hand: nothing is reported any more, and the hook's allow runs the call.
    await mw.edit_settings(lambda doc: doc["hooks"]["PermissionRequest"].pop())
    assert (await mw.call("settings.get"))["errors"] == []
    allowed = await mw.tool(turn, echo, {"text": "hooked", "hook": "allow"})
    assert text_of(allowed) == "hooked"
    entries = (await mw.call("audit.list", {"conversationId": conv}))["entries"]
    assert (entries[-1]["decision"], entries[-1]["decidedBy"]) == ("allow", "hook")
