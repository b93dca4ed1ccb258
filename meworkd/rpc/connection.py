"""One frontend's connection: ordered reply and event lines, the writer task, its subscription.

Replies and events leave in whole lines, in the order they were sent. A line is written straight
to the socket when nothing is queued before it and the socket takes it at once (as asyncio's
transports do); otherwise it is queued for the connection's writer task, which joins what is
queued into one write. The direct path saves the writer's event-loop pass on every reply and lets
work that follows a reply (the audit record) run after it has left.
"""

import contextlib
import socket
from collections.abc import Callable, Iterable
from enum import Enum

import anyio
import msgspec
from anyio.abc import SocketAttribute, SocketStream, TaskGroup
from mework_protocol.topics import EVENTS_OVERFLOWED

from meworkd.base.events import EventBus, Subscription
from meworkd.rpc import sockio

__all__ = ["OUTBOX", "WRITE_COALESCE", "Connection", "ConnectionState"]

OUTBOX = 256  # reply/event lines queued for the writer before senders wait
WRITE_COALESCE = 256 * 1024  # bytes of queued lines the writer joins into one send


class ConnectionState(Enum):
    OPEN = "open"
    # The reader has ended (EOF, shutdown): no new subscription; replies to requests still in
    # flight go out (a peer may half-close and wait for them).
    CLOSED = "closed"
    # A write failed, the peer is gone: nothing more is written, nobody is kept waiting. The
    # reader sees the end of the stream and cleans up.
    BROKEN = "broken"


class Connection:
    """The context every method receives: :meth:`send` a line, :meth:`subscribe` to events."""

    def __init__(
        self,
        stream: SocketStream,
        tasks: TaskGroup,
        bus: EventBus,
        redact: Callable[[object], object],
    ) -> None:
        self._sock: socket.socket = stream.extra(SocketAttribute.raw_socket)
        self._redact = redact
        self._outbox, self._queue = anyio.create_memory_object_stream[bytes](OUTBOX)
        self._queued = 0  # chunks handed to the outbox and not yet written
        self._tasks = tasks
        self._bus = bus
        self._subscription: Subscription | None = None
        self.state = ConnectionState.OPEN

    async def send(self, line: bytes) -> None:
        if self.state is ConnectionState.BROKEN:
            return
        data = line + b"\n"
        if self._queued == 0:
            try:
                written = sockio.send_some(self._sock, data)
            except OSError:
                self.state = ConnectionState.BROKEN
                return
            if written == len(data):
                return
            data = data[written:]
        self._queued += 1
        # A closed outbox: the connection is going away; the reply has nobody to go to.
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            try:
                # While the outbox has room, queue without the loop pass ``send`` always takes.
                self._outbox.send_nowait(data)
            except anyio.WouldBlock:
                await self._outbox.send(data)

    async def run_writer(self) -> None:
        """Write what :meth:`send` queued until :meth:`end_writes` and the queue is empty."""
        async with self._queue:
            async for chunk in self._queue:
                # Whatever else is queued already goes out in the same write: one syscall and
                # one event-loop pass for many replies when clients are busy (bench B4).
                batch, size = [chunk], len(chunk)
                while size < WRITE_COALESCE:
                    try:
                        more = self._queue.receive_nowait()
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                    batch.append(more)
                    size += len(more)
                if self.state is not ConnectionState.BROKEN:
                    try:
                        await sockio.send_all(self._sock, b"".join(batch))
                    except OSError:
                        # Keep draining, so that no sender waits on a dead peer.
                        self.state = ConnectionState.BROKEN
                self._queued -= len(batch)

    def end_writes(self) -> None:
        """No more lines will be sent: the writer ends once it has written the queue."""
        self._outbox.close()

    def subscribe(self, topics: Iterable[str] | None) -> None:
        """Start (or replace) this connection's event subscription."""
        if self._subscription is not None:
            self._subscription.close()
        if self.state is not ConnectionState.OPEN:
            return  # the peer is gone (e.g. a batch that subscribed, then EOF): nobody to feed
        sub = self._bus.subscribe(topics)
        self._subscription = sub
        self._tasks.start_soon(self._forward, sub)

    async def _forward(self, sub: Subscription) -> None:
        with sub:
            async for event in sub:
                # Every event leaves through here: one place where a secret that a server put
                # in its output (a progress message, a failure) is replaced, whatever the topic.
                await self._event(event.topic, self._redact(event.data))
        if sub.overflowed:
            # Tell the frontend it missed events rather than let it believe it saw them all.
            await self._event(EVENTS_OVERFLOWED, {})

    async def _event(self, topic: str, data: object) -> None:
        await self.send(
            msgspec.json.encode(
                {"jsonrpc": "2.0", "method": "event", "params": {"topic": topic, "data": data}}
            )
        )

    def close(self) -> None:
        """The reader has ended: end the subscription; a broken connection stays broken."""
        if self.state is ConnectionState.OPEN:
            self.state = ConnectionState.CLOSED
        if self._subscription is not None:
            self._subscription.close()
