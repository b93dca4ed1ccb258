"""MCP Apps, the daemon's part (issue 27, section 1): the extension advertised, each tool's view
reference, apps.view, a view's calls through the model's approvals and audit, its messages as
events, and every bad input refused clearly. Real daemon, real socket, and a fixture server
over real stdio: the SDK-based ``tests/servers/apps_view.py`` where the SDK's side is the subject
(it sees the extension the daemon advertises, or none), elsewhere its stdlib twin
``apps_fake.py`` (the same answers, checked by test_fake_server.py; no second of CPU to import
the SDK).
"""

from typing import Any

import anyio
import pytest

from tests.common import APPS_FAKE, APPS_VIEW, PY, document, text_of
from tests.turn_helpers import (
    EVENT_TIMEOUT,
    Harness,
    approval_for,
    bound,
    mw_fixture,  # noqa: F401  (the mw fixture)
    rpc_error,
    start_call,
    wait_event,
)

pytestmark = pytest.mark.anyio

APPS = {"type": "stdio", "command": PY, "args": [APPS_FAKE]}
SDK_APPS = {"type": "stdio", "command": PY, "args": [APPS_VIEW]}
VIEW = "ui://counter/view.html"


async def _started(
    mw: Harness,
    *,
    apps: bool | None = None,
    level: str = "full_access",
    server: dict[str, Any] = APPS,
) -> str:
    mcp = {} if apps is None else {"mcp": {"apps": apps}}
    # "other" is registered, not selected: a view's call to it is refused before anything
    # starts it.
    await mw.start(document({"apps": server, "other": APPS}, **mcp))
    return await mw.conversation(["apps"], level)


async def _shown(mw: Harness, conversation: str, call_id: str = "show-1") -> dict[str, Any]:
    turn = await mw.begin(conversation)
    names = bound(turn, "apps")
    await mw.tool(turn, names["show_counter"], {"start": 3}, callId=call_id)
    return turn


async def _respond(mw: Harness, request: dict[str, Any], decision: str) -> None:
    await mw.call("approvals.respond", {"approvalId": request["approvalId"], "decision": decision})


async def test_the_extension_is_advertised_and_views_reach_frontends(mw: Harness) -> None:
    conversation = await _started(mw, server=SDK_APPS)
    turn = await mw.begin(conversation)
    names = bound(turn, "apps")
    assert text_of(await mw.tool(turn, names["supports_apps"])) == "apps: yes"
    # A view's tool says so beside its model-facing definition; app-only tools stay hidden.
    show = turn["bindings"][names["show_counter"]]
    assert show["ui"] == {"resourceUri": VIEW, "visibility": ["model", "app"]}
    assert turn["bindings"][names["model_only"]]["ui"]["visibility"] == ["model"]
    assert "bump" not in names
    assert all("bump" not in t["name"] for t in turn["tools"])
    assert "ui" not in turn["bindings"][names["supports_apps"]]
    assert all("ui" not in t and "_meta" not in t for t in turn["tools"])
    # servers.tools (what the turn found) and Test connection show which tools have views.
    listed = {t["name"]: t for t in (await mw.call("servers.tools", {"name": "apps"}))["tools"]}
    assert listed["bump"]["ui"] == {"resourceUri": VIEW, "visibility": ["app"]}
    assert "ui" not in listed["supports_apps"]
    tested = await mw.call("servers.test", {"name": "apps"})
    assert {t["name"]: t.get("ui") for t in tested["tools"]}["show_counter"]["resourceUri"] == VIEW


async def test_with_apps_off_servers_see_no_extension_and_nothing_else_changes(
    mw: Harness,
) -> None:
    conversation = await _started(mw, apps=False, server=SDK_APPS)
    turn = await mw.begin(conversation)
    names = bound(turn, "apps")
    assert text_of(await mw.tool(turn, names["supports_apps"])) == "apps: no"
    assert "bump" in names  # as before MCP Apps: every listed tool is offered
    assert all("ui" not in b for b in turn["bindings"].values())
    await mw.tool(turn, names["show_counter"], callId="c1")
    error = await rpc_error(mw.call("apps.view", {"callId": "c1"}))
    assert error.data["kind"] == "apps_off"


async def test_a_view_is_read_with_its_declarations_input_and_result(mw: Harness) -> None:
    conversation = await _started(mw)
    turn = await _shown(mw, conversation)
    view = await mw.call("apps.view", {"turnId": turn["turnId"], "callId": "show-1"})
    assert view["html"].startswith("<!doctype html>")
    assert view["mimeType"] == "text/html;profile=mcp-app"
    assert (view["server"], view["tool"], view["resourceUri"]) == ("apps", "show_counter", VIEW)
    assert view["csp"] == {"connectDomains": []}
    assert view["prefersBorder"] is True
    assert view["permissions"] is None
    assert view["domain"] is None
    assert view["meta"]["ui"]["prefersBorder"] is True  # _meta kept: views need it
    assert view["toolInput"] == {"arguments": {"start": 3}}
    assert view["toolDefinition"]["description"] == "Show a counter view"
    assert view["toolDefinition"]["inputSchema"]["properties"]["start"]["type"] == "integer"
    assert text_of(view["toolResult"]) == "counter starts at 3"
    # Without the turn: the latest call of that id.
    assert (await mw.call("apps.view", {"callId": "show-1"}))["turnId"] == turn["turnId"]


