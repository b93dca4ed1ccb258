"""``meworkctl call``: a tool call that says when it waits for a person and can be answered here.

The call runs on its own connection in a helper thread; the main thread watches the approval
and elicitation events of this call (by its ``callId``) and, on a terminal, asks y/n (or a
reason, which denies) and answers with ``approvals.respond``, or fills in the server's form
(``mework_client.ctl.requests``). Elsewhere it says how to answer from another terminal and
keeps waiting. Ctrl-C (and SIGTERM, SIGHUP: see :mod:`.main`) cancels the call and its pending
approval (``turns.cancel``) and exits 130. If meworkd stops while the call waits, it says so and
exits as when meworkd is not running (3). The helper thread reports through a queue and wakes a
prompt that waits on stdin through a pipe, so nothing polls.
"""

from __future__ import annotations

import os
import queue
import select
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from mework_protocol.codes import METHOD_NOT_FOUND
from mework_protocol.topics import APPROVAL_TOPICS, ELICITATION_TOPICS

from mework_client import Client, DaemonNotRunning, RpcError
from mework_client.ctl.answers import ALLOW_PROMPT, ask_decision, respond
from mework_client.ctl.command import (
    EXIT_INTERRUPTED,
    EXIT_NOT_RUNNING,
    EXIT_OK,
    PROG,
    Command,
    Ctx,
)
from mework_client.ctl.layout import obj
from mework_client.ctl.requests import answer_elicitation

__all__ = ["run_call"]


class _CallThread(threading.Thread):
    """Runs ``turns.callTool`` and posts ``("done", result)`` or ``("error", exc)``."""

    def __init__(self, ctx: Ctx, params: dict[str, Any], inbox: queue.Queue[Any]) -> None:
        super().__init__(daemon=True)  # on Ctrl-C the process exits without waiting for it
        self.ctx, self.params, self.inbox = ctx, params, inbox
        self.wake_read, self.wake_write = os.pipe()

    def run(self) -> None:
        try:
            self.inbox.put(("done", self.ctx.call("turns.callTool", self.params, wait=True)))
        except Exception as exc:  # noqa: BLE001 (handed to the main thread, which reports it)
            self.inbox.put(("error", exc))
        os.write(self.wake_write, b"x")


_TOPICS = (*APPROVAL_TOPICS, *ELICITATION_TOPICS)
# Event topic -> (the kind posted to the main thread, the key of the question's id).
_ASKED = {
    "approval.requested": ("approval", "approvalId"),
    "elicitation.requested": ("elicitation", "elicitationId"),
}
_ANSWERED = {"approval.resolved": "approvalId", "elicitation.resolved": "elicitationId"}
# Seconds the prompt waits, once the call has ended, for the event saying a person answered.
ANSWER_EVENT_GRACE = 1.0


def _asks_this_call(question: dict[str, Any], call_id: str) -> bool:
    # A question asked while several calls were in flight names them all (``inFlight``).
    return question.get("callId") == call_id or call_id in (question.get("inFlight") or ())


class _QuestionThread(threading.Thread):
    """Posts ``(kind, data)`` for this call's approvals and forms; when one is answered by a
    person (here or elsewhere), adds its id to ``answered`` and writes ``resolved``."""

    def __init__(
        self, stream: Client, call_id: str, inbox: queue.Queue[Any], wakes: tuple[int, set[str]]
    ) -> None:
        super().__init__(daemon=True)
        self.stream, self.call_id, self.inbox = stream, call_id, inbox
        self.resolved, self.answered = wakes
        self.ids: set[str] = set()
        self.stopped = threading.Event()  # meworkd stopping ended one of this call's questions

    def _answered_elsewhere(self, topic: str, question: dict[str, Any]) -> bool:
        # By a person, not a time-out or meworkd stopping (the call's own result says those).
        mine = question.get(_ANSWERED[topic]) in self.ids
        return mine and question.get("decidedBy", "user") == "user"

    def _ended_by_stopping(self, topic: str, question: dict[str, Any]) -> bool:
        mine = question.get(_ANSWERED[topic]) in self.ids
        return mine and question.get("decidedBy") == "shutdown"

    def run(self) -> None:
        try:
            for topic, data in self.stream.events(list(_TOPICS)):
                question = obj(data)
                if topic in _ASKED and _asks_this_call(question, self.call_id):
                    kind, key = _ASKED[topic]
                    self.ids.add(str(question.get(key)))
                    self.inbox.put((kind, question))
                elif topic in _ANSWERED and self._answered_elsewhere(topic, question):
                    self.answered.add(str(question.get(_ANSWERED[topic])))
                    os.write(self.resolved, b"x")  # wakes a prompt answered from elsewhere
                elif topic in _ANSWERED and self._ended_by_stopping(topic, question):
                    self.stopped.set()
        except (OSError, ValueError):
            pass  # the connection closed: the call's own reply says what happened


