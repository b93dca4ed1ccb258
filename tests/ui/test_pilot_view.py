"""The ``v`` key of Conversations (issue 27): the newest allowed call's MCP Apps view is served on
127.0.0.1 by the UI (``meworkctl view``'s host) and the browser is asked to open it. The browser
itself is left out (``webbrowser.open`` records the address instead of starting one); the page
is then fetched over real HTTP.
"""

import sys
import urllib.request
import webbrowser
from typing import Any

import anyio
import pytest

pytest.importorskip("textual")

from mework_client.aio import connect
from mework_ui.app import MeworkApp

from tests.common import APPS_FAKE
from tests.ui.conftest import UiDaemon
from tests.ui.helpers import BOUND, add_servers, open_conversation, text, until

pytestmark = pytest.mark.anyio

# The stdlib twin of apps_view.py: the UI's key is the subject here, not the SDK's server.
APPS = {"type": "stdio", "command": sys.executable, "args": [APPS_FAKE]}


def notices(app: MeworkApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


def _page(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=BOUND) as reply:
        return bytes(reply.read())


async def test_v_opens_the_last_calls_view(
    ui_daemon: UiDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url, *_a, **_k: opened.append(url) or True)
    await add_servers(ui_daemon.socket, {"v-apps": APPS})
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(80, 24)) as pilot, connect(ui_daemon.socket) as other:
        await until(pilot, lambda: app.model.online)
        create = {"id": "v-c1", "mcpServers": ["v-apps"], "approvalLevel": "full_access"}
        await other.call("conversations.create", create)
        await other.call("conversations.create", {"id": "v-c2", "mcpServers": []})
        await open_conversation(pilot, app, "v-c2")
        await pilot.press("v")
        await until(pilot, lambda: "no allowed tool call to view" in notices(app))
        await pilot.press("escape")
        turn = await other.call("turns.begin", {"conversationId": "v-c1"})
        name = next(n for n, b in turn["bindings"].items() if b["tool"] == "show_counter")
        call: dict[str, Any] = {"turnId": turn["turnId"], "name": name, "arguments": {}}
        await other.call("turns.callTool", call)
        await open_conversation(pilot, app, "v-c1")
        await until(pilot, lambda: "v-apps · show_counter" in text(app, "#cards"))
        await pilot.press("v")
        await until(pilot, lambda: len(opened) == 1)
        assert opened[0].startswith("http://127.0.0.1:")
        assert any(opened[0] in n for n in notices(app))
        page = await anyio.to_thread.run_sync(_page, opened[0])
        assert b"host.js" in page
        await other.call("turns.end", {"turnId": turn["turnId"]})
