"""The terminal UI against a real daemon on a temporary socket, with real fixture servers.

One daemon for the module's scenario (kept lean): the steps a person takes, in order, each
checked on screen and, for edits, in the settings file.
"""

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("textual")

from mework_client.aio import AsyncClient, connect
from mework_ui.app import MeworkApp
from mework_ui.detail import DetailScreen
from mework_ui.dialogs import ImportDialog
from mework_ui.inspection import PromptsPane, ResourcesPane
from mework_ui.questions import QuestionScreen
from mework_ui.servers import ServersScreen
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Log, Static, TabbedContent, TextArea

from tests.daemon_helpers import kitchen, start_daemon
from tests.ui.helpers import cell, move_to, until

pytestmark = pytest.mark.anyio

SERVERS = {
    "kitchen": kitchen("--stderr-lines", "2", env={"TOKEN": "s3cret"}),
    "broken": kitchen("--exit-at-start", "3"),
}


def entry(settings: Path, name: str) -> Any:
    return json.loads(settings.read_text())["assets"]["mcpServers"].get(name)


def text(app: MeworkApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def test_a_person_manages_servers(short_tmp: Path) -> None:
    settings = short_tmp / "settings.json"
    async with start_daemon(short_tmp, SERVERS) as daemon:
        app = MeworkApp(str(daemon.socket))
        async with app.run_test(size=(80, 24)) as pilot:
            table = app.screen.query_one(DataTable)
            await until(pilot, lambda: cell(table, "broken", "status") == "○ idle")
            await switch_and_test(pilot, app, table, settings)
            await edit_details(pilot, app, settings)
            await tools_and_logs(pilot, app, settings)
            await pilot.press("escape")
            await import_and_add(pilot, app, settings)
            async with connect(daemon.socket) as other:
                await answer_approvals(pilot, app, other)


async def switch_and_test(
    pilot: Pilot[Any], app: MeworkApp, table: DataTable[Any], settings: Path
) -> None:
    move_to(table, "broken")
    await pilot.press("space")  # enabled switch: written to the file, seen back as an event
    await until(pilot, lambda: cell(table, "broken", "status") == "– disabled")
    assert entry(settings, "broken")["enabled"] is False
    await pilot.press("space")
    await until(pilot, lambda: cell(table, "broken", "on") == "on")
    await pilot.press("t")  # a failing test: the classified reason in the row, stderr below
    await until(pilot, lambda: cell(table, "broken", "status") == "✘ failed: exited")
    assert "kitchen: fatal" in text(app, "#note")
    move_to(table, "kitchen")
    await pilot.press("t")
    await until(pilot, lambda: "✓ kitchen 1.0.0" in text(app, "#note"))


async def edit_details(pilot: Pilot[Any], app: MeworkApp, settings: Path) -> None:
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, DetailScreen))
    screen = app.screen
    env = screen.query_one("#f-env", Input)
    await until(pilot, lambda: env.value == "TOKEN=s3cret")
    assert env.password  # masked until revealed
    await pilot.press("ctrl+r")
    assert not env.password
    await type_into(pilot, screen.query_one("#f-description", Input), "kitchen sink")
    await until(
        pilot, lambda: (entry(settings, "kitchen") or {}).get("description") == "kitchen sink"
    )
    assert "✓ saved" in text(app, "#m-description")
    await type_into(pilot, screen.query_one("#f-timeoutSeconds", Input), "soon")
    assert "✘ a number of seconds" in text(app, "#m-timeoutSeconds")
    await type_into(pilot, screen.query_one("#f-timeoutSeconds", Input), "-5")
    await until(pilot, lambda: "not saved" in text(app, "#m-timeoutSeconds"))
    assert "timeoutSeconds" not in entry(settings, "kitchen")
    assert "kitchen 1.0.0" in text(app, "#head")


async def type_into(pilot: Pilot[Any], field: Input, value: str) -> None:
    field.focus()
    field.value = value
    await pilot.press("enter")


