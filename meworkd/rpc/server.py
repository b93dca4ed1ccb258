"""The Unix-socket listener: per connection one reader, one writer and workers for requests.

Requests on one connection run concurrently; replies and events go out in whole lines, in order
(straight to the socket when it takes them, else through the connection's writer). A peer of
another uid is refused. Nothing a client sends can end the daemon: the worst it gets is an error
reply and, for a stream that is not JSON-RPC at all, a closed connection.
"""

import contextlib
import os
import socket
import struct
from collections.abc import Callable, Iterable

import anyio
import anyio.lowlevel
import msgspec
from anyio.abc import SocketAttribute, SocketListener, SocketStream, TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from meworkd.base.events import EventBus, Subscription
from meworkd.base.lines import DEFAULT_MAX_LINE, LineSplitter, Oversized
from meworkd.base.log import get_logger
from meworkd.rpc.dispatch import INVALID_REQUEST, Dispatcher, error_response

__all__ = ["Connection", "RpcServer", "peer_uid"]

MAX_IN_FLIGHT = 128  # concurrent requests per connection; the reader pauses beyond this
OUTBOX = 256  # reply/event lines queued for the writer before senders wait
READ_CHUNK = 256 * 1024
CLOSE_GRACE = 2.0  # seconds a closing connection may take to flush
REFUSED_DRAIN = 1024 * 1024  # bytes read and dropped from a refused peer before closing
WRITE_COALESCE = 256 * 1024  # bytes of queued lines the writer joins into one send

log = get_logger("meworkd.rpc")


def peer_uid(stream: SocketStream) -> int | None:
    raw: socket.socket = stream.extra(SocketAttribute.raw_socket)
    try:
        creds = raw.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


def _as_is(value: object) -> object:
    return value


class Connection:
    """One frontend's connection, the context every method receives.

    Replies and events leave in whole lines, in the order they were sent. A line is written
    straight to the socket when nothing is queued before it and the socket takes it at once (as
    asyncio's transports do); otherwise it is queued for the connection's writer task, which
    joins what is queued into one write. The direct path saves the writer's event-loop pass on
    every reply and lets work that follows a reply (the audit record) run after it has left.
    """

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
        self._broken = False
        self._tasks = tasks
        self._bus = bus
        self._subscription: Subscription | None = None
        self.closed = False

    async def send(self, line: bytes) -> None:
        if self._broken:
            return  # the peer is gone; keep nobody waiting
        data = line + b"\n"
        if self._queued == 0:
            try:
                written = self._sock.send(data)
            except BlockingIOError:
                written = 0
            except OSError:
                self._broken = True  # the reader sees the end of the stream and cleans up
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
                if not self._broken:
                    try:
                        await self._write_all(b"".join(batch))
                    except OSError:
                        self._broken = True  # keep draining so no sender waits on a dead peer
                self._queued -= len(batch)

    async def _write_all(self, data: bytes) -> None:
        # wait_writable + send rather than the stream's send, for the reason given in
        # RpcServer._read (anyio's readiness future and cancellation).
        view = memoryview(data)
        while view:
            try:
                written = self._sock.send(view)
            except BlockingIOError:
                await anyio.wait_writable(self._sock)
                continue
            view = view[written:]

    def end_writes(self) -> None:
        """No more lines will be sent: the writer ends once it has written the queue."""
        self._outbox.close()

    def subscribe(self, topics: Iterable[str] | None) -> None:
        """Start (or replace) this connection's event subscription."""
        if self._subscription is not None:
            self._subscription.close()
        if self.closed:
            return  # the peer is gone (e.g. a batch that subscribed, then EOF): nobody to feed
        sub = self._bus.subscribe(topics)
        self._subscription = sub
        self._tasks.start_soon(self._forward, sub)

    async def _forward(self, sub: Subscription) -> None:
        with sub:
            async for event in sub:
                # Every event leaves through here: one place where a secret that a server put
                # in its output (a progress message, a failure) is replaced, whatever the topic.
                data = self._redact(event.data)
                await self.send(
                    msgspec.json.encode(
                        {
                            "jsonrpc": "2.0",
                            "method": "event",
                            "params": {"topic": event.topic, "data": data},
                        }
                    )
                )
        if sub.overflowed:
            # Tell the frontend it missed events rather than let it believe it saw them all.
            await self.send(
                msgspec.json.encode(
                    {
                        "jsonrpc": "2.0",
                        "method": "event",
                        "params": {"topic": "events.overflowed", "data": {}},
                    }
                )
            )

    def close(self) -> None:
        self.closed = True
        if self._subscription is not None:
            self._subscription.close()


