"""Asking a frontend: a question bound to a call, published to subscribed frontends, answered once.

The first answer wins; a question nobody answers in time, one whose call or turn is cancelled and
one still open when the daemon stops all get the asker's own "unanswered" answer, and none is left
pending. Which events, which id key and which not-found error belong to the kind of question
(:class:`PromptKind`): approvals, a server's elicitations and its sampling requests each have
their own broker of this one kind of mechanism, so an answer of one kind can never settle another.
"""

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import Any, Generic, TypeVar

import anyio

from meworkd.base.clock import wire_time
from meworkd.base.events import EventBus

__all__ = ["BrokerState", "PromptBroker", "PromptKind", "Subject", "Unanswered"]

A = TypeVar("A")


class BrokerState(Enum):
    RUNNING = "running"
    STOPPING = "stopping"  # every open question has been answered; their askers are returning
    STOPPED = "stopped"


class Unanswered(StrEnum):
    """Why a question ended without an answer from a frontend."""

    TIMEOUT = "timeout"
    CANCELLED = "cancelled"  # the asker's call was cancelled while it waited
    STOPPED = "stopped"  # the daemon is stopping


@dataclass(frozen=True, slots=True)
class Subject:
    """What a question is bound to."""

    conversation_id: str | None  # None: a server's question outside any conversation
    turn_id: str | None  # None: not bound to a turn (a server asking in the background)
    call_id: str | None


@dataclass(frozen=True, slots=True)
class PromptKind(Generic[A]):
    """One kind of question: its id key and topics, how its resolution is told, its not-found."""

    id_key: str  # e.g. "approvalId"
    requested: str  # topic; the data is the question, as frontends also list it
    resolved: str  # topic; the data is {id_key: id, **resolution(answer)}
    resolution: Callable[[A], dict[str, Any]]
    not_found: Callable[[str], Exception]  # answering an unknown or settled question


@dataclass(slots=True)
class _Pending(Generic[A]):
    subject: Subject
    question: dict[str, Any]
    done: anyio.Event = field(default_factory=anyio.Event)
    # The answer (never None itself); set once, by whoever ends the question first.
    answer: A | None = None


class PromptBroker(Generic[A]):
    def __init__(self, bus: EventBus, kind: PromptKind[A]) -> None:
        self._bus = bus
        self._kind = kind
        self._pending: dict[str, _Pending[A]] = {}
        self._state = BrokerState.RUNNING

    @property
    def state(self) -> BrokerState:
        return self._state

    async def ask(
        self,
        subject: Subject,
        details: dict[str, Any],
        *,
        within: float,
        unanswered: Callable[[Unanswered], A],
    ) -> A:
        """Publish the question and wait for its answer, at most ``within`` seconds.

        The question is ``{id_key, conversationId, turnId, callId, expiresAt, **details}``
        (``expiresAt``: when it times out, so a frontend can count down, also one that connects
        later). Once the daemon is stopping, nothing is asked: ``unanswered(STOPPED)`` at once.
        """
        if self._state is not BrokerState.RUNNING:
            return unanswered(Unanswered.STOPPED)
        prompt_id = uuid.uuid4().hex[:12]
        question = {
            self._kind.id_key: prompt_id,
            "conversationId": subject.conversation_id,
            "turnId": subject.turn_id,
            "callId": subject.call_id,
            "expiresAt": wire_time(time.time() + within),
            **details,
        }
        pending: _Pending[A] = _Pending(subject, question)
        self._pending[prompt_id] = pending
        self._bus.publish(self._kind.requested, question)
        waited = anyio.move_on_after(within)
        try:
            with waited:
                await pending.done.wait()
        finally:
            self._forget(prompt_id)
            if pending.answer is None:
                why = Unanswered.TIMEOUT if waited.cancelled_caught else Unanswered.CANCELLED
                pending.answer = unanswered(why)
            resolution = self._kind.resolution(pending.answer)
            self._bus.publish(self._kind.resolved, {self._kind.id_key: prompt_id, **resolution})
        return pending.answer

    def _forget(self, prompt_id: str) -> None:
        del self._pending[prompt_id]
        if self._state is BrokerState.STOPPING and not self._pending:
            self._state = BrokerState.STOPPED

    def answer(self, prompt_id: str, answer: A) -> None:
        """A frontend's answer; the kind's not-found error if the question is unknown or settled."""
        pending = self._pending.get(prompt_id)
        if pending is None or pending.answer is not None:
            raise self._kind.not_found(prompt_id)
        self._settle(pending, answer)

    def question(self, prompt_id: str) -> dict[str, Any]:
        """The open question ``prompt_id``; the kind's not-found error if unknown or settled."""
        pending = self._pending.get(prompt_id)
        if pending is None or pending.answer is not None:
            raise self._kind.not_found(prompt_id)
        return pending.question

    def open_questions(self) -> list[dict[str, Any]]:
        return [p.question for p in self._pending.values() if p.answer is None]

    def cancel(self, turn_id: str, answer: A, call_id: str | None = None) -> None:
        """Answer the open questions of ``turn_id`` (only the call ``call_id``'s, when given)."""
        for pending in list(self._pending.values()):
            if call_id is not None and pending.subject.call_id != call_id:
                continue
            if pending.subject.turn_id == turn_id and pending.answer is None:
                self._settle(pending, answer)

    def stop(self, unanswered: Callable[[Unanswered], A]) -> None:
        """Ask nothing more and end every open question with ``unanswered(STOPPED)``."""
        if self._state is not BrokerState.RUNNING:
            return
        self._state = BrokerState.STOPPING if self._pending else BrokerState.STOPPED
        for pending in list(self._pending.values()):
            if pending.answer is None:
                self._settle(pending, unanswered(Unanswered.STOPPED))

    @staticmethod
    def _settle(pending: _Pending[A], answer: A) -> None:
        pending.answer = answer
        pending.done.set()
