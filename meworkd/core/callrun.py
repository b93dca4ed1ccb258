"""Making one allowed tool call on its server: progress as events, a clock that stops while a
person answers the server's question, and the call registered as in flight for that binding.
"""

from dataclasses import dataclass
from typing import Any

from meworkd.base.errors import ServerUnavailable
from meworkd.base.events import EventBus
from meworkd.core.asks import ServerAsks
from meworkd.core.catalog import Binding
from meworkd.core.inflight import CallSlot
from meworkd.core.replies import error_result
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

__all__ = ["CallRunner", "CallSite"]


@dataclass(frozen=True, slots=True)
class CallSite:
    """Which call: its conversation, turn and id."""

    conversation_id: str
    turn_id: str
    call_id: str


class CallRunner:
    def __init__(self, pool: SessionPool, bus: EventBus, asks: ServerAsks) -> None:
        self._pool = pool
        self._bus = bus
        self._asks = asks

    async def run(
        self,
        site: CallSite,
        binding: Binding,
        arguments: dict[str, Any],
        settings: Settings,
        clock: CallClock,
    ) -> dict[str, Any]:
        """The call's result; ``clock``: the call's, whose scope the caller has entered (a
        timeout cancels it: the caller answers with :meth:`expired`)."""
        config = settings.servers.get(binding.server)
        if config is None or not config.enabled:  # a reload since the binding was checked
            return error_result(f"The MCP server {binding.server} is no longer available.")

        def progress(progress: float, total: float | None, message: str | None) -> None:
            self._bus.publish(
                "turn.progress",
                {
                    "turnId": site.turn_id,
                    "callId": site.call_id,
                    "conversationId": site.conversation_id,
                    "server": binding.server,
                    "tool": binding.tool,
                    "progress": progress,
                    "total": total,
                    "message": message,
                },
            )

        clock.bind(config, settings.mcp.max_reply_bytes)
        slot = CallSlot(site.conversation_id, binding.server, site.turn_id, site.call_id, clock)
        try:
            with self._asks.inflight.running(slot):
                return await self._pool.using(
                    site.conversation_id,
                    binding.server,
                    config,
                    lambda client: call_tool(
                        client,
                        binding.tool,
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
                self._pool.status.failed(binding.server, site.conversation_id, exc)
            return error_result(call_failure_text(exc, binding.server))

    def expired(self, server: str, clock: CallClock) -> dict[str, Any]:
        """The result of a call to ``server`` whose ``clock`` ran out (worded as the pool
        words a timeout the SDK reports)."""
        assert clock.config is not None  # (bound before it could run out)
        return error_result(call_failure_text(timed_out(server, clock.config), server))
