"""Making one allowed tool call on its server: progress as events, a clock that stops while a
person answers the server's question, the call registered as in flight for that binding, and
the MCP task it may become followed under its watcher (:mod:`meworkd.core.tasks`).
"""

from typing import Any

import anyio

from meworkd.base.errors import ServerUnavailable
from meworkd.base.events import EventBus
from meworkd.core.asks import ServerAsks
from meworkd.core.callrecord import CallRecord
from meworkd.core.replies import error_result
from meworkd.core.tasks import Tasks
from meworkd.core.toolcall import ToolCall
from meworkd.mcp import (
    CallClock,
    ProgressSink,
    SessionGone,
    SessionPool,
    TalkFailed,
    call_failure_text,
    call_tool,
    timed_out,
)
from meworkd.settings import Settings

__all__ = ["CallRunner"]


class CallRunner:
    def __init__(self, pool: SessionPool, bus: EventBus, asks: ServerAsks, tasks: Tasks) -> None:
        self._pool = pool
        self._bus = bus
        self._asks = asks
        self._tasks = tasks

    async def run(
        self,
        record: CallRecord,
        arguments: dict[str, Any],
        settings: Settings,
        clock: CallClock,
        *,
        as_task: bool = False,
    ) -> dict[str, Any]:
        """The call's result; ``clock``: the call's, whose scope the caller has entered (a
        timeout cancels it: the caller answers with :meth:`expired`); ``as_task``: the tool
        runs only as a (2025-11-25) task."""
        call = record.call
        config = settings.servers.get(call.server)
        if config is None or not config.enabled:  # a reload since the binding was checked
            return error_result(f"The MCP server {call.server} is no longer available.")

        clock.bind(config, settings.mcp.max_reply_bytes)
        task = self._tasks.watch(record, config, clock)
        tasks = self._tasks.options(task, as_task)
        try:
            with self._asks.inflight.running(call, clock):
                result = await self._pool.using(
                    call.conversation_id,
                    call.server,
                    config,
                    lambda client: call_tool(
                        client,
                        call.tool,
                        arguments,
                        clock=clock,
                        on_progress=self._progress_of(call),
                        reply_limit=settings.mcp.max_reply_bytes,
                        tasks=tasks,
                    ),
                )
        except ServerUnavailable as exc:
            task.failed(exc.message)
            if not isinstance(exc, TalkFailed | SessionGone):
                # Not the call failing but its session failing to open again (the server died
                # since the last call, or was retired): a server failure frontends show.
                self._pool.status.failed(call.server, call.conversation_id, exc)
            return error_result(call_failure_text(exc, call.server))
        except anyio.get_cancelled_exc_class():
            task.left(by_caller=clock.cancelled)
            raise
        finally:
            self._tasks.unwatch(call.call_id)
        task.settled(result)
        return result

    def _progress_of(self, call: ToolCall) -> ProgressSink:
        def progress(progress: float, total: float | None, message: str | None) -> None:
            self._bus.publish(
                "turn.progress",
                {
                    "turnId": call.turn_id,
                    "callId": call.call_id,
                    "conversationId": call.conversation_id,
                    "server": call.server,
                    "tool": call.tool,
                    "progress": progress,
                    "total": total,
                    "message": message,
                },
            )

        return progress

    def expired(self, server: str, clock: CallClock) -> dict[str, Any]:
        """The result of a call to ``server`` whose ``clock`` ran out (worded as the pool
        words a timeout the SDK reports)."""
        assert clock.config is not None  # (bound before it could run out)
        return error_result(call_failure_text(timed_out(server, clock.config), server))
