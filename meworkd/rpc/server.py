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
from meworkd.rpc import sockio
from meworkd.rpc.accepting import Acceptor, refuse
from meworkd.rpc.connection import STALL_TIMEOUT, Connection
from meworkd.rpc.dispatch import Dispatcher, Slot, error_response, invalid_request
from meworkd.rpc.handoff import Handoff

__all__ = ["RpcServer", "ServerState", "peer_uid"]

# Concurrent requests per connection, each member of a batch counted; the reader pauses beyond.
MAX_IN_FLIGHT = 128
# Seconds an unfinished line may wait for its next byte before the connection is closed: a peer
# that sends half a message and stalls would otherwise hold its buffer (up to the line limit).
LINE_IDLE_TIMEOUT = 30.0
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
        self._dispatcher = dispatcher
        self._bus = bus
        self._redact_events = redact_events
        self.max_line = max_line
        self.line_idle_timeout = LINE_IDLE_TIMEOUT
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
        async with anyio.create_task_group() as outer:
            requests = anyio.create_task_group()
            conn = Connection(stream, requests, self._bus, self._redact_events)
            conn.stall_timeout = self.stall_timeout
            outer.start_soon(conn.run_writer)
            try:
                async with requests:
                    self._request_scopes.add(requests.cancel_scope)
                    with anyio.CancelScope() as reading:
                        self._readers.add(reading)
                        if self.state is not ServerState.RUNNING:
                            reading.cancel()
                        try:
                            await self._read(stream, conn, requests, jobs)
                        finally:
                            jobs.close()  # idle workers end
                            self._readers.discard(reading)
                            conn.close()
                    if self.state is not ServerState.RUNNING:
                        # Shutting down: answer what is in flight if it is quick, then give up.
                        # (Never later than a deadline stop() has set already.)
                        now = anyio.current_time()
                        scope = requests.cancel_scope
                        scope.deadline = min(scope.deadline, now + CLOSE_GRACE)
                        outer.cancel_scope.deadline = min(
                            outer.cancel_scope.deadline, now + 2 * CLOSE_GRACE
                        )
            finally:
                self._request_scopes.discard(requests.cancel_scope)
                conn.end_writes()  # every request has answered: the writer drains and ends

    async def _read(
        self,
        stream: SocketStream,
        conn: Connection,
        requests: TaskGroup,
        jobs: Handoff,
    ) -> None:
        limiter = anyio.Semaphore(MAX_IN_FLIGHT)
        splitter = LineSplitter(self.max_line)
        sock: socket.socket = stream.extra(SocketAttribute.raw_socket)
        while True:
            if conn.backlogged:
                # Backpressure: read no more requests until the peer takes its replies.
                await conn.room()
            try:
                data = await self._receive(sock, splitter.pending)
            except OSError:
                data = b""  # reset by the peer: it is gone
            if data is None:
                log.info("rpc.line_idle", pending=splitter.pending, seconds=self.line_idle_timeout)
                await conn.send(self._idle_line())
                return
            if not data:
                if self.state is ServerState.RUNNING:  # (stopping: the stop decides outcomes)
                    conn.ended_by_peer()
                return
            for line in splitter.feed(data):
                if isinstance(line, Oversized):
                    await conn.send(self._too_large(line))
                    continue
                if not line.strip():
                    continue
                try:
                    limiter.acquire_nowait()  # under the limit: no extra event-loop pass
                except anyio.WouldBlock:
                    await limiter.acquire()
                if not jobs.give(line):  # an idle worker of this connection takes it, or:
                    requests.start_soon(self._work, conn, line, limiter, jobs)
            # The requests just handed over run before this reader waits for more (bench B1:
            # setting up the wait is not on their way), and a peer that never pauses cannot
            # starve the others.
            await anyio.lowlevel.checkpoint()

    async def _receive(self, sock: socket.socket, pending: int) -> bytes | None:
        """The next bytes; None when half a line has waited ``line_idle_timeout`` for more."""
        if not pending:  # (no cancel scope on the way of whole lines: bench B1)
            return await sockio.recv(sock, READ_CHUNK)
        with anyio.move_on_after(self.line_idle_timeout):
            return await sockio.recv(sock, READ_CHUNK)
        return None

    def _idle_line(self) -> bytes:
        return invalid_request(
            f"an unfinished message waited {self.line_idle_timeout:g} s for its end; "
            "the connection is closed"
        )

    def _too_large(self, line: Oversized) -> bytes:
        return invalid_request(
            f"a message may be at most {self.max_line} bytes (got {line.size})",
            "message_too_large",
        )

    async def _work(
        self,
        conn: Connection,
        first: bytes,
        limiter: anyio.Semaphore,
        jobs: Handoff,
    ) -> None:
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
            slot = Slot(limiter)
            try:
                if conn.backlogged:
                    # Start no request while the peer leaves its replies unread: each would
                    # hold its reply until the outbox drains.
                    await conn.room()
                await self._answer(conn, line, slot)
            finally:
                slot.release()
            line = None  # (not held while idle)
            line = await jobs.take()

    async def _answer(self, conn: Connection, line: bytes, slot: Slot) -> None:
        reply = await self._dispatcher.handle_line(line, conn, slot)
        if reply is not None:
            await conn.send(reply)