async def test_a_views_call_takes_the_model_path_and_is_audited_as_the_apps(mw: Harness) -> None:
    conversation = await _started(mw)
    turn = await _shown(mw, conversation)
    asked = {"turnId": turn["turnId"], "callId": "show-1", "server": "apps", "name": "bump"}
    assert text_of(await mw.call("apps.callTool", asked)) == "bumped 1"
    audit = (await mw.call("audit.list", {"conversationId": conversation}))["entries"]
    origins = [(e["tool"], e["origin"], e["decision"]) for e in audit]
    assert ("show_counter", "model", "allow") in origins
    assert ("bump", "app", "allow") in origins


async def test_a_views_call_asks_for_approval_like_the_models(mw: Harness) -> None:
    conversation = await _started(mw, level="request_approval")
    asks = await mw.connect(["approval.requested"])
    turn = await mw.begin(conversation)
    names = bound(turn, "apps")
    asked_show = {"turnId": turn["turnId"], "name": names["show_counter"], "callId": "show-1"}
    async with anyio.create_task_group() as tg:
        shown = start_call(tg, mw.c, "turns.callTool", {**asked_show, "arguments": {}})
        request = await approval_for(asks, turn)
        await _respond(mw, request, "allow")
        await shown.wait()
    bump = {"turnId": turn["turnId"], "callId": "show-1", "server": "apps", "name": "bump"}
    for answer, expected in (("deny", "not approved"), ("allow", "bumped 1")):
        async with anyio.create_task_group() as tg:
            call = start_call(tg, mw.c, "apps.callTool", bump)
            request = await approval_for(asks, turn)
            assert request["tool"] == "bump"
            await _respond(mw, request, answer)
            assert expected in text_of(await call.wait())


async def test_a_view_may_call_only_its_own_servers_tools_for_views(mw: Harness) -> None:
    conversation = await _started(mw)
    turn = await _shown(mw, conversation)
    base = {"turnId": turn["turnId"], "callId": "show-1"}
    for server, name, reason in (
        ("other", "bump", "other_server"),
        ("apps", "model_only", "not_for_app"),
        ("apps", "no_such_tool", "unknown_tool"),
    ):
        error = await rpc_error(mw.call("apps.callTool", {**base, "server": server, "name": name}))
        assert (error.data["kind"], error.data["reason"]) == ("view_call_refused", reason)
    audit = (await mw.call("audit.list", {"conversationId": conversation}))["entries"]
    assert [e["tool"] for e in audit] == ["show_counter"]  # nothing refused reached the server
    error = await rpc_error(mw.call("apps.callTool", {**base, "server": "", "name": "bump"}))
    assert error.data["kind"] == "invalid_params"


@pytest.mark.parametrize(
    ("tool", "reason"),
    [
        ("wrong_mime", "view_wrong_mime_type"),
        ("huge_view", "view_too_large"),
        ("not_ui", "view_not_ui_uri"),
    ],
)
async def test_a_broken_view_is_refused_clearly(mw: Harness, tool: str, reason: str) -> None:
    conversation = await _started(mw)
    turn = await mw.begin(conversation)
    await mw.tool(turn, bound(turn, "apps")[tool], callId="broken")
    error = await rpc_error(mw.call("apps.view", {"callId": "broken"}))
    assert (error.data["kind"], error.data["reason"]) == ("server_unavailable", reason)
    assert tool.split("_")[0] in error.message or "view" in error.message
    assert await mw.call("daemon.status")  # still serving


async def test_unknown_calls_and_bad_params_are_refused(mw: Harness) -> None:
    conversation = await _started(mw)
    turn = await mw.begin(conversation)
    await mw.tool(turn, bound(turn, "apps")["supports_apps"], callId="plain")
    for call_id in ("never", "plain"):  # unknown, and a call whose tool has no view
        error = await rpc_error(mw.call("apps.view", {"callId": call_id}))
        assert error.data["kind"] == "view_not_found"
    error = await rpc_error(mw.call("apps.view", {"callId": 5}))
    assert error.data["kind"] == "invalid_params"


