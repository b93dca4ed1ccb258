"""The servers screen and a server's detail page against the shared real daemon.

Each test registers servers under names of its own, opens a fresh app, and checks every step
on screen and, for edits, in the settings file.
"""

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textual")

from mework_client.aio import connect
from mework_ui.app import MeworkApp
from mework_ui.detail import DetailScreen
from mework_ui.dialogs import ImportDialog
from mework_ui.inspection import PromptsPane, ResourcesPane
from mework_ui.options import OptionsScreen
from mework_ui.servers import ServersScreen
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Log, Select, Static, TabbedContent, TextArea

from tests.common import fake
from tests.ui.conftest import UiDaemon
from tests.ui.helpers import (
    add_servers,
    cell,
    entry,
    everything,
    move_to,
    text,
    type_into,
    until,
)

pytestmark = pytest.mark.anyio


async def test_switch_test_edit_tools_and_logs(ui_daemon: UiDaemon) -> None:
    await add_servers(
        ui_daemon.socket,
        {
            "sw-every": everything(env={"TOKEN": "s3cret"}),
            "sw-broken": fake("--exit-at-start", "3"),
        },
    )
    async with connect(ui_daemon.socket) as client:
        await client.call("conversations.create", {"id": "sw-c1", "mcpServers": ["sw-every"]})
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.screen.query_one(DataTable)
        await until(pilot, lambda: cell(table, "sw-broken", "status") == "○ idle")
        await switch_and_test(pilot, app, table, ui_daemon.settings)
        await edit_details(pilot, app, ui_daemon.settings)
        await tools_and_logs(pilot, app, ui_daemon.settings)


async def switch_and_test(
    pilot: Pilot[Any], app: MeworkApp, table: DataTable[Any], settings: Path
) -> None:
    move_to(table, "sw-broken")
    await pilot.press("space")  # enabled switch: written to the file, seen back as an event
    await until(pilot, lambda: cell(table, "sw-broken", "status") == "– disabled")
    assert entry(settings, "sw-broken")["enabled"] is False
    await pilot.press("space")
    await until(pilot, lambda: cell(table, "sw-broken", "on") == "on")
    await pilot.press("t")  # a failing test: the classified reason in the row, stderr below
    await until(pilot, lambda: cell(table, "sw-broken", "status") == "✘ failed: exited")
    assert "kitchen: fatal" in text(app, "#note")
    move_to(table, "sw-every")
    await pilot.press("t")
    await until(pilot, lambda: "✓ mcp-servers/everything" in text(app, "#note"))


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
        pilot, lambda: (entry(settings, "sw-every") or {}).get("description") == "kitchen sink"
    )
    assert "✓ saved" in text(app, "#m-description")
    await type_into(pilot, screen.query_one("#f-timeoutSeconds", Input), "soon")
    assert "✘ a number of seconds" in text(app, "#m-timeoutSeconds")
    await type_into(pilot, screen.query_one("#f-timeoutSeconds", Input), "-5")
    await until(pilot, lambda: "not saved" in text(app, "#m-timeoutSeconds"))
    assert "timeoutSeconds" not in entry(settings, "sw-every")
    assert "mcp-servers/everything" in text(app, "#head")


async def tools_and_logs(pilot: Pilot[Any], app: MeworkApp, settings: Path) -> None:
    await show_tab(pilot, app, "tools")
    tools = app.screen.query_one("#tool-table", DataTable)
    await until(pilot, lambda: "echo" in tools.rows)
    tools.focus()
    move_to(tools, "echo")
    await pilot.press("space")
    await until(pilot, lambda: cell(tools, "echo", "on") == "off")
    assert entry(settings, "sw-every")["disabledTools"] == ["echo"]
    assert "model sees mcp__" in text(app, "#tool-detail")
    move_to(tools, "get-sum")
    await pilot.press("a")
    await until(pilot, lambda: cell(tools, "get-sum", "approval") == "asks every call")
    assert entry(settings, "sw-every")["disabledAutoApproveTools"] == ["get-sum"]
    move_to(tools, "echo")
    await pilot.press("w")  # why would echo be missing from sw-c1's next turn?
    await until(pilot, lambda: "switched off" in text(app, "#why-lines"))
    lines = text(app, "#why-lines")
    assert "✓ selected in this conversation" in lines
    assert app.screen.query_one("#why-conv", Select).value == "sw-c1"
    assert "✘ tool 'echo' switched off" in lines
    assert "✓ the server lists it" in lines
    await pilot.press("escape")
    await show_tab(pilot, app, "logs")
    log = app.screen.query_one(Log)
    stamp = r"\d\d:\d\d:\d\d "  # local time; a line read back does not say whose session
    logged = lambda who: re.compile(f"^{stamp}{who}Starting default", re.M)  # noqa: E731
    await until(pilot, lambda: bool(logged("").search("\n".join(log.lines))))
    await pilot.press("ctrl+t")  # a line as it is written: from the test's session
    await until(pilot, lambda: bool(logged("test: ").search("\n".join(log.lines))))


async def show_tab(pilot: Pilot[Any], app: MeworkApp, tab: str) -> None:
    """A tab's content is made when it is first shown."""
    app.screen.query_one(TabbedContent).active = tab
    await until(pilot, lambda: bool(app.screen.query(f"#{tab} Pane")))


