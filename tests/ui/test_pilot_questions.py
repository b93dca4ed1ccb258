"""Questions to the person, wherever they are: approvals (deny with a reason, allow, answered
elsewhere) and an elicitation form, against the shared real daemon."""

import json
import re
from typing import Any

import anyio
import pytest

pytest.importorskip("textual")

from mework_client.aio import AsyncClient, connect
from mework_ui.app import MeworkApp
from mework_ui.questions import QuestionScreen
from mework_ui.rows import selected
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, TextArea

from tests.ui.conftest import UiDaemon
from tests.ui.helpers import add_servers, everything, open_conversation, text, type_into, until

pytestmark = pytest.mark.anyio


async def test_answers_approvals(ui_daemon: UiDaemon) -> None:
    await add_servers(ui_daemon.socket, {"ap-every": everything()})
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(80, 24)) as pilot, connect(ui_daemon.socket) as other:
        await until(pilot, lambda: app.model.online)
        await answer_approvals(pilot, app, other)


async def answer_approvals(pilot: Pilot[Any], app: MeworkApp, other: AsyncClient) -> None:
    await other.call("conversations.create", {"id": "ap-c0"})  # ap-c1 is in the middle
    conv = await other.call("conversations.create", {"id": "ap-c1", "mcpServers": ["ap-every"]})
    await other.call("conversations.create", {"id": "ap-c2"})
    turn = await other.call("turns.begin", {"conversationId": conv["id"]})
    echo = next(n for n, b in turn["bindings"].items() if b["tool"] == "echo")
    results: list[Any] = []

    async def call() -> None:
        params = {"turnId": turn["turnId"], "name": echo, "arguments": {"message": "hi"}}
        results.append(await other.call("turns.callTool", params))

    await open_conversation(pilot, app, "ap-c1")
    cards = lambda: text(app, "#cards")  # noqa: E731
    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await until(pilot, lambda: "⏳ ap-every · echo · waiting for approval" in cards())
        assert selected(app.screen.query_one(DataTable)) == "ap-c1"  # events move no cursor
        assert "⚑ 1 question" in text(app, "#topbar")  # announced, focus not taken
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, QuestionScreen))
        assert json.loads(app.screen.query_one("#q-args", TextArea).text) == {"message": "hi"}
        assert "request_approval" in text(app, "#q-head")
        clock = text(app, "#q-clock")  # the daemon's expiresAt: at most its 10 minutes
        assert re.search(r"⌛ (9:[0-5]\d|10:00) left to answer", clock), clock
        await pilot.press("n", *"too big", "enter")
        await until(pilot, lambda: len(results) == 1)
    assert results[0]["isError"]
    assert "too big" in json.dumps(results[0])
    await until(pilot, lambda: "✘ ap-every · echo · denied by user: " in cards())
    async with anyio.create_task_group() as tg:  # answered on the card itself
        tg.start_soon(call)
        await until(pilot, lambda: "⏳ ap-every · echo" in cards())
        await pilot.press("y")
        await until(pilot, lambda: len(results) == 2)
    assert not results[1]["isError"]
    await until(pilot, lambda: cards().splitlines()[-1].startswith("✓ ap-every · echo · allowed"))
    async with anyio.create_task_group() as tg:  # first answer wins: answered elsewhere
        tg.start_soon(call)
        await until(pilot, lambda: len(app.model.questions) == 1)
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, QuestionScreen))
        (approval_id,) = app.model.questions
        await other.call("approvals.respond", {"approvalId": approval_id, "decision": "allow"})
        await until(pilot, lambda: not isinstance(app.screen, QuestionScreen))
    assert not app.model.questions
    assert len(cards().splitlines()) == 3
    await other.call("turns.end", {"turnId": turn["turnId"]})


async def test_answers_a_form(ui_daemon: UiDaemon) -> None:
    """An elicitation as the daemon's event brings it; answered elsewhere meanwhile."""
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.model.online)
        schema = {
            "type": "object",
            "properties": {
                "age": {"type": "integer", "title": "Age"},
                "nick": {"type": "string", "default": "bob"},
            },
            "required": ["age"],
        }
        request = {"elicitationId": "e1", "server": "kitchen", "message": "Who are you?"}
        await app.model.on_event("elicitation.requested", {**request, "requestedSchema": schema})
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, QuestionScreen))
        assert "Who are you?" in text(app, "#q-head")
        assert "Age *" in "\n".join(str(w.render()) for w in app.screen.query("#q-form Static"))
        assert app.screen.query_one("#e-nick", Input).placeholder == "string (empty: bob)"
        await type_into(pilot, app.screen.query_one("#e-age", Input), "42")
        await pilot.press("ctrl+s")  # refused (no such elicitation), then resolved elsewhere
        await app.model.on_event("elicitation.resolved", {"elicitationId": "e1"})
        await until(pilot, lambda: not isinstance(app.screen, QuestionScreen))
