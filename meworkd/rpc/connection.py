"""One frontend's connection: ordered reply and event lines, the writer task, its subscription.

Replies and events leave in whole lines, in the order they were sent. A line is written straight
to the socket when nothing is queued before it and the socket takes it at once (as asyncio's
transports do); otherwise it is queued for the connection's writer task, which joins what is
queued into one write. The direct path saves the writer's event-loop pass on every reply and lets
work that follows a reply (the audit record) run after it has left.

The outbox is bounded in bytes (``OUTBOX_BYTES``): past it, senders wait and the reader stops
reading the connection's requests (backpressure), so a peer that sends and never reads costs a
bounded amount of memory. A peer that takes nothing for ``STALL_TIMEOUT`` seconds while replies
wait is cut off: the socket is shut down, which ends its reader.

A peer that goes away altogether (its process ended: both directions closed, not a half-close
that waits for its replies) runs what its requests left to do at hang-up (``while_open``): a
tool call waiting for approval is cancelled, as the frontend's own Ctrl-C would.
"""

import contextlib
import math
import select
import socket
from collections.abc import Callable, Iterable, Iterator
from enum import Enum

import anyio
import msgspec
from anyio.abc import SocketAttribute, SocketStream, TaskGroup
from mework_protocol.topics import EVENTS_OVERFLOWED

from meworkd.base.events import EventBus, Subscription
from meworkd.base.log import get_logger
from meworkd.rpc import sockio
from meworkd.rpc.holdings import Account, Holdings

__all__ = ["OUTBOX_BYTES", "STALL_TIMEOUT", "WRITE_COALESCE", "Connection", "ConnectionState"]

# Bytes of reply/event lines queued for the writer before senders wait and the reader pauses;
# one line may pass it (a reply is never split), so a large reply still goes out.
OUTBOX_BYTES = 1024 * 1024
# Seconds a peer may take nothing while replies wait for it before the connection is closed.
STALL_TIMEOUT = 60.0
WRITE_COALESCE = 256 * 1024  # bytes of queued lines the writer joins into one send

log = get_logger("meworkd.rpc")


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
        account: Account | None = None,
    ) -> None:
        self._sock: socket.socket = stream.extra(SocketAttribute.raw_socket)
        # Its share of the daemon-wide budget (meworkd.rpc.holdings); alone, a budget of its own.
        self.account = account or Holdings().open(lambda: None)
        self._redact = redact
        # Unbounded in count: the bound is on bytes (``_queued_bytes``), checked in send().
        self._outbox, self._queue = anyio.create_memory_object_stream[bytes](math.inf)
        self._queued = 0  # chunks handed to the outbox and not yet written
        self._queued_bytes = 0
        self._room = anyio.Event()  # set when the outbox drops under OUTBOX_BYTES
        self.stall_timeout = STALL_TIMEOUT
        self._tasks = tasks
        self._bus = bus
        self._subscription: Subscription | None = None
        self._on_hangup: dict[object, Callable[[], None]] = {}
        self.state = ConnectionState.OPEN

    async def send(self, line: bytes) -> None:
        if self.state is ConnectionState.BROKEN:
            return
        data = line + b"\n"
        if self._queued == 0:
            try:
                written = sockio.send_some(self._sock, data)
            except OSError:
                self._broken()
                return
            if written == len(data):
                return
            data = data[written:]
        await self.room()
        if self.broken:  # (it may have broken while this waited)
            return
        self._queued += 1
        self._queued_bytes += len(data)
        self.account.queue(len(data))
        # A closed outbox: the connection is going away; the reply has nobody to go to.
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._outbox.send_nowait(data)

    @property
    def broken(self) -> bool:
        return self.state is ConnectionState.BROKEN

    @property
    def backlogged(self) -> bool:
        """The outbox is at its bound: the peer is not reading what it asked for."""
        return self._queued_bytes >= OUTBOX_BYTES and not self.broken

    async def room(self) -> None:
        """Wait until the outbox is under its bound (or the connection broke)."""
        while self.backlogged:
            if self._room.is_set():
                self._room = anyio.Event()
            await self._room.wait()

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
                    await self._write(b"".join(batch))
                self._queued -= len(batch)
                self._queued_bytes -= size
                self.account.written(size)
                if not self.backlogged:
                    self._room.set()

    async def _write(self, data: bytes) -> None:
        try:
            with anyio.fail_after(self.stall_timeout):
                await sockio.send_all(self._sock, data)
        except TimeoutError:
            # The peer asks and never reads: cut it off. Shutting the socket down ends the
            # reader as well (its receive sees the end), so the connection goes away whole.
            log.warning("rpc.peer_stalled", seconds=self.stall_timeout, queued=self._queued_bytes)
            self._broken()
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            self._broken()

    def cut(self) -> None:
        """Cut off by the daemon-wide budget: nothing more is written, the socket is shut down
        (which ends the reader too)."""
        self._broken()
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)

    def _broken(self) -> None:
        # Keep draining, so that no sender waits on a dead peer.
        self.state = ConnectionState.BROKEN
        self._room.set()

    def end_writes(self) -> None:
        """No more lines will be sent: the writer ends once it has written the queue."""
        self._outbox.close()

    def subscribe(self, topics: Iterable[str] | None, servers: Iterable[str] | None = None) -> None:
        """Start (or replace) this connection's event subscription."""
        if self._subscription is not None:
            self._subscription.close()
        if self.state is not ConnectionState.OPEN:
            return  # the peer is gone (e.g. a batch that subscribed, then EOF): nobody to feed
        sub = self._bus.subscribe(topics, servers=servers)
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

    @contextlib.contextmanager
    def while_open(self, on_hangup: Callable[[], None]) -> Iterator[None]:
        """Run ``on_hangup`` if the peer goes away while the block runs (see the module doc)."""
        key = object()
        self._on_hangup[key] = on_hangup
        try:
            yield
        finally:
            del self._on_hangup[key]

    def ended_by_peer(self) -> None:
        """The reader met the end of the stream: if the peer hung up (rather than half-closed
        to wait for its replies), its requests' work goes with it (``while_open``)."""
        if self._on_hangup and _hung_up(self._sock):
            for action in list(self._on_hangup.values()):
                action()

    def close(self) -> None:
        """The reader has ended: end the subscription; a broken connection stays broken."""
        if self.state is ConnectionState.OPEN:
            self.state = ConnectionState.CLOSED
        if self._subscription is not None:
            self._subscription.close()


def _hung_up(sock: socket.socket) -> bool:
    """Whether the peer closed both directions (POLLHUP), not just its writing half (EOF only)."""
    poller = select.poll()
    try:
        poller.register(sock.fileno(), select.POLLIN)
        return any(event & (select.POLLHUP | select.POLLERR) for _, event in poller.poll(0))
    except (OSError, ValueError):
        return True  # the socket is gone already