async def tools_and_logs(pilot: Pilot[Any], app: MeworkApp, settings: Path) -> None:
    app.screen.query_one(TabbedContent).active = "tools"
    tools = app.screen.query_one("#tool-table", DataTable)
    await until(pilot, lambda: "echo" in tools.rows)
    assert cell(tools, "interactive_true", "approval") == "⚑ asks every call (server)"
    tools.focus()
    move_to(tools, "echo")
    await pilot.press("space")
    await until(pilot, lambda: cell(tools, "echo", "on") == "off")
    assert entry(settings, "kitchen")["disabledTools"] == ["echo"]
    assert "model sees mcp__kitchen_" in text(app, "#tool-detail")
    move_to(tools, "add")
    await pilot.press("a")
    await until(pilot, lambda: cell(tools, "add", "approval") == "asks every call")
    assert entry(settings, "kitchen")["disabledAutoApproveTools"] == ["add"]
    await prompts_and_resources(pilot, app)
    app.screen.query_one(TabbedContent).active = "logs"
    log = app.screen.query_one(Log)
    await until(pilot, lambda: "stderr line" in "\n".join(log.lines))


async def prompts_and_resources(pilot: Pilot[Any], app: MeworkApp) -> None:
    """Listed from the test; reading one works where the daemon offers it, else it says so."""
    app.screen.query_one(TabbedContent).active = "prompts"
    pane = app.screen.query_one(PromptsPane)
    prompts = pane.query_one(DataTable)
    await until(pilot, lambda: "greet" in prompts.rows)
    assert cell(prompts, "greet", "args") == "name*"
    prompts.focus()
    await pilot.press("enter")
    await type_into(pilot, pane.query_one(".form Input", Input), "Ada")
    out = lambda: str(pane.query_one(".out", Static).render())  # noqa: E731
    # Today's daemon says method_not_found (said in words); with servers.getPrompt, the text.
    await until(pilot, lambda: "user: Hello, Ada!" in out() or "cannot get prompts" in out())
    app.screen.query_one(TabbedContent).active = "resources"
    pane_r = app.screen.query_one(ResourcesPane)
    resources = pane_r.query_one(DataTable)
    assert [k.value for k in resources.rows] == ["mem://hello", "mem://item/{id}"]
    resources.focus()
    await pilot.press("enter")
    out_r = lambda: str(pane_r.query_one(".out", Static).render())  # noqa: E731
    await until(
        pilot, lambda: "hello from kitchen" in out_r() or "cannot read resources" in out_r()
    )


async def import_and_add(pilot: Pilot[Any], app: MeworkApp, settings: Path) -> None:
    await pilot.press("a")
    await pilot.press("down", "enter")  # Add▾ → Import from JSON
    await until(pilot, lambda: isinstance(app.screen, ImportDialog))
    area = app.screen.query_one(TextArea)
    area.text = '{"mcpServers": {"docs": {"url": "http://127.0.0.1:9/mcp"}}, '
    await pilot.press("ctrl+s")
    await until(pilot, lambda: "not valid JSON at line 1" in text(app, "#report"))
    area.text = '{"mcpServers": {"docs": {"url": "http://127.0.0.1:9/mcp"}}}'
    await pilot.press("ctrl+e")  # a preview where the daemon has dryRun; said when it has not
    preview = ("would be added: docs", "cannot preview")
    await until(pilot, lambda: any(word in text(app, "#report") for word in preview))
    assert entry(settings, "docs") is None
    await pilot.press("ctrl+s")
    await until(pilot, lambda: "added: docs" in text(app, "#report"))
    assert entry(settings, "docs")["url"] == "http://127.0.0.1:9/mcp"
    await pilot.press("escape", "a", "enter")  # Add▾ → Add server: an empty detail page
    await until(pilot, lambda: isinstance(app.screen, DetailScreen))
    await type_into(pilot, app.screen.query_one("#f-name", Input), "clock")
    assert "draft" in text(app, "#m-name")
    await type_into(pilot, app.screen.query_one("#f-command", Input), "mcp-server-time")
    await until(pilot, lambda: entry(settings, "clock") is not None)
    assert entry(settings, "clock")["command"] == "mcp-server-time"
    await pilot.press("escape")
    table = app.screen.query_one(DataTable)
    await until(pilot, lambda: "clock" in table.rows and isinstance(app.screen, ServersScreen))


