"""The Browse screen (issue 29): Add▾ → Browse the MCP registry, search as you type by a word of
a description, see what the highlighted server needs, install it with its inputs; against a
real daemon whose mcp.registries names the fixture registry."""

from typing import Any

import pytest

pytest.importorskip("textual")

from mework_client.aio import connect
from mework_ui.app import MeworkApp
from mework_ui.browse import BrowseScreen
from textual.widgets import DataTable, Input

from tests.registry_examples import BRAVE_SEARCH, WEATHER_PYPI
from tests.registry_fixture import registry_fixture
from tests.ui.conftest import UiDaemon
from tests.ui.helpers import entry, text, type_into, until

pytestmark = pytest.mark.anyio


async def test_browse_search_and_install(ui_daemon: UiDaemon) -> None:
    with registry_fixture() as served:
        served.publish(BRAVE_SEARCH)
        served.publish(WEATHER_PYPI)
        async with connect(ui_daemon.socket) as client:
            await client.call("settings.setMcpOptions", {"registries": [served.url]})
        try:
            await browse(ui_daemon)
        finally:
            async with connect(ui_daemon.socket) as client:
                default = ["https://registry.modelcontextprotocol.io"]
                await client.call("settings.setMcpOptions", {"registries": default})


async def browse(ui_daemon: UiDaemon) -> None:
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.model.online)
        await pilot.press("a")
        await pilot.press("down", "down", "enter")  # Add▾ → Browse the MCP registry
        await until(pilot, lambda: isinstance(app.screen, BrowseScreen))
        table: DataTable[Any] = app.screen.query_one("#found", DataTable)
        await until(pilot, lambda: table.row_count == 2)
        await type_into(pilot, app.screen.query_one("#query", Input), "weather data")
        await until(pilot, lambda: list(table.rows) == [WEATHER_PYPI["name"]])
        await until(pilot, lambda: "needs WEATHER_API_KEY (secret)" in text(app, "#detail"))
        assert "runs: uvx weather-mcp-server==0.5.0" in text(app, "#detail")
        field = app.screen.query_one("#inputs", Input)
        await type_into(pilot, field, "WEATHER_API_KEY=${WEATHER_KEY}")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: "✓ installed as weather-mcp" in text(app, "#detail"))
        stored = entry(ui_daemon.settings, "weather-mcp")
        assert stored["env"]["WEATHER_API_KEY"] == "${WEATHER_KEY}"
        assert stored["installedFrom"]["name"] == WEATHER_PYPI["name"]
