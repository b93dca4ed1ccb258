"""What a newcomer meets first in the UI (issue 25.8): q quits, a daemon that is not running is
said with how to start it (not "No servers yet"), an empty Logs tab says there is nothing yet,
a conversation's "why missing" is about the servers it selects, each once, t shows that it
tests, then the outcome, and a field's refusal or a draft's notice goes once no longer true.
"""

from pathlib import Path

import pytest
from mework_client.aio import connect

pytest.importorskip("textual")

from mework_ui.app import MeworkApp
from mework_ui.detail import DetailScreen
from mework_ui.servers import ServersScreen
from textual.widgets import DataTable, Input, Switch

from tests.ui.conftest import UiDaemon
from tests.ui.helpers import (
    EVERYTHING,
    add_servers,
    cell,
    everything,
    move_to,
    open_conversation,
    open_server,
    text,
    until,
)

pytestmark = pytest.mark.anyio


async def test_q_quits_where_no_text_field_has_focus(ui_daemon: UiDaemon) -> None:
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.model.online)
        await pilot.press("a", "enter")  # Add▾ → Add a server: its name field has focus
        await until(pilot, lambda: isinstance(app.screen, DetailScreen))
        field = app.screen.focused
        assert isinstance(field, Input)
        await pilot.press("q")
        assert "q" in field.value  # typed, not quit
        assert app.is_running
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ServersScreen))
        await pilot.press("q")
        await until(pilot, lambda: app.return_code is not None)
    assert app.return_code == 0


async def test_while_meworkd_is_down_the_screen_says_how_to_start_it(tmp_path: Path) -> None:
    app = MeworkApp(str(tmp_path / "no-daemon.sock"))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "meworkd is not running" in text(app, "#note"))
        note = text(app, "#note")
        assert "Start it with: meworkd" in note
        assert "No servers yet" not in note


async def test_an_empty_logs_tab_says_there_is_nothing_yet(ui_daemon: UiDaemon) -> None:
    await add_servers(ui_daemon.socket, {"nc-quiet": everything()})
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.screen.query_one(DataTable)
        await until(pilot, lambda: "nc-quiet" in table.rows)
        move_to(table, "nc-quiet")
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, DetailScreen))
        await until(pilot, lambda: "Nothing on stderr yet" in text(app, "#log-note"))


async def test_why_missing_lists_only_the_selected_servers_each_once(ui_daemon: UiDaemon) -> None:
    await add_servers(ui_daemon.socket, {"nc-sel": everything(), "nc-other": everything()})
    async with connect(ui_daemon.socket) as client:
        await client.call("conversations.create", {"id": "nc-c1", "mcpServers": ["nc-sel"]})
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(100, 40)) as pilot:
        await until(pilot, lambda: "nc-other" in app.model.servers)
        await open_conversation(pilot, app, "nc-c1")
        why = text(app, "#why")
        assert why.count("nc-sel") == 1, why
        assert "nc-other" not in why


async def test_t_on_a_failing_server_shows_testing_then_the_outcome(ui_daemon: UiDaemon) -> None:
    # A server that never answers: each Test connection takes its one-second timeout.
    mute = {"type": "stdio", "command": "sh", "args": ["-c", "sleep 60"], "timeoutSeconds": 1}
    await add_servers(ui_daemon.socket, {"nc-mute": mute})
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.screen.query_one(DataTable)
        await until(pilot, lambda: "nc-mute" in table.rows)
        move_to(table, "nc-mute")
        for _ in range(2):  # the second time, on a server that is failing already
            await pilot.press("t")
            await until(pilot, lambda: cell(table, "nc-mute", "status") == "… testing")
            assert text(app, "#note") == "… testing nc-mute (Test connection)"
            await until(pilot, lambda: "nc-mute" not in app.model.testing)
            assert cell(table, "nc-mute", "status") == "✘ failed: timeout"
            note = text(app, "#note")
            assert note.startswith("Test connection at "), note
            assert "✘ timeout" in note


async def test_a_fields_refusal_goes_when_the_field_becomes_valid(ui_daemon: UiDaemon) -> None:
    await add_servers(ui_daemon.socket, {"nc-field": everything(timeoutSeconds=60)})
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(100, 40)) as pilot:
        await open_server(pilot, app, "nc-field")
        field = app.screen.query_one("#f-timeoutSeconds", Input)
        await until(pilot, lambda: field.value == "60")
        field.focus()
        field.value = "soon"
        await pilot.press("enter")
        await until(pilot, lambda: "(not saved)" in text(app, "#m-timeoutSeconds"))
        field.value = "90"  # valid now, not yet committed
        await until(pilot, lambda: text(app, "#m-timeoutSeconds") == "")
        field.value = "soon"
        await pilot.press("enter")
        await until(pilot, lambda: "(not saved)" in text(app, "#m-timeoutSeconds"))
        field.value = "60"  # back to what is saved
        await until(pilot, lambda: text(app, "#m-timeoutSeconds") == "")


async def test_a_drafts_notice_goes_once_the_entry_is_saved(ui_daemon: UiDaemon) -> None:
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(100, 40)) as pilot:
        await until(pilot, lambda: app.model.online)
        await pilot.press("a", "enter")  # Add▾ → Add a server
        await until(pilot, lambda: isinstance(app.screen, DetailScreen))
        screen = app.screen
        command = screen.query_one("#f-command", Input)
        command.focus()
        command.value = EVERYTHING
        await pilot.press("enter")
        await until(pilot, lambda: "draft" in text(app, "#m-command"))
        screen.query_one("#f-longRunning", Switch).value = True  # a switch in the draft too
        await until(pilot, lambda: "draft" in text(app, "#m-longRunning"))
        name = screen.query_one("#f-name", Input)
        name.focus()
        name.value = "nc-drafted"
        await pilot.press("enter")
        await until(pilot, lambda: "nc-drafted" in app.model.servers)
        await until(pilot, lambda: text(app, "#m-name") == "✓ saved")
        notes = [str(m.render()) for m in screen.query(".msg")]
        assert not [n for n in notes if "draft" in n], notes
        assert text(app, "#m-longRunning") == "on"
        assert app.model.servers["nc-drafted"]["longRunning"] is True
