"""First answer wins across frontends (issue 18.5), from both places the UI answers an approval.

Another client answers first while this UI has not yet heard ``approval.resolved`` (held back,
as on a slow link), so the UI's own answer meets the daemon's ``approval_not_found``. The
question screen and a tool card must both take that as "answered elsewhere": the question goes,
and no error is shown.
"""

from typing import Any

import anyio
import pytest

pytest.importorskip("textual")

from mework_client.aio import AsyncClient, connect
from mework_ui.app import MeworkApp
from mework_ui.model import Model
from mework_ui.questions import QuestionScreen
from textual.pilot import Pilot

from tests.ui.conftest import UiDaemon
from tests.ui.helpers import BOUND, add_servers, everything, open_conversation, text, until

pytestmark = pytest.mark.anyio
ELSEWHERE = "already answered elsewhere (or expired)"


class HeldResolutions:
    """Passes the UI's events on, but holds ``approval.resolved`` until released."""

    def __init__(self, model: Model) -> None:
        self.forward = model.on_event
        self.arm()

    def arm(self) -> None:
        self.held, self.release = anyio.Event(), anyio.Event()

    async def __call__(self, topic: str, data: Any) -> None:
        if topic == "approval.resolved" and not self.release.is_set():
            self.held.set()
            await self.release.wait()
        await self.forward(topic, data)


class Turn:
    """A turn of another frontend on the shared daemon, calling echo and keeping the results."""

    def __init__(self, other: AsyncClient, turn: dict[str, Any]) -> None:
        self.other, self.turn_id = other, turn["turnId"]
        self.echo = next(n for n, b in turn["bindings"].items() if b["tool"] == "echo")
        self.results: list[dict[str, Any]] = []

    async def call(self) -> None:
        params = {"turnId": self.turn_id, "name": self.echo, "arguments": {"message": "hi"}}
        self.results.append(await self.other.call("turns.callTool", params))


def notices(app: MeworkApp) -> list[tuple[str, str]]:
    return [(str(n.message), n.severity) for n in app._notifications]


async def answer_first_elsewhere(held: HeldResolutions, other: AsyncClient, app: MeworkApp) -> None:
    """The other client answers; the UI still shows the question (its resolved event waits)."""
    held.arm()
    (approval_id,) = app.model.questions
    await other.call("approvals.respond", {"approvalId": approval_id, "decision": "deny"})
    with anyio.fail_after(BOUND):
        await held.held.wait()
    assert approval_id in app.model.questions


async def test_an_approval_answered_elsewhere_first(
    ui_daemon: UiDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    await add_servers(ui_daemon.socket, {"ae-every": everything()})
    app = MeworkApp(str(ui_daemon.socket))
    held = HeldResolutions(app.model)
    monkeypatch.setattr(app.model, "on_event", held)  # before the app's link starts
    async with app.run_test(size=(80, 24)) as pilot, connect(ui_daemon.socket) as other:
        await until(pilot, lambda: app.model.online)
        await other.call("conversations.create", {"id": "ae-c1", "mcpServers": ["ae-every"]})
        turn = Turn(other, await other.call("turns.begin", {"conversationId": "ae-c1"}))
        async with anyio.create_task_group() as tg:  # on the question screen
            tg.start_soon(turn.call)
            await until(pilot, lambda: len(app.model.questions) == 1)
            await pilot.press("f4")
            await until(pilot, lambda: isinstance(app.screen, QuestionScreen))
            await answer_first_elsewhere(held, other, app)
            await pilot.press("y")
            await until(pilot, lambda: not isinstance(app.screen, QuestionScreen))
            held.release.set()
        await answered_elsewhere(pilot, app, turn, 1)
        await open_conversation(pilot, app, "ae-c1")
        async with anyio.create_task_group() as tg:  # on the tool card
            tg.start_soon(turn.call)
            await until(pilot, lambda: "⏳ ae-every · echo" in text(app, "#cards"))
            await answer_first_elsewhere(held, other, app)
            await pilot.press("y")
            await until(pilot, lambda: not app.model.questions)
            held.release.set()
        await answered_elsewhere(pilot, app, turn, 2)
        await until(pilot, lambda: "✘ ae-every · echo · denied by user" in text(app, "#cards"))
        await other.call("turns.end", {"turnId": turn.turn_id})


async def answered_elsewhere(pilot: Pilot[Any], app: MeworkApp, turn: Turn, calls: int) -> None:
    """The other client's deny decided the call; the UI said so without an error."""
    await until(pilot, lambda: len(turn.results) == calls)
    assert turn.results[-1]["isError"]  # denied: the first answer, not the UI's allow
    assert (ELSEWHERE, "information") in notices(app)
    assert not [n for n in notices(app) if n[1] == "error"]
    app.clear_notifications()
