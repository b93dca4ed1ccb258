"""The asynchronous client (anyio): many concurrent calls over one connection, plus events."""

import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mework_client import DaemonNotRunning, RpcError
from mework_client.paths import default_socket_path

__all__ = ["AsyncClient", "connect"]

MAX_REPLY = 64 * 1024 * 1024


class AsyncClient:
    def __init__(self, stream: SocketStream) -> None:
        self._stream = stream
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
        async with self._lock:
            await self._stream.send(line + b"\n")

    async def subscribe(self, topics: list[str] | None = None) -> Any:
        return await self.call("events.subscribe", {"topics": topics} if topics else None)

    async def next_event(self, topic: str | None = None) -> tuple[str, Any]:
        """The next event (of ``topic``, skipping others)."""
        while True:
            event = await self.event_stream.receive()
            if topic is None or event[0] == topic:
                return event

    async def _read(self) -> None:
        reader = BufferedByteReceiveStream(self._stream)
        try:
            while True:
                line = await reader.receive_until(b"\n", MAX_REPLY)
                message = json.loads(line)
                if isinstance(message, dict) and message.get("method") == "event":
                    params = message.get("params") or {}
                    self._event_send.send_nowait((str(params.get("topic")), params.get("data")))
                    continue
                for reply in message if isinstance(message, list) else [message]:
                    waiter = self._pending.get(reply.get("id"))
                    if waiter is not None:
                        waiter[1].append(reply)
                        waiter[0].set()
        except (
            anyio.EndOfStream,
            anyio.IncompleteRead,
            anyio.BrokenResourceError,
            anyio.ClosedResourceError,
        ):
            pass
        finally:
            self.closed.set()
            self._event_send.close()
            for done, _box in self._pending.values():
                done.set()


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