async def answer_approvals(pilot: Pilot[Any], app: MeworkApp, other: AsyncClient) -> None:
    conv = await other.call("conversations.create", {"id": "c1", "mcpServers": ["kitchen"]})
    turn = await other.call("turns.begin", {"conversationId": conv["id"]})
    add = next(n for n, b in turn["bindings"].items() if b["tool"] == "add")
    results: list[Any] = []

    async def call() -> None:
        params = {"turnId": turn["turnId"], "name": add, "arguments": {"a": 1, "b": 2}}
        results.append(await other.call("turns.callTool", params))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await until(pilot, lambda: len(app.model.questions) == 1)
        assert "⚑ 1 question" in text(app, "#topbar")  # announced, focus not taken
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, QuestionScreen))
        assert json.loads(app.screen.query_one("#q-args", TextArea).text) == {"a": 1, "b": 2}
        assert "asks every call" in text(app, "#q-head")
        await pilot.press("n", *"too big", "enter")
        await until(pilot, lambda: len(results) == 1)
    assert results[0]["isError"]
    assert "too big" in json.dumps(results[0])
    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await until(pilot, lambda: len(app.model.questions) == 1)
        await pilot.press("f4", "y")
        await until(pilot, lambda: len(results) == 2)
    assert not results[1]["isError"]
    async with anyio.create_task_group() as tg:  # first answer wins: answered elsewhere
        tg.start_soon(call)
        await until(pilot, lambda: len(app.model.questions) == 1)
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, QuestionScreen))
        (approval_id,) = app.model.questions
        await other.call("approvals.respond", {"approvalId": approval_id, "decision": "allow"})
        await until(pilot, lambda: not isinstance(app.screen, QuestionScreen))
    assert not app.model.questions


async def test_says_when_meworkd_restarts_and_reconnects(short_tmp: Path) -> None:
    app = MeworkApp(str(short_tmp / "run" / "d.sock"))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "retrying" in text(app, "#topbar"))  # no daemon yet
        async with start_daemon(short_tmp, {"kitchen": kitchen()}):
            table = app.screen.query_one(DataTable)
            await until(pilot, lambda: app.model.online and table.row_count == 1)
            assert "● connected" in text(app, "#topbar")
        await until(pilot, lambda: "retrying" in text(app, "#topbar"))
        assert not app.model.online
        async with start_daemon(short_tmp):  # restarted on the same socket and settings
            await until(pilot, lambda: app.model.online)
            assert "● connected" in text(app, "#topbar")
            assert list(table.rows) == ["kitchen"] or [r.value for r in table.rows] == ["kitchen"]
            await answer_a_form(pilot, app)


async def answer_a_form(pilot: Pilot[Any], app: MeworkApp) -> None:
    """An elicitation as the daemon's event would bring it; this daemon may not answer yet."""
    schema = {
        "type": "object",
        "properties": {"age": {"type": "integer", "title": "Age"}, "nick": {"type": "string"}},
        "required": ["age"],
    }
    request = {"elicitationId": "e1", "server": "kitchen", "message": "Who are you?"}
    await app.model.on_event("elicitation.requested", {**request, "requestedSchema": schema})
    await pilot.press("f4")
    await until(pilot, lambda: isinstance(app.screen, QuestionScreen))
    assert "Who are you?" in text(app, "#q-head")
    assert "Age *" in "\n".join(str(w.render()) for w in app.screen.query("#q-form Static"))
    await type_into(pilot, app.screen.query_one("#e-age", Input), "42")
    await pilot.press("ctrl+s")  # sent; answered by another frontend meanwhile
    await app.model.on_event("elicitation.resolved", {"elicitationId": "e1"})
    await until(pilot, lambda: not isinstance(app.screen, QuestionScreen))