async def test_prompts_and_resources(ui_daemon: UiDaemon) -> None:
    """Listed from a test connection; a prompt filled and got, a resource read."""
    await add_servers(ui_daemon.socket, {"in-every": everything()})
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "in-every" in app.model.servers)
        app.push_screen(DetailScreen("in-every", "prompts"))
        await until(pilot, lambda: bool(app.screen.query(PromptsPane)))
        await pilot.press("ctrl+t")
        pane = app.screen.query_one(PromptsPane)
        prompts = pane.query_one(DataTable)
        await until(pilot, lambda: "args-prompt" in prompts.rows)
        assert cell(prompts, "args-prompt", "args") == "city*, state"
        prompts.focus()
        move_to(prompts, "args-prompt")
        await pilot.press("enter")
        labels = [str(label.render()) for label in pane.query(".form Static").results(Static)]
        assert labels == ["city *", "state"]  # beside each field: a placeholder goes on typing
        out = lambda: str(pane.query_one(".out", Static).render())  # noqa: E731
        await pilot.press("ctrl+g")  # city is required: the server's refusal, said in place
        await until(pilot, lambda: out().startswith("✘ ") and "Invalid arguments" in out())
        await type_into(pilot, pane.query_one(".form Input", Input), "Oslo")
        await until(pilot, lambda: "user: What's weather in Oslo?" in out())
        await show_tab(pilot, app, "resources")
        pane_r = app.screen.query_one(ResourcesPane)
        resources = pane_r.query_one(DataTable)
        await until(pilot, lambda: resources.row_count > 0)
        resources.focus()
        await pilot.press("enter")
        out_r = lambda: str(pane_r.query_one(".out", Static).render())  # noqa: E731
        await until(pilot, lambda: out_r() not in ("… reading", "Enter on a row to read it"))
        assert not out_r().startswith("✘")
        template = "demo://resource/dynamic/text/{resourceId}"
        move_to(resources, template)  # a template's URI is edited first, then read
        await pilot.press("enter")
        await until(pilot, lambda: "fill in its {variables}" in out_r())
        uri = pane_r.query_one("#r-uri", Input)
        assert uri.value == template
        await type_into(pilot, uri, "demo://resource/dynamic/text/1")
        await until(pilot, lambda: out_r() != "… reading" and "{variables}" not in out_r())
        assert not out_r().startswith("✘"), out_r()
        resources.clear(columns=True)  # as between the pane's compose and its on_mount:
        app.refresh_views()  # a redraw then must wait for the columns, not crash the app


async def test_import_and_add(ui_daemon: UiDaemon) -> None:
    settings = ui_daemon.settings
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.model.online)
        await pilot.press("a")
        await pilot.press("down", "enter")  # Add▾ → Import from JSON
        await until(pilot, lambda: isinstance(app.screen, ImportDialog))
        area = app.screen.query_one(TextArea)
        area.text = '{"mcpServers": {"im-docs": {"url": "http://127.0.0.1:9/mcp"}}, '
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "not valid JSON at line 1" in text(app, "#report"))
        area.text = '{"mcpServers": {"im-docs": {"url": "http://127.0.0.1:9/mcp"}}}'
        await pilot.press("ctrl+e")
        await until(pilot, lambda: "would be added: im-docs" in text(app, "#report"))
        assert entry(settings, "im-docs") is None
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "added: im-docs" in text(app, "#report"))
        assert entry(settings, "im-docs")["url"] == "http://127.0.0.1:9/mcp"
        await pilot.press("escape", "a", "enter")  # Add▾ → Add server: an empty detail page
        await until(pilot, lambda: isinstance(app.screen, DetailScreen))
        await type_into(pilot, app.screen.query_one("#f-name", Input), "im-clock")
        assert "draft" in text(app, "#m-name")
        await type_into(pilot, app.screen.query_one("#f-command", Input), "mcp-server-time")
        await until(pilot, lambda: entry(settings, "im-clock") is not None)
        assert entry(settings, "im-clock")["command"] == "mcp-server-time"
        await until(pilot, lambda: text(app, "#m-command") == "✓ saved")
        assert text(app, "#m-name") == "✓ saved"  # no longer a draft
        await pilot.press("escape")
        table = app.screen.query_one(DataTable)
        await until(
            pilot, lambda: "im-clock" in table.rows and isinstance(app.screen, ServersScreen)
        )


async def test_mcp_options_saved_on_change(ui_daemon: UiDaemon) -> None:
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.model.online)
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, OptionsScreen))
        field = app.screen.query_one("#o-question_timeout_seconds", Input)
        await until(pilot, lambda: field.value == "600")
        assert app.screen.query_one("#o-max_live_sessions", Input).value == "64"
        await type_into(pilot, field, "soon")
        assert text(app, "#m-question_timeout_seconds") == "✘ a number, e.g. 600 (not saved)"
        await type_into(pilot, field, "-1")  # the daemon's range check, said beside the field
        await until(pilot, lambda: "not saved" in text(app, "#m-question_timeout_seconds"))
        assert "question_timeout_seconds" in text(app, "#m-question_timeout_seconds")
        await type_into(pilot, field, "601")
        await until(pilot, lambda: text(app, "#m-question_timeout_seconds") == "✓ saved")
        mcp = json.loads(ui_daemon.settings.read_text())["mcp"]
        assert mcp["question_timeout_seconds"] == 601
