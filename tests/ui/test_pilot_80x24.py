"""At 80×24 every screen's footer fits: no key is pushed past the right edge, and the keys a
person needs on that screen are among those shown (the rest are in help, F1). The
conversations table keeps every column whole beside the open drawer."""

import contextlib
from typing import Any

import pytest

pytest.importorskip("textual")

from mework_client.aio import connect
from mework_ui.app import MeworkApp
from mework_ui.conversations import ConversationsScreen
from mework_ui.detail import DetailScreen
from mework_ui.questions import QuestionScreen
from textual.pilot import Pilot
from textual.widgets import DataTable, Footer
from textual.widgets._footer import FooterKey

from tests.ui.conftest import UiDaemon
from tests.ui.helpers import add_servers, everything, move_to, open_conversation, until

pytestmark = pytest.mark.anyio

WAITING = {  # an approval as the daemon announces it, for a call of ft-c1
    "approvalId": "ft-a1",
    "conversationId": "ft-c1",
    "turnId": "ft-t1",
    "callId": "ft-k1",
    "server": "ft-every",
    "tool": "echo",
    "name": "mcp__ft_every__echo",
    "arguments": {"message": "hi"},
    "hookMayDecide": True,
}
LONG_ID = "ft-a-very-long-conversation-id-of-some-frontend"
CARD = {k: WAITING[k] for k in ("conversationId", "turnId", "callId", "server", "tool")}
TABS = {  # the detail page's tabs in ctrl+n order, with the keys each must show
    "general": {"ctrl+t"},
    "tools": {"space", "a", "w"},
    "rules": {"delete"},
    "prompts": {"ctrl+g"},
    "resources": set(),
    "logs": set(),
}


def footer_keys(app: MeworkApp) -> set[str]:
    """The keys the footer shows, after checking that all of them fit in its width."""
    bar = app.screen.query_one(Footer)
    keys = list(bar.query(FooterKey))
    wanted = sum(key.outer_size.width for key in keys)
    assert wanted <= bar.size.width, [f"{k.key_display} {k.description}" for k in keys]
    return {key.key for key in keys}


async def shows(pilot: Pilot[Any], app: MeworkApp, keys: set[str]) -> None:
    """The footer settles (it is recomposed after a refresh) and shows ``keys``, all fitting."""
    with contextlib.suppress(TimeoutError):  # the assertion below says what is missing
        await until(pilot, lambda: keys <= {k.key for k in app.screen.query(FooterKey)}, 5)
    missing = keys - footer_keys(app)
    assert not missing, (type(app.screen).__name__, missing)


async def test_every_footer_fits_at_80_columns(ui_daemon: UiDaemon) -> None:
    await add_servers(ui_daemon.socket, {"ft-every": everything()})
    async with connect(ui_daemon.socket) as client:
        await client.call("conversations.create", {"id": "ft-c1", "mcpServers": ["ft-every"]})
        await client.call("conversations.create", {"id": LONG_ID})
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.screen.query_one(DataTable)
        await until(pilot, lambda: "ft-every" in table.rows)
        assert "f4" not in footer_keys(app)  # offered only while a question waits
        await app.model.on_event("call.started", {**CARD, "decision": "requested"})
        await app.model.on_event("approval.requested", WAITING)
        everywhere = {"f1", "f3", "f4"}
        await shows(pilot, app, {"a", "space", "t", "l", "delete", *everywhere})
        move_to(table, "ft-every")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, DetailScreen))
        for tab, keys in TABS.items():
            await until(pilot, lambda: app.screen.query_one("TabbedContent").active == tab)  # noqa: B023
            await shows(pilot, app, {"escape", "ctrl+n", *keys, *everywhere})
            await pilot.press("ctrl+n")
        await pilot.press("escape")
        await open_conversation(pilot, app, "ft-c1")
        conversations = app.screen.query_one(DataTable)
        assert conversations.get_cell(LONG_ID, "id") == "ft-a-very-lon…"  # whole in the drawer
        assert conversations.virtual_size.width <= conversations.scrollable_content_region.width
        await shows(pilot, app, {"escape", "y", "n", "f1", "f4"})
        assert "f3" not in footer_keys(app)  # already there
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, QuestionScreen))
        await shows(pilot, app, {"y", "c", "a", "n", "escape"})  # a modal: app keys work unseen
        assert "j" not in footer_keys(app)  # no other question to go to
        await app.model.on_event("approval.resolved", {"approvalId": "ft-a1"})
        await until(pilot, lambda: isinstance(app.screen, ConversationsScreen))
        await until(pilot, lambda: "f4" not in footer_keys(app))
