"""MCP tasks on the wire: a task answer read, and the ``tasks/*`` requests and their replies.

What :mod:`meworkd.mcp.tasks` follows a task with, kept apart from how it follows it: the
ticket a ``tools/call`` answer stands for (either shape), one ``tasks/get`` read into a
:class:`TaskState` (anything that is not a task refused as ``invalid_task``, a forgotten task as
``task_lost``), ``tasks/update``, ``tasks/cancel`` and the 2025-11-25 blocking ``tasks/result``.
Over Streamable HTTP the SDK sends ``Mcp-Name: <taskId>`` with each (``name_param``).
"""

from dataclasses import dataclass
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp import ClientSession, MCPError
from pydantic import BaseModel, ConfigDict, ValidationError

from meworkd.mcp.errors import TalkFailed

__all__ = [
    "MAX_POLL_SECONDS",
    "MIN_POLL_SECONDS",
    "STATUSES",
    "TERMINAL",
    "RawResult",
    "TaskState",
    "TaskTicket",
    "cancel_task",
    "cancelled_by_server",
    "get_task",
    "invalid_task",
    "legacy_payload",
    "ticket_of",
    "update_task",
]

MIN_POLL_SECONDS = 0.2  # a pollIntervalMs of 0 must not become a tight loop
MAX_POLL_SECONDS = 30.0  # nor 10^9 ms a task never looked at again
DEFAULT_POLL_SECONDS = 1.0
CANCEL_SECONDS = 5.0  # a tasks/cancel sent on the way out waits no longer
STATUSES = frozenset({"working", "input_required", "completed", "failed", "cancelled"})
TERMINAL = frozenset({"completed", "failed", "cancelled"})


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


def invalid_task(what: str) -> TalkFailed:
    # A task answered with garbage is cancelled on the server; a tools/call answer that is no
    # valid task has no id to cancel.
    cancelled = "" if what == "tools/call" else " (and the task cancelled on the server)"
    return TalkFailed(
        f"the server answered {what} with something that is not a task",
        reason="invalid_task",
        call_text=(
            f"The MCP server's answer to {what} was not a valid task, so the call was "
            f"ended{cancelled}."
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


async def get_task(client: ClientSession, ticket: TaskTicket, read_seconds: float) -> TaskState:
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


async def legacy_payload(
    client: ClientSession, ticket: TaskTicket, state: TaskState
) -> dict[str, Any]:
    if state.status == "cancelled":
        raise cancelled_by_server(state)
    try:
        return await _request(client, _Payload(params=_TaskIdParams(task_id=ticket.task_id)), None)
    except ValidationError:
        raise invalid_task("tasks/result") from None


async def cancel_task(client: ClientSession, ticket: TaskTicket) -> None:
    """``tasks/cancel``, shielded and bounded: sent on the way out of a call ended early.
    Whatever the server answers, the host is done with the task."""
    with anyio.move_on_after(CANCEL_SECONDS, shield=True):
        try:
            request = _Cancel(params=_TaskIdParams(task_id=ticket.task_id))
            await _request(client, request, CANCEL_SECONDS)
        except Exception:  # noqa: BLE001 (cooperative: the task may be gone already)
            pass


async def update_task(
    client: ClientSession, ticket: TaskTicket, responses: dict[str, Any], read_seconds: float
) -> None:
    """``tasks/update``: the answers to the task's input requests, by key."""
    params = _UpdateParams(task_id=ticket.task_id, input_responses=responses)
    await _request(client, _Update(params=params), read_seconds)


def cancelled_by_server(state: TaskState) -> TalkFailed:
    why = f": {state.message}" if state.message else ""
    return TalkFailed(
        f"the server cancelled the task{why}",
        reason="task_cancelled",
        call_text=f"The MCP server cancelled the tool's task{why}.",
    )
