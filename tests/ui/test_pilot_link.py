"""The connection: a daemon that is not there, one that comes, one that restarts."""

from pathlib import Path

import pytest

pytest.importorskip("textual")

from mework_ui.app import MeworkApp
from textual.widgets import DataTable

from tests.daemon_helpers import kitchen, start_daemon
from tests.ui.helpers import text, until

pytestmark = pytest.mark.anyio


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
            assert [r.value for r in table.rows] == ["kitchen"]
