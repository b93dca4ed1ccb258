"""meworkd.core.prompts: a question is answered once (first answer wins), or ends unanswered on
timeout, cancellation of its call or turn, or the daemon stopping; nothing is left pending."""

import functools
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest

from meworkd.base.errors import ApprovalNotFound
from meworkd.base.events import EventBus
from meworkd.core.prompts import BrokerState, PromptBroker, PromptKind, Subject, Unanswered

pytestmark = pytest.mark.anyio

KIND: PromptKind[str] = PromptKind(
    id_key="questionId",
    requested="approval.requested",
    resolved="approval.resolved",
    resolution=lambda answer: {"answer": answer},
    not_found=ApprovalNotFound,
)


WITHIN = timedelta(seconds=30)  # Asker's default
MS = timedelta(milliseconds=1)  # expiresAt is written to the millisecond


def unanswered(why: Unanswered) -> str:
    return f"unanswered: {why}"


class Asker:
    def __init__(self, broker: PromptBroker[str]) -> None:
        self.broker = broker
        self.answers: dict[str, str] = {}

    async def ask(self, call: str, turn: str = "t1", within: float = 30.0) -> None:
        subject = Subject("c1", turn, call)
        self.answers[call] = await self.broker.ask(
            subject, {"what": call}, within=within, unanswered=unanswered
        )


async def _asked(broker: PromptBroker[str], count: int) -> list[dict[str, Any]]:
    with anyio.fail_after(5):
        while len(broker.open_questions()) < count:
            await anyio.lowlevel.checkpoint()
    return broker.open_questions()


async def test_first_answer_wins_and_events_carry_the_id() -> None:
    bus = EventBus()
    broker: PromptBroker[str] = PromptBroker(bus, KIND)
    asker = Asker(broker)
    before = datetime.now(UTC)
    async with anyio.create_task_group() as tg:
        tg.start_soon(asker.ask, "a")
        (question,) = await _asked(broker, 1)
        assert question == {
            "questionId": question["questionId"],
            "conversationId": "c1",
            "turnId": "t1",
            "callId": "a",
            "expiresAt": question["expiresAt"],
            "what": "a",
        }
        # When it times out, for a frontend's countdown: ``within`` (30 s) from being asked.
        expires = datetime.fromisoformat(question["expiresAt"])
        assert before + WITHIN - MS <= expires <= datetime.now(UTC) + WITHIN
        broker.answer(question["questionId"], "yes")
        with pytest.raises(ApprovalNotFound):
            broker.answer(question["questionId"], "no")
    assert asker.answers == {"a": "yes"}
    assert broker.open_questions() == []
    with pytest.raises(ApprovalNotFound):
        broker.answer("unknown", "yes")


async def test_no_answer_in_time() -> None:
    broker: PromptBroker[str] = PromptBroker(EventBus(), KIND)
    asker = Asker(broker)
    await asker.ask("a", within=0)
    assert asker.answers == {"a": "unanswered: timeout"}
    assert broker.open_questions() == []


async def test_cancelled_asker_and_cancelled_call_or_turn() -> None:
    broker: PromptBroker[str] = PromptBroker(EventBus(), KIND)
    asker = Asker(broker)
    async with anyio.create_task_group() as tg:
        tg.start_soon(asker.ask, "a")
        tg.start_soon(asker.ask, "b")
        tg.start_soon(asker.ask, "c", "t2")
        await _asked(broker, 3)
        broker.cancel("t1", "call cancelled", call_id="b")
        await _asked(broker, 2)
        broker.cancel("t1", "turn cancelled")
        await _asked(broker, 1)
        tg.cancel_scope.cancel()
    assert asker.answers == {"a": "turn cancelled", "b": "call cancelled"}
    assert broker.open_questions() == []


async def test_stopping_answers_every_question_and_asks_nothing_more() -> None:
    broker: PromptBroker[str] = PromptBroker(EventBus(), KIND)
    asker = Asker(broker)
    async with anyio.create_task_group() as tg:
        tg.start_soon(asker.ask, "a")
        tg.start_soon(asker.ask, "b")
        await _asked(broker, 2)
        broker.stop(unanswered)
        assert broker.state is BrokerState.STOPPING
    assert broker.state is BrokerState.STOPPED
    assert asker.answers == {"a": "unanswered: stopped", "b": "unanswered: stopped"}
    await asker.ask("late")
    assert asker.answers["late"] == "unanswered: stopped"
    assert broker.open_questions() == []


async def test_stopping_with_nothing_pending() -> None:
    broker: PromptBroker[str] = PromptBroker(EventBus(), KIND)
    broker.stop(unanswered)
    assert broker.state is BrokerState.STOPPED


async def test_a_question_waiting_longer_than_iso_can_write_still_asks() -> None:
    """Any positive timeout is valid in the settings; its expiresAt is capped, never a crash."""
    bus = EventBus()
    broker: PromptBroker[str] = PromptBroker(bus, KIND)
    asker = Asker(broker)
    async with anyio.create_task_group() as tg:
        tg.start_soon(functools.partial(asker.ask, "a", within=1e12))
        (question,) = await _asked(broker, 1)
        assert question["expiresAt"] == "9999-12-31T23:59:59.000Z"
        broker.answer(question["questionId"], "yes")
    assert asker.answers == {"a": "yes"}