async def test_view_messages_become_events_for_the_conversations_frontends(mw: Harness) -> None:
    conversation = await _started(mw)
    chat = await mw.connect(["app.message", "app.context", "app.openLink"])
    turn = await _shown(mw, conversation)
    base = {"turnId": turn["turnId"], "callId": "show-1"}
    hello = {"type": "text", "text": "hello"}
    assert await mw.call("apps.message", {**base, "content": [hello]}) == {"delivered": True}
    said = await wait_event(chat, "app.message")
    assert (said["conversationId"], said["server"], said["content"]) == (
        conversation,
        "apps",
        [hello],
    )
    await mw.call("apps.updateContext", {**base, "structuredContent": {"count": 2}})
    assert (await wait_event(chat, "app.context"))["structuredContent"] == {"count": 2}
    await mw.call("apps.openLink", {**base, "url": "https://example.com/a"})
    assert (await wait_event(chat, "app.openLink"))["url"] == "https://example.com/a"
    for method, params in (
        ("apps.openLink", {"url": "javascript:alert(1)"}),
        ("apps.openLink", {"url": "file:///etc/passwd"}),
        ("apps.message", {"content": "not blocks"}),
        ("apps.message", {"content": [hello], "role": "assistant"}),
        ("apps.message", {"content": [{"type": "text", "text": "x" * 300_000}]}),
        ("apps.updateContext", {"structuredContent": ["not", "an", "object"]}),
    ):
        error = await rpc_error(mw.call(method, {**base, **params}))
        assert error.data["kind"] == "invalid_params", (method, params)


async def test_a_flood_of_view_requests_is_bounded(mw: Harness) -> None:
    conversation = await _started(mw, level="request_approval")
    asks = await mw.connect(["approval.requested"])
    turn = await mw.begin(conversation)
    names = bound(turn, "apps")
    async with anyio.create_task_group() as tg:
        show = {"turnId": turn["turnId"], "name": names["show_counter"], "callId": "v"}
        shown = start_call(tg, mw.c, "turns.callTool", show)
        request = await approval_for(asks, turn)
        await _respond(mw, request, "allow")
        await shown.wait()
        bump = {"turnId": turn["turnId"], "callId": "v", "server": "apps", "name": "bump"}
        pending = [start_call(tg, mw.c, "apps.callTool", bump) for _ in range(8)]
        for _ in pending:  # all eight wait for a person
            await approval_for(asks, turn)
        error = await rpc_error(mw.call("apps.callTool", bump))
        assert error.data["kind"] == "too_many_view_requests"
        await mw.call("turns.cancel", {"turnId": turn["turnId"]})
        with anyio.fail_after(EVENT_TIMEOUT):
            for call in pending:
                await call.wait()
        await mw.call("turns.end", {"turnId": turn["turnId"]})
    assert await mw.call("daemon.status")


async def test_a_deleted_conversations_views_are_gone(mw: Harness) -> None:
    conversation = await _started(mw)
    await _shown(mw, conversation)
    await mw.call("conversations.delete", {"id": conversation})
    error = await rpc_error(mw.call("apps.view", {"callId": "show-1"}))
    assert error.data["kind"] == "conversation_not_found"


async def test_a_views_call_stops_with_its_conversations_policy_and_life(mw: Harness) -> None:
    conversation = await _started(mw, level="request_approval")
    asks = await mw.connect(["approval.requested"])
    turn = await mw.begin(conversation)
    show = {"turnId": turn["turnId"], "name": bound(turn, "apps")["show_counter"], "callId": "v"}
    bump = {"turnId": turn["turnId"], "callId": "v", "server": "apps", "name": "bump"}
    async with anyio.create_task_group() as tg:
        shown = start_call(tg, mw.c, "turns.callTool", show)
        await _respond(mw, await approval_for(asks, turn), "allow")
        await shown.wait()
        # Deselected while the view's call waits for a person: allowed, it is still not made.
        call = start_call(tg, mw.c, "apps.callTool", bump)
        request = await approval_for(asks, turn)
        await mw.call("conversations.update", {"id": conversation, "mcpServers": ["other"]})
        await _respond(mw, request, "allow")
        assert "removed from this conversation" in text_of(await call.wait())
        await mw.call("conversations.update", {"id": conversation, "mcpServers": ["apps"]})
        # Deleted while it waits: the call ends at once, denied.
        call = start_call(tg, mw.c, "apps.callTool", bump)
        await approval_for(asks, turn)
        await mw.call("conversations.delete", {"id": conversation})
        assert "cancelled" in text_of(await call.wait())


async def test_a_view_is_read_ahead_by_conversation_server_and_uri(mw: Harness) -> None:
    conversation = await _started(mw)
    ahead = {"conversationId": conversation, "server": "apps", "resourceUri": VIEW}
    view = await mw.call("apps.view", ahead)
    assert (view["callId"], view["toolResult"], view["prefersBorder"]) == (None, None, True)
    assert view["html"].startswith("<!doctype html>")
    await _shown(mw, conversation)
    await mw.call("conversations.update", {"id": conversation, "mcpServers": ["other"]})
    error = await rpc_error(mw.call("apps.view", {"callId": "show-1"}))
    assert (error.data["kind"], error.data["reason"]) == ("view_call_refused", "server_gone")
    error = await rpc_error(mw.call("apps.view", ahead))
    assert (error.data["kind"], error.data["reason"]) == ("view_call_refused", "other_server")
    not_ui = {**ahead, "server": "other", "resourceUri": "https://example.com/x.html"}
    error = await rpc_error(mw.call("apps.view", not_ui))
    assert error.data["reason"] == "view_not_ui_uri"
    error = await rpc_error(mw.call("apps.view", {"conversationId": conversation}))
    assert error.data["kind"] == "invalid_params"
