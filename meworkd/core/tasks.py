"""MCP tasks from the host's side: each call's task recorded, announced and bounded per server;
the tasks of Streamable HTTP servers followed again when meworkd starts; ``tasks.*``.

A call whose server answers with a task waits for the task as it would for a direct reply
(:mod:`meworkd.mcp.tasks` polls it); :class:`CallTask` is that call's watcher. The task is
recorded in the state database when it starts (:mod:`meworkd.core.tasklog`) and announced as
``task.started``, ``task.progress``, ``task.input_required``, ``task.completed`` and
``task.failed`` (also for a task cancelled). A Streamable HTTP server keeps running its tasks
while meworkd restarts, so such a call's audit record stays open when meworkd stops, and the
next run follows the task again (:meth:`Tasks.serve`): its reply goes where a background call's
goes (``calls.result``), and its outcome to the same audit record. A stdio server's tasks end
with its process: they are marked failed, with that reason.
"""

from typing import Any

import anyio
from anyio.abc import TaskStatus

from meworkd.base.clock import wire_time
from meworkd.base.errors import MeworkError, ServerUnavailable, ShuttingDown, TaskNotFound
from meworkd.base.events import EventBus
from meworkd.base.log import get_logger
from meworkd.core.approvals.gate import Decision
from meworkd.core.approvals.policy import DecidedBy
from meworkd.core.asks import ServerAsks
from meworkd.core.callrecord import CallRecord
from meworkd.core.replies import Redact, error_result, refuse_oversized, to_wire
from meworkd.core.state import StateDB
from meworkd.core.tasklog import TaskRow, endpoint_of
from meworkd.core.toolcall import ToolCall
from meworkd.mcp import (
    CallClock,
    SessionPool,
    TalkFailed,
    TaskOptions,
    TaskState,
    TaskTicket,
    call_failure_text,
    resume_task,
)
from meworkd.settings import McpOptions, ServerConfig
from meworkd.settings.store import SettingsStore

__all__ = ["MAX_OPEN_TASKS_PER_SERVER", "CallTask", "Tasks"]

MAX_OPEN_TASKS_PER_SERVER = 100
FIRST_RETRY_SECONDS = 1.0  # a server unreachable when a task is followed again
LAST_RETRY_SECONDS = 60.0
log = get_logger("meworkd.tasks")

_TOPICS = {
    "working": "task.progress",
    "input_required": "task.input_required",
    "completed": "task.completed",
    "failed": "task.failed",
    "cancelled": "task.failed",
}
STOPPED_WITH_PROCESS = "its server's process ended when meworkd stopped"
WAITING_FOR_SERVER = "meworkd is waiting to reach its server again:"


class CallTask:
    """One call's task, from the server's answer to its end (a :class:`TaskWatcher`)."""

    def __init__(self, tasks: "Tasks", record: CallRecord, config: ServerConfig) -> None:
        self._tasks = tasks
        self._record = record
        self._durable = config.type != "stdio"
        self._url = config.url
        self.row: TaskRow | None = None

    def started(self, ticket: TaskTicket) -> None:
        call, db = self._record.call, self._tasks.db
        if db.open_tasks_of(call.server) >= MAX_OPEN_TASKS_PER_SERVER:
            raise TalkFailed(
                f"{call.server} holds {MAX_OPEN_TASKS_PER_SERVER} open tasks already",
                reason="too_many_tasks",
                call_text=(
                    f"The MCP server {call.server} answered with a task, but it already runs "
                    f"{MAX_OPEN_TASKS_PER_SERVER} tasks for meworkd, the most it may; the new "
                    "task was cancelled. Try again once some have ended."
                ),
            )
        allowed = self._record.allowed
        now = wire_time()
        self.row = TaskRow(
            call_id=call.call_id,
            task_id=ticket.task_id,
            conversation_id=call.conversation_id,
            turn_id=call.turn_id,
            server=call.server,
            tool=call.tool,
            name=call.name,
            arguments_digest=call.arguments_digest,
            origin=call.origin,
            audit_id=self._record.id,
            requested_at=self._record.time,
            decided_by=(allowed.decided_by if allowed else DecidedBy.POLICY).value,
            legacy=ticket.legacy,
            durable=self._durable,
            endpoint=endpoint_of(self._url),
            status=ticket.status,
            message=ticket.message,
            created_at=now,
            updated_at=now,
        )
        db.record_task(self.row)
        # meworkd stopping no longer ends the call: the next run follows its task again.
        self._record.outlives_daemon = self._durable
        self._tasks.announce("task.started", self.row)

    def changed(self, state: TaskState) -> None:
        self._set(state.status, state.message)

    @property
    def stopping(self) -> bool:
        return self._tasks.asks.stopping

    def waiting(self, why: str) -> None:
        """Its server cannot be reached yet (followed again after a restart): said as its
        message, until the server answers."""
        if self.row is not None:
            self._set(self.row.status, why, "task.progress")

    def _set(self, status: str, message: str | None, topic: str | None = None) -> None:
        if self.row is None or self.row.ended:
            return
        try:
            row = self._tasks.db.update_task(self.row.call_id, status, message)
        except ShuttingDown:
            return  # (the next run reads what the database has)
        if row is not None:
            self.row = row
            self._tasks.announce(topic or _TOPICS.get(status, "task.progress"), row)

    def settled(self, result: dict[str, Any]) -> None:
        """The call has its reply: a task not seen ending (a 2025-11-25 payload) ended."""
        self._set("completed", None)

    def failed(self, why: str) -> None:
        self._set("failed", why)

    def left(self, by_caller: bool) -> None:
        """The call was cancelled: by its caller (the task was cancelled on the server), or
        from outside, by meworkd stopping: the task stays open on record, and the next run
        follows it again (an HTTP server's) or ends it with why (a stdio server's, whose
        process ends now), keeping a reply for ``calls.result``."""
        if by_caller:
            self._set("cancelled", "cancelled by the user")