@dataclass
class _Wakes:
    """What ends a prompt besides a line typed: the call's end (``ended``, a pipe), or its
    question answered elsewhere (``resolved``, a pipe written for each such answer, with the
    question ids in ``answered``)."""

    ended: int
    resolved: int
    answered: set[str] = field(default_factory=set)

    def answered_elsewhere(self, question_id: str, wait: float = 0.0) -> bool:
        """Whether ``question_id`` was answered elsewhere, waiting up to ``wait`` seconds for
        the event; the wake-ups read meanwhile are consumed (they may be another question's)."""
        deadline = time.monotonic() + wait
        while question_id not in self.answered:
            left = max(deadline - time.monotonic(), 0.0)
            ready, _, _ = select.select([self.resolved], [], [], left)
            if not ready:
                return False
            os.read(self.resolved, 64)
        return True


def _read_answer(prompt: str, ctx: Ctx, wakes: _Wakes, question_id: str) -> str | None:
    """A line from the terminal, or ``None`` when the question was answered elsewhere or the
    call ended."""
    ctx.err.write(prompt)
    ctx.err.flush()
    while not wakes.answered_elsewhere(question_id):
        ready, _, _ = select.select([sys.stdin, wakes.ended, wakes.resolved], [], [])
        if sys.stdin in ready:
            return sys.stdin.readline()
        if wakes.ended in ready:
            ctx.err.write("\n")  # the prompt's line ends here; what ended it is said next
            # The call's reply may come in before the event that a person answered (two
            # connections, two threads): the daemon sent that event first, so it is a moment away.
            if wakes.answered_elsewhere(question_id, ANSWER_EVENT_GRACE):
                ctx.note("(answered elsewhere)")
            return None
    ctx.err.write("\n")
    ctx.note("(answered elsewhere)")
    return None


def _on_approval(ctx: Ctx, approval: dict[str, Any], wakes: _Wakes) -> None:
    approval_id = str(approval.get("approvalId"))
    what = f"{approval.get('tool')} on server {approval.get('server')}"
    reason = f" ({approval['reason']})" if approval.get("reason") else ""
    ctx.note(f"Waiting for approval of {what}{reason}, approval {approval_id}.")
    if not (sys.stdin.isatty() and ctx.err.isatty()):
        ctx.note(f"Answer it elsewhere: {PROG} approvals allow {approval_id}  (or deny)")
        return
    answer = _read_answer(ALLOW_PROMPT, ctx, wakes, approval_id)
    if answer is None:
        return
    try:
        said = respond(ctx.call, approval_id, ask_decision(answer))
    except RpcError as exc:
        if exc.kind != "approval_not_found":
            raise
        ctx.note(f"{approval_id} was answered elsewhere")
        return
    if said is not None:
        ctx.note(said)


