"""anyio's UNIX socket stream: a receive cancelled as data arrives (what rpc.sockio avoids).

On asyncio, ``UNIXSocketStream.receive`` parks on a future whose own ``set_result`` is the
reader callback (``_RawSocketMixin._wait_until_readable``). When ``select()`` has queued that
callback and the receive is cancelled before it runs, the callback resolves a cancelled future
and the loop reports ``InvalidStateError``. The first test is a strict xfail: the day anyio fixes
this it passes, the suite fails, and meworkd.rpc.sockio can go (the stream's own receive would
do). The second shows that sockio's way does not have the race.
"""

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from anyio.abc import SocketAttribute

from meworkd.rpc import sockio

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def loop_reports() -> AsyncIterator[list[dict[str, Any]]]:
    """What the event loop reports to its exception handler meanwhile."""
    loop = asyncio.get_running_loop()
    reports: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reports.append(context))
    try:
        yield reports
    finally:
        loop.set_exception_handler(previous)


async def cancel_as_data_arrives(
    path: Path, receive: Callable[[anyio.abc.SocketStream], Awaitable[object]]
) -> list[dict[str, Any]]:
    """A reader parked in ``receive``; the peer sends a byte; one checkpoint later the reader
    is cancelled (after ``select()`` saw the byte, before the reader callback ran)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen()
        async with await anyio.connect_unix(path) as stream, loop_reports() as reports:
            peer, _ = server.accept()
            with peer:
                async with anyio.create_task_group() as tg:
                    reading = anyio.CancelScope()

                    async def reader() -> None:
                        with reading:
                            await receive(stream)

                    tg.start_soon(reader)
                    for _ in range(3):  # the reader parks in receive
                        await anyio.lowlevel.checkpoint()
                    peer.send(b"x")
                    await anyio.lowlevel.checkpoint()
                    reading.cancel()
                for _ in range(3):  # the queued reader callback runs
                    await anyio.lowlevel.checkpoint()
    return reports


@pytest.mark.xfail(
    strict=True,
    reason="anyio (4.16.0) resolves a cancelled readiness future: keep meworkd.rpc.sockio. "
    "If this passes, anyio fixed it: sockio can go.",
)
async def test_anyio_stream_receive_cancelled_as_data_arrives(short_tmp: Path) -> None:
    async def receive(stream: anyio.abc.SocketStream) -> object:
        return await stream.receive()

    reports = await cancel_as_data_arrives(short_tmp / "s", receive)
    assert [r.get("exception") for r in reports] == []


async def test_sockio_recv_cancelled_as_data_arrives(short_tmp: Path) -> None:
    async def receive(stream: anyio.abc.SocketStream) -> object:
        return await sockio.recv(stream.extra(SocketAttribute.raw_socket), 1024)

    reports = await cancel_as_data_arrives(short_tmp / "s", receive)
    assert [r.get("exception") for r in reports] == []
