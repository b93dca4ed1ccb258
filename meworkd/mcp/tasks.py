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
its whole life (``mcp.task_max_seconds``), each poll (the server's timeout), its questions.
Recording it, announcing it and cancelling it on the server when its call ends early are the
core's (a :class:`TaskWatcher`), since only the core knows why a call ended.
"""

from dataclasses import dataclass
from typing import Any, Literal, Protocol

import anyio
import mcp_types as types
from mcp import ClientSession, MCPError
from mcp.client import ClientRequestContext
from pydantic import BaseModel, ConfigDict, ValidationError

from meworkd.mcp.asks import ASKED_BY_CURRENT_CALL
from meworkd.mcp.callclock import CallClock
from meworkd.mcp.errors import TalkFailed

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

MIN_POLL_SECONDS = 0.2  # a pollIntervalMs of 0 must not become a tight loop
MAX_POLL_SECONDS = 30.0  # nor 10^9 ms a task never looked at again
DEFAULT_POLL_SECONDS = 1.0
MAX_INPUT_REQUESTS = 100  # questions one task may ask in its life
CANCEL_SECONDS = 5.0  # a tasks/cancel sent on the way out waits no longer
STATUSES = frozenset({"working", "input_required", "completed", "failed", "cancelled"})
TERMINAL = frozenset({"completed", "failed", "cancelled"})
# Failures that say the server holds no running task any more: nothing to cancel.
_ENDED_ON_THE_SERVER = frozenset({"task_lost", "task_failed", "task_cancelled"})


class RawResult(BaseModel):
    """A result as the server sent it (every member kept, as is)."""

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True, slots=True)
class TaskTicket:
    """A task a server created for a call: what is needed to follow it, also after a restart."""

    task_id: str
    legacy: bool  # the 2025-11-25 shape
    status: str
    message: str | None
    poll_seconds: float
    ttl_ms: int | None


@dataclass(frozen=True, slots=True)
class TaskState:
    """One ``tasks/get`` answer: the status, and what goes with it."""

    status: str
    message: str | None
    poll_seconds: float
    input_requests: dict[str, Any]
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class TaskWatcher(Protocol):
    """The host's side of a task: told when it starts (and may refuse it) and when it changes;
    ``stopping`` while the host stops (the answers its questions get then are not a person's)."""

    def started(self, ticket: TaskTicket) -> None:
        """Raises a MeworkError to refuse the task (it is then cancelled on the server)."""

    def changed(self, state: TaskState) -> None: ...

    @property
    def stopping(self) -> bool: ...


def invalid_task(what: str) -> TalkFailed:
    return TalkFailed(
        f"the server answered {what} with something that is not a task",
        reason="invalid_task",
        call_text=(
            f"The MCP server's answer to {what} was not a valid task, so the call was ended "
            "(and the task cancelled on the server)."
        ),
    )


def _poll_seconds(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return DEFAULT_POLL_SECONDS
    return min(max(value / 1000, MIN_POLL_SECONDS), MAX_POLL_SECONDS)


def _task_fields(task: dict[str, Any], legacy: bool, what: str) -> tuple[str, str | None, float]:
    status, message = task.get("status"), task.get("statusMessage")
    if status not in STATUSES or not isinstance(message, str | None):
        raise invalid_task(what)
    poll = task.get("pollInterval" if legacy else "pollIntervalMs")
    return str(status), message, _poll_seconds(poll)


def ticket_of(raw: dict[str, Any], *, legacy: bool) -> TaskTicket | None:
    """The task a ``tools/call`` result stands for, or None for an ordinary result.

    Raises:
        TalkFailed: (reason ``invalid_task``) it says it is a task but is not a valid one.
    """
    if legacy:
        if "task" not in raw or "content" in raw:
            return None
        task = raw["task"]
    elif raw.get("resultType") == "task":
        task = raw
    else:
        return None
    if not isinstance(task, dict):
        raise invalid_task("tools/call")
    task_id = task.get("taskId")
    if not isinstance(task_id, str) or not 0 < len(task_id) <= 512:
        raise invalid_task("tools/call")
    status, message, poll = _task_fields(task, legacy, "tools/call")
    ttl = task.get("ttl" if legacy else "ttlMs")
    ttl_ms = ttl if isinstance(ttl, int) and not isinstance(ttl, bool) else None
    return TaskTicket(task_id, legacy, status, message, poll, ttl_ms)


class _TaskIdParams(types.RequestParams):
    task_id: str


class _UpdateParams(_TaskIdParams):
    input_responses: dict[str, Any]


class _Get(types.Request[_TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param = "taskId"  # the Mcp-Name header the extension asks for on HTTP


class _Update(types.Request[_UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    name_param = "taskId"


class _Cancel(types.Request[_TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param = "taskId"


class _Payload(types.Request[_TaskIdParams, Literal["tasks/result"]]):
    method: Literal["tasks/result"] = "tasks/result"


async def _request(
    client: ClientSession, request: Any, read_seconds: float | None
) -> dict[str, Any]:
    result = await client.send_request(
        request, RawResult, request_read_timeout_seconds=read_seconds
    )
    return result.model_extra or {}


async def _get(client: ClientSession, ticket: TaskTicket, read_seconds: float) -> TaskState:
    try:
        raw = await _request(
            client, _Get(params=_TaskIdParams(task_id=ticket.task_id)), read_seconds
        )
    except ValidationError:
        raise invalid_task("tasks/get") from None
    except MCPError as exc:
        if exc.code != types.INVALID_PARAMS:
            raise
        raise TalkFailed(
            f"the server no longer knows the task ({exc.message})",
            reason="task_lost",
            call_text="The MCP server no longer knows the task this call started (it may have "
            "expired or the server restarted), so its result is lost.",
        ) from None
    status, message, poll = _task_fields(raw, ticket.legacy, "tasks/get")
    requests, result, error = raw.get("inputRequests"), raw.get("result"), raw.get("error")
    if (
        not isinstance(requests, dict | None)
        or not isinstance(result, dict | None)
        or not isinstance(error, dict | None)
    ):
        raise invalid_task("tasks/get")
    if not ticket.legacy and status == "completed" and result is None:
        raise invalid_task("tasks/get")
    return TaskState(status, message, poll, requests or {}, result, error)


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
        state = await _get(client, ticket, read_seconds)
        following.status = state.status
        if (state.status, state.message) != last:
            last = (state.status, state.message)
            watcher.changed(state)
        wait = state.poll_seconds
        if ticket.legacy and state.status != "working":
            # The payload, and the questions asked on the way, come through the blocking call.
            payload = await _legacy_payload(client, ticket, state)
            following.status = "completed"
            return payload
        if state.status == "completed":
            assert state.result is not None  # (checked by _get)
            return state.result
        if state.status == "failed":
            raise _failed(state)
        if state.status == "cancelled":
            raise _cancelled_by_server(state)
        if state.status == "input_required":
            await _answer(client, ticket, watcher, state, answered, read_seconds)


async def _legacy_payload(
    client: ClientSession, ticket: TaskTicket, state: TaskState
) -> dict[str, Any]:
    if state.status == "cancelled":
        raise _cancelled_by_server(state)
    try:
        return await _request(client, _Payload(params=_TaskIdParams(task_id=ticket.task_id)), None)
    except ValidationError:
        raise invalid_task("tasks/result") from None


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


def _cancelled_by_server(state: TaskState) -> TalkFailed:
    why = f": {state.message}" if state.message else ""
    return TalkFailed(
        f"the server cancelled the task{why}",
        reason="task_cancelled",
        call_text=f"The MCP server cancelled the tool's task{why}.",
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
    every poll until the server has the answer), then send the answers with tasks/update."""
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
    certain = ASKED_BY_CURRENT_CALL.set(True)  # these questions are this call's, surely
    try:
        for key, request in (parsed.input_requests or {}).items():
            context = ClientRequestContext(session=client, request_id=key)
            answer = await client.dispatch_input_request(context, request)
            if isinstance(answer, types.ErrorData):
                raise MCPError.from_error_data(answer)
            responses[key] = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
            answered.add(key)
    finally:
        ASKED_BY_CURRENT_CALL.reset(certain)
    if watcher.stopping:
        # The host ended the questions because it is stopping; the task is not the host's to
        # answer: it stays as it is (an HTTP server's is followed again) until the host's own
        # cancellation, which follows, ends this.
        await anyio.sleep_forever()
    params = _UpdateParams(task_id=ticket.task_id, input_responses=responses)
    await _request(client, _Update(params=params), read_seconds)


async def cancel_task(client: ClientSession, ticket: TaskTicket) -> None:
    """``tasks/cancel``, shielded and bounded: sent on the way out of a call ended early.
    Whatever the server answers, the host is done with the task."""
    with anyio.move_on_after(CANCEL_SECONDS, shield=True):
        try:
            request = _Cancel(params=_TaskIdParams(task_id=ticket.task_id))
            await _request(client, request, CANCEL_SECONDS)
        except Exception:  # noqa: BLE001 (cooperative: the task may be gone already)
            pass
