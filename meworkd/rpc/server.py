"""The Unix-socket listener: per connection one reader, one writer and workers for requests.

Requests on one connection run concurrently; replies and events go out in whole lines, in order
(see :mod:`meworkd.rpc.connection`). A peer of another uid is refused. Nothing a client sends
can end the daemon: the worst it gets is an error reply and, for a stream that is not JSON-RPC at
all, a closed connection.
"""

import os
import socket
from collections.abc import Callable
from enum import Enum

import anyio
import anyio.lowlevel
from anyio.abc import SocketAttribute, SocketListener, SocketStream, TaskGroup, TaskStatus
from mework_protocol import boundary, codes

from meworkd.base.events import EventBus
from meworkd.base.gauge import Gauge
from meworkd.base.lines import DEFAULT_MAX_LINE, LineSplitter, Oversized
from meworkd.base.log import get_logger
from meworkd.rpc.accepting import Acceptor, refuse
from meworkd.rpc.connection import STALL_TIMEOUT, Connection
from meworkd.rpc.dispatch import Dispatcher, Lane, Slot, error_response, invalid_request
from meworkd.rpc.handoff import Handoff
from meworkd.rpc.holdings import Account, Holdings

__all__ = ["RpcServer", "ServerState", "peer_uid"]

# Concurrent requests per connection, each member of a batch counted; the reader pauses beyond.
MAX_IN_FLIGHT = 128
# Seconds a line may take from its first byte to its newline before the connection is closed: a
# peer that sends half a message and stalls (or trickles a byte now and then) would otherwise
# hold its buffer (up to the line limit) for as long as it likes.
LINE_TIMEOUT = 30.0
READ_CHUNK = 256 * 1024
CLOSE_GRACE = 2.0  # seconds a closing connection may take to flush

log = get_logger("meworkd.rpc")


def peer_uid(stream: SocketStream) -> int | None:
    return boundary.peer_uid(stream.extra(SocketAttribute.raw_socket))


_OTHER_USER = error_response(
    codes.PERMISSION_DENIED, "Permission denied", {"kind": "permission_denied"}
)


def _as_is(value: object) -> object:
    return value


class ServerState(Enum):
    RUNNING = "running"  # accepting connections and reading requests
    STOPPING = "stopping"  # no new connections or requests; in-flight ones get CLOSE_GRACE
    STOPPED = "stopped"  # serve() has returned


