"""MCP tasks on the session's side: a ``tools/call`` answered with a task, followed to its end.

Two shapes are spoken. The 2026-07-28 extension (``io.modelcontextprotocol/tasks``, advertised
on every request of such a session): the server alone decides to answer with a flat
``CreateTaskResult`` (``resultType: "task"``); ``tasks/get`` carries the status, the input
requests (answered with ``tasks/update``, each key once) and, at the end, the result or the
JSON-RPC error. The 2025-11-25 experimental tasks: asked for with ``params.task`` on a tool whose
``execution.taskSupport`` is ``"required"``; the answer nests the task under ``task``; the
payload (and, while it is fetched, the server's questions) comes through the blocking
``tasks/result``.

What a task may do to the host is bounded here: its poll interval (``pollIntervalMs``, clamped),
its whole life (``mcp.task_max_seconds``), each poll (the server's timeout), its questions (a
question the task stops asking while a person thinks is withdrawn). Recording it, announcing it
and cancelling it on the server when its call ends early are the core's (a
:class:`TaskWatcher`), since only the core knows why a call ended. The requests themselves are
:mod:`meworkd.mcp.taskwire`'s.
"""

from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp import ClientSession, MCPError
from mcp.client import ClientRequestContext
from pydantic import ValidationError

from meworkd.mcp.asks import ASKED_BY_CURRENT_CALL
from meworkd.mcp.callclock import CallClock
from meworkd.mcp.errors import TalkFailed
from meworkd.mcp.taskwire import (
    MAX_POLL_SECONDS,
    MIN_POLL_SECONDS,
    TERMINAL,
    RawResult,
    TaskState,
    TaskTicket,
    cancel_task,
    cancelled_by_server,
    get_task,
    invalid_task,
    legacy_payload,
    ticket_of,
    update_task,
)

__all__ = [
    "MAX_POLL_SECONDS",
    "MIN_POLL_SECONDS",
    "RawResult",
    "TaskOptions",
    "TaskState",
    "TaskTicket",
    "TaskWatcher",
    "cancel_task",
    "run_task",
    "ticket_of",
]

MAX_INPUT_REQUESTS = 100  # questions one task may ask in its life
# Failures that say the server holds no running task any more: nothing to cancel.
_ENDED_ON_THE_SERVER = frozenset({"task_lost", "task_failed", "task_cancelled"})