class RpcServer:
    def __init__(
        self,
        dispatcher: Dispatcher[Connection],
        bus: EventBus,
        max_line: int = DEFAULT_MAX_LINE,
        redact_events: Callable[[object], object] = _as_is,
    ) -> None:
        self._dispatcher = dispatcher
        self._bus = bus
        self._redact_events = redact_events
        self.max_line = max_line
        self.connections = 0
        self._stopping = False
        self._accepting = anyio.CancelScope()
        self._readers: set[anyio.CancelScope] = set()
        self._request_scopes: set[anyio.CancelScope] = set()

    async def serve(
        self, listener: SocketListener, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Accept connections until :meth:`stop`; then let them finish within the grace."""
        async with listener, anyio.create_task_group() as tg:
            with self._accepting:
                task_status.started()
                while True:
                    try:
                        stream = await listener.accept()
                    except (OSError, anyio.BrokenResourceError) as exc:
                        # EMFILE and friends: keep serving the connections we have.
                        log.warning("rpc.accept_failed", error=type(exc).__name__)
                        await anyio.sleep(0.1)
                        continue
                    tg.start_soon(self._handle, stream)

    def stop(self) -> None:
        """Stop accepting and reading; in-flight requests get ``CLOSE_GRACE`` to answer."""
        self._stopping = True
        self._accepting.cancel()
        for reading in list(self._readers):
            reading.cancel()
        # Also connections whose reader ended already (the peer sent EOF) but still work.
        deadline = anyio.current_time() + CLOSE_GRACE
        for scope in list(self._request_scopes):
            scope.deadline = min(scope.deadline, deadline)

    async def _handle(self, stream: SocketStream) -> None:
        self.connections += 1
        try:
            async with stream:
                uid = peer_uid(stream)
                if uid != os.getuid():
                    log.warning("rpc.peer_refused", peer_uid=uid)
                    with anyio.move_on_after(CLOSE_GRACE):
                        await stream.send(
                            error_response(
                                -32066, "Permission denied", {"kind": "permission_denied"}
                            )
                            + b"\n"
                        )
                        await stream.send_eof()
                        # Drop what it already sent: closing with unread input would reset the
                        # connection before the peer reads the refusal.
                        drained = 0
                        while drained < REFUSED_DRAIN:
                            drained += len(await stream.receive())
                    return
                await self._serve_connection(stream)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, OSError):
            pass  # the peer vanished; nothing to answer
        finally:
            self.connections -= 1

    async def _serve_connection(self, stream: SocketStream) -> None:
        jobs_send, jobs_receive = anyio.create_memory_object_stream[bytes]()
        async with anyio.create_task_group() as outer:
            requests = anyio.create_task_group()
            conn = Connection(stream, requests, self._bus, self._redact_events)
            outer.start_soon(conn.run_writer)
            try:
                async with jobs_receive, requests:
                    self._request_scopes.add(requests.cancel_scope)
                    with anyio.CancelScope() as reading:
                        self._readers.add(reading)
                        if self._stopping:
                            reading.cancel()
                        try:
                            with jobs_send:  # closed: idle workers end
                                await self._read(stream, conn, requests, jobs_send, jobs_receive)
                        finally:
                            self._readers.discard(reading)
                            conn.close()
                    if self._stopping:
                        # Shutting down: answer what is in flight if it is quick, then give up.
                        requests.cancel_scope.deadline = anyio.current_time() + CLOSE_GRACE
                        outer.cancel_scope.deadline = anyio.current_time() + 2 * CLOSE_GRACE
            finally:
                self._request_scopes.discard(requests.cancel_scope)
                conn.end_writes()  # every request has answered: the writer drains and ends

    async def _read(
        self,
        stream: SocketStream,
        conn: Connection,
        requests: TaskGroup,
        jobs_send: MemoryObjectSendStream[bytes],
        jobs_receive: MemoryObjectReceiveStream[bytes],
    ) -> None:
        limiter = anyio.Semaphore(MAX_IN_FLIGHT)
        splitter = LineSplitter(self.max_line)
        sock: socket.socket = stream.extra(SocketAttribute.raw_socket)
        while True:
            # The raw socket after wait_readable, not stream.receive: on asyncio that one,
            # cancelled (at shutdown) just as data arrives, makes the loop report an
            # InvalidStateError, anyio resolving its readiness future after the cancellation.
            try:
                data = sock.recv(READ_CHUNK)
            except BlockingIOError:
                await anyio.wait_readable(sock)
                continue
            except OSError:
                return
            if not data:
                return
            for line in splitter.feed(data):
                if isinstance(line, Oversized):
                    await conn.send(
                        error_response(
                            INVALID_REQUEST,
                            "Invalid request",
                            {
                                "kind": "message_too_large",
                                "detail": f"a message may be at most {self.max_line} bytes "
                                f"(got {line.size})",
                            },
                        )
                    )
                    continue
                if not line.strip():
                    continue
                try:
                    limiter.acquire_nowait()  # under the limit: no extra event-loop pass
                except anyio.WouldBlock:
                    await limiter.acquire()
                try:
                    jobs_send.send_nowait(line)  # an idle worker of this connection takes it
                except anyio.WouldBlock:
                    requests.start_soon(self._work, conn, line, limiter, jobs_receive)
            # The requests just handed over run before this reader waits for more (bench B1:
            # setting up the wait is not on their way), and a peer that never pauses cannot
            # starve the others.
            await anyio.lowlevel.checkpoint()

    async def _work(
        self,
        conn: Connection,
        first: bytes,
        limiter: anyio.Semaphore,
        jobs: MemoryObjectReceiveStream[bytes],
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
            try:
                await self._answer(conn, line)
            finally:
                limiter.release()
            line = None
            with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
                line = await jobs.receive()

    async def _answer(self, conn: Connection, line: bytes) -> None:
        reply = await self._dispatcher.handle_line(line, conn)
        if reply is not None:
            await conn.send(reply)
