"""The one connection to meworkd: subscribe, snapshot, follow events, reconnect with backoff.

The app runs :meth:`Link.run` in a worker, so the socket never holds up a key press. Calls made
while the daemon is away fail with :class:`Offline` rather than wait.
"""

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mework_client import DaemonNotRunning, RpcError, UntrustedSocket
from mework_client.aio import AsyncClient, connect
from mework_protocol.topics import EVENTS_OVERFLOWED

__all__ = ["WAITING", "Link", "Offline", "describe", "is_down", "is_missing_method", "lost_text"]

# Topics of features other frontends' daemons may not have yet are asked for too; a daemon that
# does not know one answers invalid_params with its own list, and the UI asks again with that.
WANTED_TOPICS = (
    "approval.requested",
    "approval.resolved",
    "settings.reloaded",
    "settings.invalid",
    "server.status",
    "server.auth",
    "elicitation.requested",
    "elicitation.resolved",
    "call.started",
    "call.finished",
    "task.started",
    "task.progress",
    "task.input_required",
    "task.completed",
    "task.failed",
)
FIRST_DELAY, MAX_DELAY = 0.1, 5.0
WAITING = "… starting meworkd (its socket is there; waiting for its first answer)"
WAITING_AGAIN = "↻ reconnecting… (waiting for meworkd's first answer)"

OnEvent = Callable[[str, Any], Awaitable[None]]
OnState = Callable[[str, bool], None]
OnConnected = Callable[[], Awaitable[None]]


class Offline(Exception):
    """The daemon is not connected at the moment."""


def is_missing_method(exc: BaseException) -> bool:
    return isinstance(exc, RpcError) and exc.kind == "method_not_found"


def describe(exc: BaseException) -> str:
    """A person's sentence for a failed call: the daemon's message and its per-field errors."""
    if isinstance(exc, RpcError):
        data = exc.data if isinstance(exc.data, dict) else {}
        errors = data.get("errors")
        details = "; ".join(str(e) for e in errors) if isinstance(errors, list) else ""
        # A lone error is often the message itself (InvalidSettings): said once, not twice
        return f"{exc.message}: {details}" if details and details != exc.message else exc.message
    if isinstance(exc, Offline | ConnectionError | DaemonNotRunning):
        return "meworkd is not connected"
    return "the call failed"


async def subscribe_known(client: AsyncClient, topics: list[str], **extra: Any) -> list[str]:
    """Subscribe to ``topics``, leaving out those this daemon does not know."""
    try:
        reply = await client.call("events.subscribe", {"topics": topics, **extra})
    except RpcError as exc:
        known = exc.data.get("topics") if isinstance(exc.data, dict) else None
        if exc.kind != "invalid_params" or not isinstance(known, list):
            raise
        topics = [t for t in topics if t in known]
        reply = await client.call("events.subscribe", {"topics": topics, **extra})
    return list(reply.get("topics") or topics)


def lost_text(message: str, delay: float, was_online: bool) -> str:
    """The bar while offline: a restart is a reconnect, not an error."""
    if was_online:
        return f"↻ reconnecting… {message}; retrying in {delay:.1f} s"
    return f"✘ {message}: retrying in {delay:.1f} s"


def is_down(bar: str) -> bool:
    """Whether the bar says meworkd is away (:func:`lost_text`), not connected or starting."""
    return "retrying in" in bar


class Link:
    def __init__(self, socket_path: str | None) -> None:
        self.socket_path = socket_path
        self.client: AsyncClient | None = None
        self.topics: list[str] = []
        self.missing: set[str] = set()  # methods this daemon answered method_not_found for

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        client = self.client
        if client is None:
            raise Offline
        try:
            return await client.call(method, params)
        except RpcError as exc:
            if exc.kind == "method_not_found":
                self.missing.add(method)
            raise

    async def run(self, on_event: OnEvent, on_state: OnState, on_connected: OnConnected) -> None:
        """Forever: connect, subscribe, snapshot, apply events; on loss, say so and retry.

        Under socket activation the socket accepts before the daemon runs, and the first reply
        comes once it has started: that wait is shown as such, not as a frozen screen.
        """
        delay, was_online = FIRST_DELAY, False
        while True:
            try:
                async with connect(self.socket_path) as client:
                    on_state(WAITING_AGAIN if was_online else WAITING, False)
                    self.topics = await subscribe_known(client, list(WANTED_TOPICS))
                    self.client, self.missing = client, set()
                    await on_connected()  # the snapshot: events meanwhile wait in the stream
                    on_state("● connected", True)
                    delay, was_online = FIRST_DELAY, True
                    async for topic, data in client.event_stream:
                        if topic == EVENTS_OVERFLOWED:
                            break  # missed events: reconnect and re-read everything
                        await on_event(topic, data)
                message = "meworkd closed the connection"
            except UntrustedSocket:
                message = "refusing the socket: it is not owned by you"
            except DaemonNotRunning:
                message = "meworkd is not running"
            except (ConnectionError, OSError, RpcError):
                message = "meworkd unreachable"
            self.client = None
            on_state(lost_text(message, delay, was_online), False)
            await anyio.sleep(delay)
            delay = min(delay * 2, MAX_DELAY)

    async def follow_logs(self, server: str, on_line: Callable[[dict[str, Any]], None]) -> None:
        """One server's stderr lines on a connection of their own, until cancelled."""
        async with connect(self.socket_path) as client:
            try:
                await subscribe_known(client, ["server.log"], servers=[server])
            except RpcError:  # a daemon without the server filter: filter here instead
                await subscribe_known(client, ["server.log"])
            async for topic, data in client.event_stream:
                if (
                    topic == "server.log"
                    and isinstance(data, dict)
                    and data.get("server") == server
                ):
                    on_line(data)