class RpcServer:
    def __init__(
        self,
        dispatcher: Dispatcher[Connection],
        bus: EventBus,
        max_line: int = DEFAULT_MAX_LINE,
        redact_events: Callable[[object], object] = _as_is,
        connections: Gauge | None = None,  # the daemon reads it for daemon.status
    ) -> None:
        self.dispatcher = dispatcher
        self._bus = bus
        self._redact_events = redact_events
        self.max_line = max_line
        self.line_timeout = LINE_TIMEOUT
        self.holdings = Holdings()
        self.stall_timeout = STALL_TIMEOUT
        self._connections = connections or Gauge()
        self.state = ServerState.RUNNING
        self._accepting = anyio.CancelScope()
        self._readers: set[anyio.CancelScope] = set()
        self._request_scopes: set[anyio.CancelScope] = set()

    async def serve(
        self, listener: SocketListener, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Accept connections until :meth:`stop`; then let them finish within the grace."""
        try:
            async with listener, anyio.create_task_group() as tg:
                with self._accepting, Acceptor(listener) as acceptor:
                    task_status.started()
                    while True:
                        # Out of file descriptors it refuses clearly and keeps serving the rest.
                        tg.start_soon(self._handle, await acceptor.accept())
        finally:
            self.state = ServerState.STOPPED

    def stop(self) -> None:
        """Stop accepting and reading; in-flight requests get ``CLOSE_GRACE`` to answer."""
        self.state = ServerState.STOPPING
        self._accepting.cancel()
        for reading in list(self._readers):
            reading.cancel()
        # Also connections whose reader ended already (the peer sent EOF) but still work.
        deadline = anyio.current_time() + CLOSE_GRACE
        for scope in list(self._request_scopes):
            scope.deadline = min(scope.deadline, deadline)

    @property
    def connections(self) -> int:
        return self._connections.value

    async def _handle(self, stream: SocketStream) -> None:
        with self._connections.held():
            await self._serve_peer(stream)

    async def _serve_peer(self, stream: SocketStream) -> None:
        try:
            async with stream:
                uid = peer_uid(stream)
                if uid != os.getuid():
                    log.warning("rpc.peer_refused", peer_uid=uid)
                    with anyio.move_on_after(CLOSE_GRACE):
                        await refuse(stream.extra(SocketAttribute.raw_socket), _OTHER_USER)
                    return
                await self._serve_connection(stream)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, OSError):
            pass  # the peer vanished; nothing to answer

    async def _serve_connection(self, stream: SocketStream) -> None:
        jobs = Handoff()
        scopes: list[anyio.CancelScope] = []

        def cut() -> None:
            # Cut to keep the daemon under its budget: the peer gets nothing more, its requests
            # are cancelled, and what they held is given back as the connection unwinds.
            conn.cut()
            for scope in scopes:
                scope.cancel()

        account = self.holdings.open(cut)
        try:
            async with anyio.create_task_group() as outer:
                requests = anyio.create_task_group()
                conn = Connection(stream, requests, self._bus, self._redact_events, account)
                conn.stall_timeout = self.stall_timeout
                outer.start_soon(conn.run_writer)
                try:
                    async with requests:
                        self._request_scopes.add(requests.cancel_scope)
                        with anyio.CancelScope() as reading:
                            scopes += [reading, requests.cancel_scope]
                            await self._read_until_done(stream, conn, requests, jobs, reading)
                        if self.state is not ServerState.RUNNING:
                            self._bound_the_rest(requests.cancel_scope, outer.cancel_scope)
                finally:
                    self._request_scopes.discard(requests.cancel_scope)
                    conn.end_writes()  # every request has answered: the writer drains and ends
        finally:
            account.close()

    async def _read_until_done(
        self,
        stream: SocketStream,
        conn: Connection,
        requests: TaskGroup,
        jobs: Handoff,
        reading: anyio.CancelScope,
    ) -> None:
        self._readers.add(reading)
        if self.state is not ServerState.RUNNING:
            reading.cancel()
        try:
            await self._read(stream, conn, requests, jobs)
        finally:
            jobs.close()  # idle workers end
            self._readers.discard(reading)
            conn.close()

    @staticmethod
    def _bound_the_rest(requests: anyio.CancelScope, outer: anyio.CancelScope) -> None:
        """Shutting down: answer what is in flight if it is quick, then give up (never later
        than a deadline stop() has set already)."""
        now = anyio.current_time()
        requests.deadline = min(requests.deadline, now + CLOSE_GRACE)
        outer.deadline = min(outer.deadline, now + 2 * CLOSE_GRACE)

    async def _read(
        self,
        stream: SocketStream,
        conn: Connection,
        requests: TaskGroup,
        jobs: Handoff,
    ) -> None:
        account = conn.account

        async def ready() -> None:
            # Start no request while the peer leaves its replies unread (each would hold its
            # reply until the outbox drains) or the daemon holds more than its budget.
            if conn.backlogged:
                await conn.room()
            if self.holdings.over:
                await account.room()

        lane = Lane(anyio.Semaphore(MAX_IN_FLIGHT), account, ready)
        splitter = LineSplitter(self.max_line)
        sock: socket.socket = stream.extra(SocketAttribute.raw_socket)
        line_ends_by: float | None = None  # when the unfinished line must be complete
        while True:
            if conn.backlogged:
                # Backpressure: read no more requests until the peer takes its replies.
                await conn.room()
            try:
                data = await self._receive(sock, account, line_ends_by)
            except OSError:
                data = b""  # reset by the peer: it is gone
            if data is None:
                log.info("rpc.line_timeout", pending=splitter.pending, seconds=self.line_timeout)
                await conn.send(self._unfinished_line())
                return
            if not data:
                if self.state is ServerState.RUNNING:  # (stopping: the stop decides outcomes)
                    conn.ended_by_peer()
                return
            lines = splitter.feed(data)
            del data
            account.set_partial(splitter.buffered)
            if not splitter.pending:
                line_ends_by = None
            elif lines or line_ends_by is None:  # a new line has begun
                line_ends_by = anyio.current_time() + self.line_timeout
            await self._hand_over(lines, conn, lane, requests, jobs)
            del lines
            # The requests just handed over run before this reader waits for more (bench B1:
            # setting up the wait is not on their way), and a peer that never pauses cannot
            # starve the others.
            await anyio.lowlevel.checkpoint()

    async def _hand_over(
        self,
        lines: list[bytes | Oversized],
        conn: Connection,
        lane: Lane,
        requests: TaskGroup,
        jobs: Handoff,
    ) -> None:
        for line in lines:
            if isinstance(line, Oversized):
                await conn.send(self._too_large(line))
                continue
            if not line.strip():
                continue
            try:
                lane.limiter.acquire_nowait()  # under the limit: no extra event-loop pass
            except anyio.WouldBlock:
                await lane.limiter.acquire()
            conn.account.take(len(line))
            if not jobs.give(line):  # an idle worker of this connection takes it, or:
                requests.start_soon(self._work, conn, line, lane, jobs)

    async def _receive(
        self, sock: socket.socket, account: Account, line_ends_by: float | None
    ) -> bytes | None:
        """The next bytes; None when the unfinished line was not complete by ``line_ends_by``."""
        if line_ends_by is None:  # (no cancel scope on the way of whole lines: bench B1)
            return await self._recv(sock, account)
        with anyio.move_on_at(line_ends_by):
            return await self._recv(sock, account)
        return None

    async def _recv(self, sock: socket.socket, account: Account) -> bytes:
        """As :func:`meworkd.rpc.sockio.recv` (see why there), but reading nothing new while the
        daemon holds more than its budget; checked after each wait, just before the read, so
        that many readers woken at once do not all read past it."""
        while True:
            if self.holdings.over:
                await account.room()
            try:
                return sock.recv(READ_CHUNK)
            except BlockingIOError:
                await anyio.wait_readable(sock)

    def _unfinished_line(self) -> bytes:
        return invalid_request(
            f"an unfinished message was not complete within {self.line_timeout:g} s; "
            "the connection is closed"
        )

    def _too_large(self, line: Oversized) -> bytes:
        return invalid_request(
            f"a message may be at most {self.max_line} bytes (got {line.size})",
            "message_too_large",
        )

    async def _work(self, conn: Connection, first: bytes, lane: Lane, jobs: Handoff) -> None:
        """Answer ``first``, then further lines of the connection, until it ends.

        Workers are kept (at most one per request in flight at once, so at most
        ``MAX_IN_FLIGHT``): waking an idle one costs much less than starting a task per
        request (bench B1). Whatever a request binds in the context (the structlog context)
        it resets on the way out, and an idle worker holds no request or reply (either may be
        megabytes).
        """
        line: bytes | None = first
        del first
        while line is not None:
            slot = Slot(lane)
            try:
                if conn.backlogged or self.holdings.over:
                    await lane.ready()
                await self._answer(conn, line, slot)
            finally:
                slot.release()
                conn.account.give_back(len(line))
            line = None  # (not held while idle)
            line = await jobs.take()

    async def _answer(self, conn: Connection, line: bytes, slot: Slot) -> None:
        reply = await self.dispatcher.handle_line(line, conn, slot)
        if reply is not None:
            await conn.send(reply)
