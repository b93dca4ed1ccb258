"""SVG snapshot of an HTTP server's detail page at 80×24 with its OAuth group in view.

A daemon process of its own (``snap_compare`` runs the app in a loop of its own); the secret
on screen is masked, so the picture holds nothing machine-specific.
"""

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("textual")

from mework_ui.app import MeworkApp
from mework_ui.detail import DetailScreen
from textual.pilot import Pilot
from textual.widgets import DataTable, Input

from tests.ui.conftest import meworkd_process
from tests.ui.helpers import until

DOCUMENT = {
    "assets": {
        "mcpServers": {
            "docs": {
                "type": "streamable_http",
                "url": "http://127.0.0.1:9/mcp",
                "enabled": False,
                "oauth": {"clientId": "my-client", "clientSecret": "s3cret", "scopes": ["read"]},
            }
        }
    }
}


@pytest.fixture(scope="module")
def socket_path() -> Iterator[str]:
    with meworkd_process(DOCUMENT) as daemon:
        yield str(daemon.socket)


def test_http_detail_screen_with_oauth(snap_compare: Any, socket_path: str) -> None:
    async def opened(pilot: Pilot[Any]) -> None:
        table = pilot.app.screen.query_one(DataTable)
        await until(pilot, lambda: table.row_count == 1)
        pilot.app.push_screen(DetailScreen("docs"))
        await until(pilot, lambda: pilot.app.screen.query("#f-oauth-clientId"))
        field = pilot.app.screen.query_one("#f-oauth-clientId", Input)
        await until(pilot, lambda: field.value == "my-client")
        pilot.app.screen.query_one("#oauth-help").scroll_visible(animate=False)
        pilot.app.screen.set_focus(None)  # a blinking cursor is not a fixed picture
        await pilot.pause()

    assert snap_compare(MeworkApp(socket_path), terminal_size=(80, 24), run_before=opened)