class TaskWatcher(Protocol):
    """The host's side of a task: told when it starts (and may refuse it) and when it changes;
    ``stopping`` while the host stops (the answers its questions get then are not a person's)."""

    def started(self, ticket: TaskTicket) -> None:
        """Raises a MeworkError to refuse the task (it is then cancelled on the server)."""

    def changed(self, state: TaskState) -> None: ...

    @property
    def stopping(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class TaskOptions:
    """What a call needs to follow a task: the host's watcher, the bound on the task's whole
    life (``mcp.task_max_seconds``), and whether to ask for one (2025-11-25: the tool's
    ``execution.taskSupport`` is ``"required"``)."""

    watcher: TaskWatcher
    max_seconds: float
    as_task: bool = False


class _Following:
    __slots__ = ("status",)

    def __init__(self, status: str) -> None:
        self.status = status


async def run_task(
    client: ClientSession,
    ticket: TaskTicket,
    options: TaskOptions,
    clock: CallClock,
    *,
    resumed: bool = False,
) -> dict[str, Any]:
    """The task's ``tools/call`` result as the server sent it (not yet shaped), once it ends.

    Each ``tasks/get`` waits at most the call's timeout; the whole task
    ``options.max_seconds``; ``resumed``: followed again after meworkd restarted. A task the
    watcher refuses, or left before it ended (the call cancelled, the task too long, its polls
    not tasks), is cancelled on the server; not when the cancellation came from outside the
    call (meworkd stopping: a Streamable HTTP server's task is followed again when it starts).

    Raises:
        TalkFailed: the task failed, was cancelled by the server, ran past ``max_seconds``,
            was forgotten, or its polls were not valid tasks.
        MCPError: a poll's error reply, or the task's own JSON-RPC error.
    """
    following = _Following(ticket.status)
    try:
        if not resumed:  # (a task followed again was recorded by the run that started it)
            options.watcher.started(ticket)
        with anyio.move_on_after(options.max_seconds):
            watcher = options.watcher
            # Followed again, its first poll is news: the host's record may be stale.
            last = None if resumed else (ticket.status, ticket.message)
            return await _follow(client, ticket, watcher, clock.timeout, following, last)
        raise TalkFailed(
            f"the task ran longer than {options.max_seconds:g} s",
            reason="task_too_long",
            call_text=(
                f"The tool's task was still running after {options.max_seconds:g} seconds (the "
                "limit set by mcp.task_max_seconds), so it was cancelled."
            ),
        )
    except BaseException as exc:
        from_outside = isinstance(exc, anyio.get_cancelled_exc_class()) and not clock.cancelled
        gone = isinstance(exc, TalkFailed) and exc.data.get("reason") in _ENDED_ON_THE_SERVER
        if following.status not in TERMINAL and not from_outside and not gone:
            await cancel_task(client, ticket)
        raise


async def _follow(
    client: ClientSession,
    ticket: TaskTicket,
    watcher: TaskWatcher,
    read_seconds: float,
    following: _Following,
    last: tuple[str, str | None] | None,
) -> dict[str, Any]:
    answered: set[str] = set()
    wait = ticket.poll_seconds if ticket.status not in TERMINAL else 0.0
    while True:
        await anyio.sleep(wait)
        state = await get_task(client, ticket, read_seconds)
        following.status = state.status
        if (state.status, state.message) != last:
            last = (state.status, state.message)
            watcher.changed(state)
        wait = state.poll_seconds
        if ticket.legacy and state.status != "working":
            # The payload, and the questions asked on the way, come through the blocking call.
            payload = await legacy_payload(client, ticket, state)
            following.status = "completed"
            return payload
        if state.status == "completed":
            assert state.result is not None  # (checked by _get)
            return state.result
        if state.status == "failed":
            raise _failed(state)
        if state.status == "cancelled":
            raise cancelled_by_server(state)
        if state.status == "input_required":
            await _answer(client, ticket, watcher, state, answered, read_seconds)


def _failed(state: TaskState) -> Exception:
    try:
        return MCPError.from_error_data(types.ErrorData.model_validate(state.error))
    except ValidationError:
        why = state.message or "no reason given"
        return TalkFailed(
            f"the task failed: {why}",
            reason="task_failed",
            call_text=f"The tool's task failed on the MCP server: {why}",
        )


async def _answer(
    client: ClientSession,
    ticket: TaskTicket,
    watcher: TaskWatcher,
    state: TaskState,
    answered: set[str],
    read_seconds: float,
) -> None:
    """Ask the person each question not asked yet (the same pending request comes back on
    every poll until the server has the answer), then send the answers with tasks/update.

    The task is polled meanwhile: one that stops asking (it ended, or was answered elsewhere)
    takes its questions back from the person, and the caller's next poll says what became of it.
    """
    pending = {key: value for key, value in state.input_requests.items() if key not in answered}
    if not pending:
        return
    if len(answered) + len(pending) > MAX_INPUT_REQUESTS:
        raise TalkFailed(
            f"the task asked more than {MAX_INPUT_REQUESTS} questions",
            reason="too_many_questions",
            call_text=f"The tool's task asked more than {MAX_INPUT_REQUESTS} questions, so the "
            "call was ended.",
        )
    try:
        parsed = types.InputRequiredResult.model_validate(
            {"resultType": "input_required", "inputRequests": pending}
        )
    except ValidationError:
        raise invalid_task("tasks/get") from None
    responses: dict[str, Any] = {}
    failed: list[Exception] = []  # raised after the task group, not wrapped in a group
    async with anyio.create_task_group() as tg:
        withdrawn = tg.cancel_scope
        watch = (client, ticket, set(pending), state, read_seconds, failed, withdrawn)
        tg.start_soon(_until_withdrawn, *watch)
        certain = ASKED_BY_CURRENT_CALL.set(True)  # these questions are this call's, surely
        try:
            for key, request in (parsed.input_requests or {}).items():
                context = ClientRequestContext(session=client, request_id=key)
                answer = await client.dispatch_input_request(context, request)
                if isinstance(answer, types.ErrorData):
                    failed.append(MCPError.from_error_data(answer))
                    break
                responses[key] = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
                answered.add(key)
        finally:
            ASKED_BY_CURRENT_CALL.reset(certain)
        withdrawn.cancel()  # answered (or refused): the watch is over
    if failed:
        raise failed[0]
    if len(responses) < len(pending):
        return  # taken back: nothing to send for the questions the person did not answer
    if watcher.stopping:
        # The host ended the questions because it is stopping; the task is not the host's to
        # answer: it stays as it is (an HTTP server's is followed again) until the host's own
        # cancellation, which follows, ends this.
        await anyio.sleep_forever()
    await update_task(client, ticket, responses, read_seconds)


async def _until_withdrawn(
    client: ClientSession,
    ticket: TaskTicket,
    keys: set[str],
    state: TaskState,
    read_seconds: float,
    failed: list[Exception],
    questions: anyio.CancelScope,
) -> None:
    """Poll while the person thinks; when the task no longer asks ``keys`` (or a poll fails,
    kept in ``failed``), cancel ``questions``."""
    try:
        while True:
            await anyio.sleep(state.poll_seconds)
            state = await get_task(client, ticket, read_seconds)
            if state.status != "input_required" or keys.isdisjoint(state.input_requests):
                break
    except (TalkFailed, MCPError) as exc:
        failed.append(exc)
    questions.cancel()
