"""SVG snapshots of the main screens at 80×24, against one real meworkd process.

``snap_compare`` runs the app in an event loop of its own, so the daemon is a separate process
(started once for the module). Nothing machine-specific is on these screens: no paths, clocks
or revealed secrets.
"""

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("textual")

from mework_client import Client
from mework_ui.app import MeworkApp
from mework_ui.conversations import ConversationsScreen
from mework_ui.detail import DetailScreen
from mework_ui.dialogs import ImportDialog
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static, TextArea

from tests.ui.conftest import meworkd_process
from tests.ui.helpers import until

DOCUMENT = {
    "assets": {
        "mcpServers": {
            "time": {
                "command": "mcp-server-time",
                "description": "Time and time zones",
                "env": {"API_TOKEN": "s3cret-token"},
            },
            "docs": {
                "type": "streamable_http",
                "url": "http://127.0.0.1:9/mcp",
                "enabled": False,
                "headers": {"Authorization": "Bearer abc"},
            },
            "scratch": {"type": "stdio"},
        }
    }
}


@pytest.fixture(scope="module")
def socket_path() -> Iterator[str]:
    with meworkd_process(DOCUMENT) as daemon:
        with Client(daemon.socket) as client:
            client.call("conversations.create", {"id": "c1", "mcpServers": ["time"]})
        yield str(daemon.socket)


async def listed(pilot: Pilot[Any]) -> None:
    table = pilot.app.screen.query_one(DataTable)
    await until(
        pilot, lambda: table.row_count == 3 and "connected" in str(pilot.app.model.connection)
    )
    table.move_cursor(row=table.get_row_index("scratch"))
    await pilot.pause()


def test_servers_screen(snap_compare: Any, socket_path: str) -> None:
    assert snap_compare(MeworkApp(socket_path), terminal_size=(80, 24), run_before=listed)


def test_detail_screen(snap_compare: Any, socket_path: str) -> None:
    async def opened(pilot: Pilot[Any]) -> None:
        await listed(pilot)
        pilot.app.push_screen(DetailScreen("time"))
        await until(pilot, lambda: pilot.app.screen.query("#f-env Input, Input#f-env"))
        field = pilot.app.screen.query_one("#f-env", Input)
        await until(pilot, lambda: field.value.startswith("API_TOKEN="))
        await pilot.pause()

    assert snap_compare(MeworkApp(socket_path), terminal_size=(80, 24), run_before=opened)


def test_import_dialog(snap_compare: Any, socket_path: str) -> None:
    async def opened(pilot: Pilot[Any]) -> None:
        await listed(pilot)
        pilot.app.push_screen(ImportDialog())
        await pilot.pause()
        pilot.app.screen.query_one(TextArea).text = '{"mcpServers": {"fs": {"command": "npx"}}}'
        pilot.app.screen.query_one("#preview").focus()  # a blinking cursor is not a fixed picture
        await pilot.pause()

    assert snap_compare(MeworkApp(socket_path), terminal_size=(80, 24), run_before=opened)


def test_conversations_screen(snap_compare: Any, socket_path: str) -> None:
    async def opened(pilot: Pilot[Any]) -> None:
        await listed(pilot)
        await pilot.press("f3")
        await until(pilot, lambda: isinstance(pilot.app.screen, ConversationsScreen))
        table = pilot.app.screen.query_one(DataTable)
        await until(pilot, lambda: table.row_count == 1)
        await pilot.press("enter")
        why = pilot.app.screen.query_one("#why", Static)
        await until(pilot, lambda: "c1: why" in str(why.render()))

    assert snap_compare(MeworkApp(socket_path), terminal_size=(80, 24), run_before=opened)


def test_mcp_options_screen(snap_compare: Any, socket_path: str) -> None:
    async def opened(pilot: Pilot[Any]) -> None:
        await listed(pilot)
        await pilot.press("o")
        field = pilot.app.screen.query_one("#o-approval_timeout_seconds", Input)
        await until(pilot, lambda: field.value == "600")
        pilot.app.screen.set_focus(None)  # a blinking cursor is not a fixed picture
        await pilot.pause()

    assert snap_compare(MeworkApp(socket_path), terminal_size=(80, 24), run_before=opened)
