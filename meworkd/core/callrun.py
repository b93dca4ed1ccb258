"""Making one allowed tool call on its server: progress as events, a clock that stops while a
person answers the server's question, and the call registered as in flight for that binding.
"""

from typing import Any

from meworkd.base.errors import ServerUnavailable
from meworkd.base.events import EventBus
from meworkd.core.asks import ServerAsks
from meworkd.core.replies import error_result
from meworkd.core.toolcall import ToolCall
from meworkd.mcp import (
    CallClock,
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
    def __init__(self, pool: SessionPool, bus: EventBus, asks: ServerAsks) -> None:
        self._pool = pool
        self._bus = bus
        self._asks = asks

    async def run(
        self,
        call: ToolCall,
        arguments: dict[str, Any],
        settings: Settings,
        clock: CallClock,
    ) -> dict[str, Any]:
        """The call's result; ``clock``: the call's, whose scope the caller has entered (a
        timeout cancels it: the caller answers with :meth:`expired`)."""
        config = settings.servers.get(call.server)
        if config is None or not config.enabled:  # a reload since the binding was checked
            return error_result(f"The MCP server {call.server} is no longer available.")

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

        clock.bind(config, settings.mcp.max_reply_bytes)
        try:
            with self._asks.inflight.running(call, clock):
                return await self._pool.using(
                    call.conversation_id,
                    call.server,
                    config,
                    lambda client: call_tool(
                        client,
                        call.tool,
                        arguments,
                        clock=clock,
                        on_progress=progress,
                        reply_limit=settings.mcp.max_reply_bytes,
                    ),
                )
        except ServerUnavailable as exc:
            if not isinstance(exc, TalkFailed | SessionGone):
                # Not the call failing but its session failing to open again (the server died
                # since the last call, or was retired): a server failure frontends show.
                self._pool.status.failed(call.server, call.conversation_id, exc)
            return error_result(call_failure_text(exc, call.server))

    def expired(self, server: str, clock: CallClock) -> dict[str, Any]:
        """The result of a call to ``server`` whose ``clock`` ran out (worded as the pool
        words a timeout the SDK reports)."""
        assert clock.config is not None  # (bound before it could run out)
        return error_result(call_failure_text(timed_out(server, clock.config), server))
