"""MCP tasks in the terminal UI: shown live from the task events, on the conversation's call
cards and on the Tasks screen (F5, or t on Conversations), cancelled after a question, and a task
asking for input pointing to the question, answered on F4's screen.

The shared real daemon (tests/ui/conftest.py) follows the tasks fixture server
(tests/servers/tasks.py) over real Streamable HTTP; the calls are made by a second client, as a
frontend's model would.
"""

import json
from typing import Any

import anyio
import pytest

pytest.importorskip("textual")

from mework_client.aio import AsyncClient, connect
from mework_ui.app import MeworkApp
from mework_ui.questions import QuestionScreen
from mework_ui.tasks import ConfirmCancelTask, TasksScreen
from textual.widgets import DataTable, Input

from tests.daemon_helpers import start_call
from tests.test_ctl_tasks import tasks_url  # noqa: F401 - the module's HTTP tasks server
from tests.ui.conftest import UiDaemon
from tests.ui.helpers import add_servers, cell, open_conversation, text, type_into, until

pytestmark = pytest.mark.anyio


async def begin(other: AsyncClient, conversation: str, server: str) -> dict[str, Any]:
    params = {"id": conversation, "mcpServers": [server], "approvalLevel": "full_access"}
    await other.call("conversations.create", params)
    turn: dict[str, Any] = await other.call("turns.begin", {"conversationId": conversation})
    return turn


async def test_a_running_task_is_shown_live_and_cancelled(
    ui_daemon: UiDaemon,
    tasks_url: str,  # noqa: F811 - the fixture imported above
) -> None:
    await add_servers(ui_daemon.socket, {"tk-work": {"type": "http", "url": tasks_url}})
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(80, 24)) as pilot, connect(ui_daemon.socket) as other:
        await until(pilot, lambda: app.model.online)
        turn = await begin(other, "tk-c1", "tk-work")
        await open_conversation(pilot, app, "tk-c1")
        async with anyio.create_task_group() as tg:
            results = start_call(tg, other, turn, "tk-work", "forever", {}, "tk-forever")
            card = "⏵ tk-work · forever · task working"
            await until(pilot, lambda: card in text(app, "#cards"))
            assert text(app, "#cards").endswith("· t tasks")
            assert "⏵ 1 task (F5)" in text(app, "#topbar")
            await pilot.press("t")
            await until(pilot, lambda: isinstance(app.screen, TasksScreen))
            assert "of conversation tk-c1" in text(app, "#title")
            table = app.screen.query_one(DataTable)
            await until(pilot, lambda: "tk-forever" in table.rows)
            assert cell(table, "tk-forever", "status") == "… working"
            assert cell(table, "tk-forever", "what") == "tk-work › forever"
            assert cell(table, "tk-forever", "conv") == "tk-c1"
            note = text(app, "#task-note")
            assert "call tk-forever" in note
            assert "outlives a restart of meworkd · x cancels it on its server" in note
            await pilot.press("x")
            await until(pilot, lambda: isinstance(app.screen, ConfirmCancelTask))
            assert text(app, "#question") == "Cancel the task of tk-work › forever?"
            await pilot.press("n")  # kept: nothing sent
            await until(pilot, lambda: isinstance(app.screen, TasksScreen))
            assert app.model.tasks.of_call("tk-forever")["status"] == "working"
            await pilot.press("x")
            await until(pilot, lambda: isinstance(app.screen, ConfirmCancelTask))
            await pilot.press("y")
            await until(pilot, lambda: len(results) == 1)
        assert results[0]["isError"]
        assert "cancel" in json.dumps(results[0])
        await until(pilot, lambda: cell(table, "tk-forever", "status") == "✘ cancelled")
        assert "task" not in text(app, "#topbar")  # no task runs now
        assert "x cancels" not in text(app, "#task-note")
        await pilot.press("x")  # an ended task: said, no dialog
        await pilot.pause()
        assert isinstance(app.screen, TasksScreen)
        await pilot.press("escape")
        await until(pilot, lambda: "task" not in text(app, "#cards"))  # the card: its outcome
        await other.call("turns.end", {"turnId": turn["turnId"]})


async def test_a_task_asking_points_to_its_question(
    ui_daemon: UiDaemon,
    tasks_url: str,  # noqa: F811 - the fixture imported above
) -> None:
    await add_servers(ui_daemon.socket, {"tk-ask": {"type": "http", "url": tasks_url}})
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(80, 24)) as pilot, connect(ui_daemon.socket) as other:
        await until(pilot, lambda: app.model.online)
        turn = await begin(other, "tk-c2", "tk-ask")
        async with anyio.create_task_group() as tg:
            arguments = {"message": "Which colour?"}
            results = start_call(tg, other, turn, "tk-ask", "ask", arguments, "tk-asks")
            await until(pilot, lambda: "⏵ 1 task (F5)" in text(app, "#topbar"))
            await pilot.press("f5")  # from anywhere: every conversation's tasks
            await until(pilot, lambda: isinstance(app.screen, TasksScreen))
            assert "of every conversation" in text(app, "#title")
            table = app.screen.query_one(DataTable)
            asking = "⚑ needs your answer"
            await until(pilot, lambda: cell(table, "tk-asks", "status") == asking)
            await until(pilot, lambda: "1 question (F4)" in text(app, "#topbar"))
            note = "⚑ it asks you: Which colour? (F4 answers it)"  # the question of its call
            await until(pilot, lambda: note in text(app, "#task-note"))
            await pilot.press("f4")
            await until(pilot, lambda: isinstance(app.screen, QuestionScreen))
            assert "Which colour?" in text(app, "#q-head")
            await type_into(pilot, app.screen.query_one("#e-answer", Input), "blue")
            await pilot.press("ctrl+s")
            await until(pilot, lambda: len(results) == 1)
        assert "answer: blue" in json.dumps(results[0])
        await until(pilot, lambda: isinstance(app.screen, TasksScreen))
        await until(pilot, lambda: cell(table, "tk-asks", "status") == "✓ completed")
        await other.call("turns.end", {"turnId": turn["turnId"]})
