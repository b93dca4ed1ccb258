"""The question screen's ``a``: allow a tool for good (it joins its server's alwaysAllowTools).

Another frontend's call asks; the person presses ``a``; the call runs, the settings file names
the tool, and the next call, in another conversation, runs without asking.
"""

import json

import anyio
import pytest

pytest.importorskip("textual")

from mework_client.aio import connect
from mework_ui.app import MeworkApp
from mework_ui.questions import QuestionScreen

from tests.ui.conftest import UiDaemon
from tests.ui.helpers import BOUND, add_servers, everything, until

pytestmark = pytest.mark.anyio


async def test_a_allows_a_tool_for_good(ui_daemon: UiDaemon) -> None:
    await add_servers(ui_daemon.socket, {"al-every": everything()})
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(80, 24)) as pilot, connect(ui_daemon.socket) as other:
        await until(pilot, lambda: app.model.online)
        await other.call("conversations.create", {"id": "al-c1", "mcpServers": ["al-every"]})
        turn = await other.call("turns.begin", {"conversationId": "al-c1"})
        echo = next(n for n, b in turn["bindings"].items() if b["tool"] == "echo")
        params = {"turnId": turn["turnId"], "name": echo, "arguments": {"message": "hi"}}
        results: list[dict[str, object]] = []

        async def call() -> None:
            results.append(await other.call("turns.callTool", params))

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await until(pilot, lambda: len(app.model.questions) == 1)
            await pilot.press("f4")
            await until(pilot, lambda: isinstance(app.screen, QuestionScreen))
            await pilot.press("a")
        assert results[0]["isError"] is False
        entry = json.loads(ui_daemon.settings.read_text())["assets"]["mcpServers"]["al-every"]
        assert entry["alwaysAllowTools"] == ["echo"]
        # Another conversation: no question (awaited directly: one would hang the bound).
        await other.call("conversations.create", {"id": "al-c2", "mcpServers": ["al-every"]})
        second = await other.call("turns.begin", {"conversationId": "al-c2"})
        with anyio.fail_after(BOUND):
            again = await other.call(
                "turns.callTool",
                {"turnId": second["turnId"], "name": echo, "arguments": {"message": "x"}},
            )
        assert again["isError"] is False
