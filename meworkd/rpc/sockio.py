"""Raw non-blocking socket reads and writes, waiting through ``anyio.wait_readable/writable``.

Why not the anyio stream's ``receive``/``send``: on asyncio, anyio's UNIX socket stream hands
the readiness future's own ``set_result`` to ``loop.add_reader``
(``_RawSocketMixin._wait_until_readable``). A receive cancelled after ``select()`` has queued
that callback, but before it runs, leaves the loop resolving a cancelled future, and the loop
reports ``InvalidStateError('invalid state')``; meworkd cancels readers at shutdown, just as
data may arrive. ``anyio.wait_readable`` catches that case. Needed with anyio 4.16.0 (and its
main branch at 660a06d); the related agronholm/anyio#1267 (``aclose()`` after a cancelled
receive), fixed by PR #1269 in 4.16.0, is another race. tests/test_anyio_race.py reproduces
the one this module avoids as a strict xfail: when anyio fixes it, that test fails, and this
module can go in favour of the stream's own methods.
"""

import socket

import anyio

__all__ = ["recv", "send_all", "send_some"]


async def recv(sock: socket.socket, size: int) -> bytes:
    """Up to ``size`` bytes once some arrive (``b""``: end of stream); ``OSError`` passes."""
    while True:
        try:
            return sock.recv(size)
        except BlockingIOError:
            await anyio.wait_readable(sock)


def send_some(sock: socket.socket, data: bytes | memoryview) -> int:
    """Send what the socket takes now, without waiting; the count sent (0: it is full)."""
    try:
        return sock.send(data)
    except BlockingIOError:
        return 0


async def send_all(sock: socket.socket, data: bytes) -> None:
    """Send all of ``data``, waiting while the socket is full; ``OSError`` passes."""
    view = memoryview(data)
    while view:
        written = send_some(sock, view)
        if written:
            view = view[written:]
        else:
            await anyio.wait_writable(sock)
