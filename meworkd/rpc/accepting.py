"""Accepting connections, also when the process has run out of file descriptors.

Out of descriptors (``EMFILE``, ``ENFILE``), ``accept`` fails while the connection waits in the
backlog: a retry loop spins, or sleeps and retries, logging every attempt, and the client waits
for nothing. Instead one descriptor is held in reserve; it is given up to accept the waiting
connection, which is told why in one error line and closed, and then taken back. A shortage is
logged when it starts and when it ends, at most once a minute, with counts; other accept errors
back off and are logged the same way.
"""

import contextlib
import errno
import math
import os
import resource
import socket
from types import TracebackType

import anyio
from anyio.abc import SocketAttribute, SocketListener, SocketStream
from mework_protocol import codes

from meworkd.base.log import get_logger
from meworkd.rpc import sockio
from meworkd.rpc.dispatch import error_response

__all__ = ["LOG_INTERVAL", "Acceptor", "refuse"]

LOG_INTERVAL = 60.0  # seconds: at most one "accept is failing" line (and its "again") per this
BACKOFF_FIRST = 0.05  # seconds before retrying an accept that failed without a refusal
BACKOFF_MAX = 1.0
REFUSED_DRAIN = 1024 * 1024  # bytes read and dropped from a refused peer before closing
# Seconds a peer turned away for want of descriptors may take to send its request and close:
# others wait behind it, as the reserve descriptor is in use meanwhile.
REFUSAL_GRACE = 0.5
_READ_CHUNK = 64 * 1024
_SHORTAGE = (errno.EMFILE, errno.ENFILE)
_OUT_OF_FDS = error_response(
    codes.RESOURCE_EXHAUSTED,
    "Resource exhausted",
    {
        "kind": "resource_exhausted",
        "detail": "meworkd is out of file descriptors; try again when other connections close",
    },
)

log = get_logger("meworkd.rpc")


async def refuse(sock: socket.socket, reply: bytes) -> None:
    """Send ``reply`` as the connection's only line, then drop what the peer sent and close.

    Closing with unread input would reset the connection before the peer reads the reply.
    """
    await sockio.send_all(sock, reply + b"\n")
    sock.shutdown(socket.SHUT_WR)
    drained = 0
    while drained < REFUSED_DRAIN:
        chunk = await sockio.recv(sock, _READ_CHUNK)
        if not chunk:
            return
        drained += len(chunk)


def _open_reserve() -> int | None:
    try:
        return os.open(os.devnull, os.O_RDONLY)
    except OSError:
        return None


def _errno(exc: BaseException) -> int:
    cause = exc if isinstance(exc, OSError) else exc.__cause__  # anyio wraps it
    if isinstance(cause, OSError):
        return cause.errno or 0
    return 0


class Acceptor:
    """``accept`` for :class:`~meworkd.rpc.server.RpcServer`: it only ever returns a connection."""

    def __init__(self, listener: SocketListener) -> None:
        self._listener = listener
        self._raw: socket.socket = listener.extra(SocketAttribute.raw_socket)
        self._reserve = _open_reserve()
        self._backoff = BACKOFF_FIRST
        self._failed = 0  # attempts that failed since the last report
        self._refused = 0
        self._told_at = -math.inf  # when a failing accept was last reported
        self._failing = False  # the current run of failures was reported
        # Out of descriptors, accept fails before it looks for a connection. The first such
        # failure waits for one and retries: the shortage may have ended meanwhile, and only a
        # second failure with a connection waiting refuses it.
        self._waited = False

    def __enter__(self) -> "Acceptor":
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._reserve is not None:
            os.close(self._reserve)
            self._reserve = None

    async def accept(self) -> SocketStream:
        while True:
            if self._reserve is None:
                # Another thread (anyio's workers open files) may have taken the descriptor the
                # last refusal gave up: take one back before a connection can have it.
                self._reserve = _open_reserve()
            try:
                stream = await self._listener.accept()
            except (OSError, anyio.BrokenResourceError) as exc:
                await self._after_failure(_errno(exc))
                continue
            self._succeeded()
            return stream

    async def _after_failure(self, err: int) -> None:
        self._failed += 1
        now = anyio.current_time()
        if not self._failing and now - self._told_at >= LOG_INTERVAL:
            self._failing, self._told_at = True, now
            name = errno.errorcode.get(err, str(err))
            if err in _SHORTAGE:
                log.error(
                    "rpc.out_of_file_descriptors",
                    error=name,
                    limit=resource.getrlimit(resource.RLIMIT_NOFILE)[0],
                    detail="new connections are refused (resource_exhausted) until some close",
                )
            else:
                log.warning("rpc.accept_failed", error=name)
        if err in _SHORTAGE and not self._waited:
            await anyio.wait_readable(self._raw)  # no spinning while nobody connects
            self._waited = True
            return
        self._waited = False
        if err in _SHORTAGE and await self._refuse_one():
            self._backoff = BACKOFF_FIRST
            return
        await anyio.sleep(self._backoff)  # no spinning while the cause lasts
        self._backoff = min(self._backoff * 2, BACKOFF_MAX)

    def _succeeded(self) -> None:
        self._backoff = BACKOFF_FIRST
        self._waited = False
        if self._failing:
            log.info("rpc.accepting_again", failed=self._failed, refused=self._refused)
            self._failing, self._failed, self._refused = False, 0, 0

    async def _refuse_one(self) -> bool:
        """Accept the waiting connection on the reserve descriptor and tell it why it cannot be
        served; False when there is no reserve to give up."""
        if self._reserve is None:
            return False
        os.close(self._reserve)
        self._reserve = None
        try:
            try:
                conn, _address = self._raw.accept()
            except BlockingIOError:
                return True  # the peer gave up meanwhile: nothing waits
            except OSError:
                return False
            with conn, contextlib.suppress(OSError), anyio.move_on_after(REFUSAL_GRACE):
                conn.setblocking(False)
                await refuse(conn, _OUT_OF_FDS)
            self._refused += 1
            return True
        finally:
            self._reserve = _open_reserve()
