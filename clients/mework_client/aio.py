"""The asynchronous client (anyio): many concurrent calls over one connection, plus events."""

import contextlib
import itertools
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mework_client import DaemonNotRunning, RpcError
from mework_client.paths import default_socket_path

__all__ = ["AsyncClient", "connect"]

MAX_REPLY = 64 * 1024 * 1024
READ_CHUNK = 256 * 1024


class AsyncClient:
    def __init__(self, stream: SocketStream) -> None:
        self._stream = stream
        self._sock: socket.socket = stream.extra(SocketAttribute.raw_socket)
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[anyio.Event, list[dict[str, Any]]]] = {}
        # fast_acquire: an uncontended send does not yield to the event loop first (one loop
        # pass less per call; bench/README.md, B1).
        self._lock = anyio.Lock(fast_acquire=True)
        self._event_send: MemoryObjectSendStream[tuple[str, Any]]
        self.event_stream: MemoryObjectReceiveStream[tuple[str, Any]]
        self._event_send, self.event_stream = anyio.create_memory_object_stream[tuple[str, Any]](
            10_000
        )
        self.closed = anyio.Event()

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        request_id = next(self._ids)
        done = anyio.Event()
        box: list[dict[str, Any]] = []
        self._pending[request_id] = (done, box)
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": request_id}
        if params is not None:
            message["params"] = params
        try:
            await self.send_raw(json.dumps(message).encode())
            await done.wait()
        finally:
            self._pending.pop(request_id, None)
        if not box:
            raise ConnectionError("meworkd closed the connection")
        reply = box[0]
        if "error" in reply:
            error = reply["error"]
            raise RpcError(error.get("code", 0), error.get("message", ""), error.get("data"))
        return reply.get("result")

    async def send_raw(self, line: bytes) -> None:
        data = line + b"\n"
        if not self._lock.locked():
            # Nobody is mid-send: hand the line to the socket now, as asyncio's transports do,
            # instead of the event-loop pass ``send`` always takes first (bench B1).
            try:
                written = self._sock.send(data)
            except BlockingIOError:
                written = 0
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            if written == len(data):
                return
            data = data[written:]
        async with self._lock:
            await self._stream.send(data)

    async def subscribe(self, topics: list[str] | None = None) -> Any:
        return await self.call("events.subscribe", {"topics": topics} if topics else None)

    async def next_event(self, topic: str | None = None) -> tuple[str, Any]:
        """The next event (of ``topic``, skipping others)."""
        while True:
            event = await self.event_stream.receive()
            if topic is None or event[0] == topic:
                return event

    async def _read(self) -> None:
        try:
            async for line in _lines(self._sock, MAX_REPLY):
                message = json.loads(line)
                if isinstance(message, dict) and message.get("method") == "event":
                    params = message.get("params") or {}
                    # Nobody reading events (the stream closed, or 10,000 unread): drop them
                    # rather than stop reading replies.
                    with contextlib.suppress(anyio.WouldBlock, anyio.BrokenResourceError):
                        self._event_send.send_nowait((str(params.get("topic")), params.get("data")))
                    continue
                for reply in message if isinstance(message, list) else [message]:
                    waiter = self._pending.get(reply.get("id"))
                    if waiter is not None:
                        waiter[1].append(reply)
                        waiter[0].set()
        finally:
            self.closed.set()
            self._event_send.close()
            for done, _box in self._pending.values():
                done.set()


async def _lines(sock: socket.socket, limit: int) -> AsyncIterator[bytes]:
    """The lines received on ``sock`` until EOF (or an error, or a line over ``limit``).

    Reads the raw socket after ``anyio.wait_readable`` rather than through the socket stream:
    on asyncio the stream's receive, cancelled just as data arrives, makes the event loop
    report an InvalidStateError (anyio's readiness future is resolved after cancellation).
    """
    buffer = bytearray()
    waited = True
    while True:
        try:
            chunk = sock.recv(READ_CHUNK)
        except BlockingIOError:
            await anyio.wait_readable(sock)
            waited = True
            continue
        except OSError:
            return
        if not chunk:
            return
        if not waited:
            await anyio.lowlevel.checkpoint()  # a peer that never pauses must not starve the loop
        waited = False
        start, scan = 0, len(buffer)  # the buffer held no newline before this chunk
        buffer += chunk
        while (end := buffer.find(b"\n", scan)) >= 0:
            yield bytes(buffer[start:end])
            start = scan = end + 1
        del buffer[:start]
        if len(buffer) > limit:
            return


@asynccontextmanager
async def connect(path: Path | str | None = None) -> AsyncIterator[AsyncClient]:
    target = Path(path) if path is not None else default_socket_path()
    try:
        stream = await anyio.connect_unix(target)
    except (FileNotFoundError, ConnectionRefusedError):
        raise DaemonNotRunning(target) from None
    async with stream, anyio.create_task_group() as tg:
        client = AsyncClient(stream)
        tg.start_soon(client._read)
        try:
            yield client
        finally:
            tg.cancel_scope.cancel()
            client.event_stream.close()