def _on_elicitation(ctx: Ctx, question: dict[str, Any], wakes: _Wakes) -> None:
    eid = str(question.get("elicitationId"))
    ctx.note(f"Waiting for an answer to {question.get('server')}'s question, elicitation {eid}.")
    if not (sys.stdin.isatty() and ctx.err.isatty()):
        ctx.note(f"Answer it elsewhere: {PROG} requests watch")
        return

    def ask(prompt: str) -> str | None:
        line = _read_answer(prompt, ctx, wakes, eid)
        return None if line is None else line.rstrip("\n")

    answer_elicitation(ctx, question, ctx.note, ask, ctx.style)


def _cancel(ctx: Ctx, params: dict[str, Any]) -> int:
    try:
        ctx.call("turns.cancel", {"turnId": params["turnId"], "callId": params["callId"]})
    except (RpcError, OSError, TimeoutError):
        pass  # the turn or call is gone already: nothing left to cancel
    ctx.fail(f"interrupted: cancelled the call {params['callId']} (and its pending approval)")
    return EXIT_INTERRUPTED


def _watch_questions(
    ctx: Ctx, call_id: str, inbox: queue.Queue[Any], wakes: tuple[int, set[str]]
) -> _QuestionThread | None:
    """The thread reading this call's questions (``None`` if this meworkd has no events)."""
    stream = ctx.connect(stream=True)
    try:
        # Subscribed before the call starts, so its questions cannot be missed.
        stream.call("events.subscribe", {"topics": list(_TOPICS)})
    except RpcError as exc:
        stream.close()
        if exc.code == METHOD_NOT_FOUND:
            return None  # the call itself still works; it just cannot say it waits
        raise
    questions = _QuestionThread(stream, call_id, inbox, wakes)
    questions.start()
    return questions


def run_call(cmd: Command, ctx: Ctx) -> int:
    params: dict[str, Any] = cmd.params(ctx.args) or {}
    params.setdefault("callId", f"ctl-{os.urandom(6).hex()}")
    inbox: queue.Queue[Any] = queue.Queue()
    caller = _CallThread(ctx, params, inbox)
    resolved_read, resolved_write = os.pipe()
    wakes = _Wakes(caller.wake_read, resolved_read)
    questions = _watch_questions(ctx, params["callId"], inbox, (resolved_write, wakes.answered))
    try:
        caller.start()
        while True:
            kind, value = inbox.get()
            if kind == "approval":
                _on_approval(ctx, value, wakes)
            elif kind == "elicitation":
                _on_elicitation(ctx, value, wakes)
            elif kind == "error":
                return _call_lost(ctx, value)
            elif _denied_by_stopping(value, questions):
                return _call_lost(ctx, ConnectionError("meworkd stopped"))
            else:
                return _finish(cmd, ctx, value)
    except KeyboardInterrupt:
        return _cancel(ctx, params)
    finally:
        if questions is not None:
            questions.stream.shutdown()


def _denied_by_stopping(result: Any, questions: _QuestionThread | None) -> bool:
    """Whether the call ended in error because meworkd stopped while its question waited (a
    graceful stop answers it "not approved: meworkd is shutting down"; the event saying so
    comes on the other connection, a moment away at most)."""
    if questions is None or not questions.ids or not obj(result).get("isError"):
        return False
    return questions.stopped.wait(ANSWER_EVENT_GRACE)


def _call_lost(ctx: Ctx, error: Exception) -> int:
    """The call's connection failed or meworkd answered that it is stopping: it stopped (or
    died) while the call waited. Else the call was refused (raised, for
    :func:`mework_client.ctl.main.run` to say)."""
    lost = isinstance(error, ConnectionError) and not isinstance(error, DaemonNotRunning)
    if lost or (isinstance(error, RpcError) and error.kind == "shutting_down"):
        ctx.fail(
            "meworkd stopped while the call waited: it did not finish "
            "(start meworkd again, then call again in a new turn)"
        )
        return EXIT_NOT_RUNNING
    raise error


def _finish(cmd: Command, ctx: Ctx, result: Any) -> int:
    ctx.emit(result, lambda: cmd.render(result, ctx.args, ctx.style))
    problem = cmd.failed(result)
    if problem:
        ctx.fail(problem)
        return 1
    return EXIT_OK
