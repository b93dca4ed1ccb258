"""A stdio server's sandbox and limits on its detail page (issue 28.1): switched and typed
there, saved into the entry's objects, refused with the daemon's words beside the field."""

import pytest
from mework_client.aio import connect

pytest.importorskip("textual")

from mework_ui.app import MeworkApp
from textual.widgets import Input, Switch

from tests.common import fake
from tests.ui.conftest import UiDaemon
from tests.ui.helpers import add_servers, open_server, text, until

pytestmark = pytest.mark.anyio


async def saved_entry(ui_daemon: UiDaemon, name: str) -> dict[str, object]:
    async with connect(ui_daemon.socket) as client:
        got = await client.call("servers.get", {"name": name})
    return dict(got["server"])


async def commit(pilot: object, field: Input, value: str) -> None:
    field.focus()
    field.value = value
    await pilot.press("enter")  # type: ignore[attr-defined]


async def test_the_sandbox_and_limits_are_edited_on_the_detail_page(ui_daemon: UiDaemon) -> None:
    await add_servers(ui_daemon.socket, {"ct-box": fake()})
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(100, 50)) as pilot:
        await open_server(pilot, app, "ct-box")
        screen = app.screen
        switch = screen.query_one("#f-sandbox-enabled", Switch)
        assert switch.value is False
        switch.value = True
        await until(pilot, lambda: text(app, "#m-sandbox-enabled") == "on")
        await commit(pilot, screen.query_one("#f-sandbox-read", Input), "~/notes /srv/data")
        await until(pilot, lambda: text(app, "#m-sandbox-read") == "✓ saved")
        await commit(pilot, screen.query_one("#f-limits-memoryMiB", Input), "512")
        await until(pilot, lambda: text(app, "#m-limits-memoryMiB") == "✓ saved")
        entry = await saved_entry(ui_daemon, "ct-box")
        assert entry["sandbox"] == {
            "enabled": True,
            "filesystem": {"read": ["~/notes", "/srv/data"]},
        }
        assert entry["limits"] == {"memoryMiB": 512}
        # Out of range: the daemon's reason beside the field, nothing saved.
        await commit(pilot, screen.query_one("#f-limits-memoryMiB", Input), "1")
        await until(pilot, lambda: "(not saved)" in text(app, "#m-limits-memoryMiB"))
        assert "memoryMiB" in text(app, "#m-limits-memoryMiB")
        # Emptied: the key goes, and with it an object left empty.
        await commit(pilot, screen.query_one("#f-limits-memoryMiB", Input), "")
        await until(pilot, lambda: text(app, "#m-limits-memoryMiB") == "✓ saved")
        assert "limits" not in await saved_entry(ui_daemon, "ct-box")


async def test_an_http_server_has_no_sandbox_fields(ui_daemon: UiDaemon) -> None:
    await add_servers(
        ui_daemon.socket, {"ct-web": {"type": "streamable_http", "url": "http://127.0.0.1:9/mcp"}}
    )
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(100, 50)) as pilot:
        await open_server(pilot, app, "ct-web")
        await until(pilot, lambda: app.screen.query_one("#f-url", Input).value != "")
        assert not app.screen.query_one("ContainGroup").display
