"""What every screen shares: the help screen of keys and the notice below 80×24."""

import pytest

pytest.importorskip("textual")

from mework_ui.app import MeworkApp
from mework_ui.conversations import ConversationsScreen
from mework_ui.servers import ServersScreen
from mework_ui.shell import HelpScreen, TooSmall
from textual.widgets import Footer

from tests.ui.conftest import UiDaemon
from tests.ui.helpers import text, until

pytestmark = pytest.mark.anyio


async def test_help_lists_every_screens_keys(ui_daemon: UiDaemon) -> None:
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.model.online)
        assert app.screen.query(Footer)
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        keys = text(app, "#help-keys")
        shown = ("  f1/?         Help", "  a            Add▾", "Restart sessions", "Allow once")
        for line in shown:
            assert line in keys  # hidden bindings too: the footer clips at 80 columns
        await pilot.press("f3")  # screen keys wait while help is up
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, ServersScreen)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("question_mark")
        assert isinstance(app.screen, ServersScreen)


async def test_below_80x24_a_notice_replaces_the_screen(ui_daemon: UiDaemon) -> None:
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(60, 16)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, TooSmall))
        assert text(app, "#too-small") == "make the terminal at least 80×24\n(now 60×16)"
        await pilot.press("f3")  # nothing moves behind the notice
        assert isinstance(app.screen, TooSmall)
        await pilot.resize_terminal(79, 30)
        await until(pilot, lambda: "(now 79×30)" in text(app, "#too-small"))
        await pilot.resize_terminal(80, 24)
        await until(pilot, lambda: isinstance(app.screen, ServersScreen))
        await pilot.press("f3")
        assert isinstance(app.screen, ConversationsScreen)
