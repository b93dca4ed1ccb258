"""The Unix-socket listener: per connection one reader, one writer and a task per request.

Requests on one connection run concurrently; replies and events go out through the connection's
single writer, in whole lines. A peer of another uid is refused. Nothing a client sends can end
the daemon: the worst it gets is an error reply and, for a stream that is not JSON-RPC at all,
a closed connection.
"""

import os
import socket
import struct
from collections.abc import Iterable

import anyio
import msgspec
from anyio.abc import SocketAttribute, SocketListener, SocketStream, TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from meworkd.events import EventBus, Subscription
from meworkd.log import get_logger
from meworkd.rpc.dispatch import INVALID_REQUEST, Dispatcher, error_response
from meworkd.rpc.framing import DEFAULT_MAX_LINE, LineSplitter, Oversized

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


class Connection:
    """One frontend's connection, the context every method receives."""

    def __init__(self, outbox: MemoryObjectSendStream[bytes], tasks: TaskGroup, bus: EventBus):
        self._outbox = outbox
        self._tasks = tasks
        self._bus = bus
        self._subscription: Subscription | None = None
        self.closed = False

    async def send(self, line: bytes) -> None:
        try:
            # Fast path: while the outbox has room, queue without the extra event-loop pass
            # that ``send`` always takes (bench/README.md, B1: ~10 loop passes per request).
            self._outbox.send_nowait(line)
        except anyio.WouldBlock:
            try:
                await self._outbox.send(line)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the connection is going away; the reply has nobody to go to

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
                await self.send(
                    msgspec.json.encode(
                        {
                            "jsonrpc": "2.0",
                            "method": "event",
                            "params": {"topic": event.topic, "data": event.data},
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
    ) -> None:
        self._dispatcher = dispatcher
        self._bus = bus
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
        send, receive = anyio.create_memory_object_stream[bytes](OUTBOX)
        async with anyio.create_task_group() as outer:
            outer.start_soon(self._writer, stream, receive)
            async with send, anyio.create_task_group() as requests:
                self._request_scopes.add(requests.cancel_scope)
                conn = Connection(send, requests, self._bus)
                with anyio.CancelScope() as reading:
                    self._readers.add(reading)
                    if self._stopping:
                        reading.cancel()
                    try:
                        await self._read(stream, conn, requests)
                    finally:
                        self._readers.discard(reading)
                        conn.close()
                if self._stopping:
                    # Shutting down: answer what is in flight if it is quick, then give up.
                    requests.cancel_scope.deadline = anyio.current_time() + CLOSE_GRACE
                    outer.cancel_scope.deadline = anyio.current_time() + 2 * CLOSE_GRACE
            self._request_scopes.discard(requests.cancel_scope)

    async def _read(self, stream: SocketStream, conn: Connection, requests: TaskGroup) -> None:
        limiter = anyio.Semaphore(MAX_IN_FLIGHT)
        splitter = LineSplitter(self.max_line)
        while True:
            try:
                data = await stream.receive(READ_CHUNK)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
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
                requests.start_soon(self._request, conn, line, limiter)

    async def _request(self, conn: Connection, line: bytes, limiter: anyio.Semaphore) -> None:
        try:
            reply = await self._dispatcher.handle_line(line, conn)
            if reply is not None:
                await conn.send(reply)
        finally:
            limiter.release()

    @staticmethod
    async def _writer(stream: SocketStream, receive: MemoryObjectReceiveStream[bytes]) -> None:
        broken = False
        async with receive:
            async for line in receive:
                # Whatever else is queued already goes out in the same write: one syscall and
                # one event-loop pass for many replies when clients are busy (bench B4).
                batch, size = [line], len(line)
                while size < WRITE_COALESCE:
                    try:
                        more = receive.receive_nowait()
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                    batch.append(more)
                    size += len(more)
                if broken:
                    continue  # keep draining so no sender waits on a dead peer
                try:
                    await stream.send(b"\n".join(batch) + b"\n")
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    broken = True