class Tasks:
    """The ``tasks.*`` façade, and the owner of tasks followed again after a restart."""

    def __init__(
        self,
        db: StateDB,
        bus: EventBus,
        pool: SessionPool,
        store: SettingsStore,
        asks: ServerAsks,
        redact: Redact,
    ) -> None:
        self.db = db
        self._bus = bus
        self._pool = pool
        self._store = store
        self.asks = asks  # the questions tasks ask go where the servers' own go
        self._redact = redact
        self._clocks: dict[str, CallClock] = {}  # the calls whose tasks run now, by call id

    def watch(self, record: CallRecord, config: ServerConfig, clock: CallClock) -> CallTask:
        """A call's watcher; ``tasks.cancel`` reaches the call through ``clock`` meanwhile."""
        self._clocks[record.call.call_id] = clock
        return CallTask(self, record, config)

    def unwatch(self, call_id: str) -> None:
        self._clocks.pop(call_id, None)

    def options(self, task: CallTask, as_task: bool) -> TaskOptions:
        return TaskOptions(task, self._store.settings.mcp.task_max_seconds, as_task)

    def announce(self, topic: str, row: TaskRow) -> None:
        log.info(topic, call=row.call_id, server=row.server, status=row.status)
        self._bus.publish(topic, row.wire())

    # --- for frontends -------------------------------------------------------------------

    def listing(self, conversation_id: str | None, open_only: bool) -> list[dict[str, Any]]:
        if conversation_id is not None:
            self.db.get_conversation(conversation_id)  # a mistyped id is an error, not []
        rows = self.db.tasks(conversation_id, open_only=open_only)
        return [self._view(row) for row in rows]

    def get(self, call_id: str) -> dict[str, Any]:
        row = self.db.task(call_id)
        if row is None:
            raise TaskNotFound(call_id)
        return self._view(row)

    def _view(self, row: TaskRow) -> dict[str, Any]:
        return {**row.wire(), "followed": row.call_id in self._clocks}

    def cancel(self, call_id: str) -> bool:
        """Cancel a call's task (on the server too); False when it had ended already."""
        row = self.db.task(call_id)
        if row is None:
            raise TaskNotFound(call_id)
        if row.ended:
            return False
        if (clock := self._clocks.get(call_id)) is not None:
            clock.cancel()  # its follower sends tasks/cancel and records the end
        else:  # not followed now (its server was removed since): nothing more to reach
            self._end(row, "cancelled", "cancelled by the user")
        return True

    def end_conversation(self, conversation_id: str) -> None:
        for row in self.db.tasks(conversation_id, open_only=True):
            if (clock := self._clocks.get(row.call_id)) is not None:
                clock.cancel()

    def _end(self, row: TaskRow, status: str, message: str) -> None:
        ended = self.db.update_task(row.call_id, status, message)
        if ended is not None:
            self.announce(_TOPICS[status], ended)

    # --- after a restart -----------------------------------------------------------------

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Follow again the open tasks an earlier run left (until cancelled: meworkd
        stopping leaves them open again); the others are ended, with why."""
        async with anyio.create_task_group() as tg:
            for row in self.db.tasks(open_only=True):
                if (why := self._cannot_follow(row)) is not None:
                    self._end(row, "failed", why)
                    self._keep(row, error_result(f"The tool's task ended: {why}."))
                else:
                    tg.start_soon(self._follow_again, row)
            task_status.started()

    def _cannot_follow(self, row: TaskRow) -> str | None:
        if not row.durable:
            return STOPPED_WITH_PROCESS
        config = self._store.settings.servers.get(row.server)
        if config is None or not config.enabled:
            return f"its server {row.server} was removed or disabled while meworkd was stopped"
        if endpoint_of(config.url) != row.endpoint:
            return f"its server {row.server} was given another URL while meworkd was stopped"
        return None

    async def _follow_again(self, row: TaskRow) -> None:
        settings = self._store.settings
        config = settings.servers[row.server]
        call = ToolCall(*_call_fields(row))
        record = CallRecord(self.db, self._bus, call, reopened=(row.audit_id, row.requested_at))
        record.allowed = Decision(True, DecidedBy(row.decided_by), None)
        clock = CallClock()
        clock.bind(config, settings.mcp.max_reply_bytes)
        self._clocks[row.call_id] = clock
        task = CallTask(self, record, config)
        task.row = row
        log.info("task.followed_again", call=row.call_id, server=row.server)
        result: dict[str, Any] | None = None
        try:
            with clock.scope, self.asks.inflight.running(call, clock, patient=True):
                result = await self._resume(row, config, task, clock, settings.mcp)
            if clock.cancelled:
                task.left(by_caller=True)
                result = error_result("The call was cancelled.")
            else:
                assert result is not None
                task.settled(result)
        except ServerUnavailable as exc:
            task.failed(exc.message)
            result = error_result(call_failure_text(exc, row.server))
        except MeworkError:  # the state database closing under it: meworkd is stopping
            return
        finally:
            self._clocks.pop(row.call_id, None)
        self._finish(record, row, result, settings.mcp.max_reply_bytes)

    async def _resume(
        self, row: TaskRow, config: ServerConfig, task: CallTask, clock: CallClock, mcp: McpOptions
    ) -> dict[str, Any]:
        """The task's reply. A server not reachable yet (it may be starting too) is tried again,
        after 1 s and then twice as long each time up to a minute, within the task's bound."""
        ticket = TaskTicket(row.task_id, row.legacy, row.status, row.message, 0.0, None)
        options = TaskOptions(task, mcp.task_max_seconds, ticket.legacy)
        deadline = anyio.current_time() + mcp.task_max_seconds
        pause = FIRST_RETRY_SECONDS
        while True:
            try:
                return await self._pool.using(
                    row.conversation_id,
                    row.server,
                    config,
                    lambda client: resume_task(
                        client,
                        ticket,
                        clock=clock,
                        tasks=options,
                        reply_limit=mcp.max_reply_bytes,
                    ),
                )
            except TalkFailed:
                raise  # the server answered: it is the task's end
            except ServerUnavailable as exc:
                if anyio.current_time() + pause > deadline:
                    raise
                log.warning(
                    "task.server_unreachable",
                    call=row.call_id,
                    server=row.server,
                    error=exc.message,
                    retry_seconds=pause,
                )
                task.waiting(f"{WAITING_FOR_SERVER} {exc.message}")
                await anyio.sleep(pause)
                pause = min(pause * 2, LAST_RETRY_SECONDS)

    def _finish(self, record: CallRecord, row: TaskRow, result: dict[str, Any], limit: int) -> None:
        result, encoded, size = refuse_oversized(result, limit)
        is_error = bool(result.get("isError"))
        assert record.allowed is not None
        record.finish("allow", record.allowed.decided_by, None, size, is_error=is_error)
        self._keep(row, result, encoded)

    def _keep(self, row: TaskRow, result: dict[str, Any], encoded: bytes | None = None) -> None:
        wire = to_wire(self._redact, result, encoded)
        self.db.keep_result(row.call_id, row.conversation_id, row.turn_id, bytes(wire))


def _call_fields(row: TaskRow) -> tuple[str, ...]:
    return (
        row.conversation_id,
        row.turn_id,
        row.call_id,
        row.server,
        row.tool,
        row.name,
        row.arguments_digest,
        row.origin,
    )
