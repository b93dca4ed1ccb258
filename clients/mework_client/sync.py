"""The synchronous client: one connection, sequential calls, events kept in order (stdlib only).

``meworkctl`` starts with this module (bench B6), so it imports ``typing`` for annotations only
and connects with ``_socket``, the C module under ``socket``: importing ``socket`` itself (its
enum classes, ``selectors``) was ~2 ms of a ~25 ms ``meworkctl status``. The lines are read with
a buffer of our own (``_socket`` has no ``makefile``).
"""

from __future__ import annotations

import _socket
import itertools
import json
import os
from collections import deque
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import socket
    from collections.abc import Iterator
    from types import TracebackType
    from typing import Any, Self

__all__ = [
    "Client",
    "DaemonNotRunning",
    "RpcError",
    "UntrustedSocket",
    "check_peer",
    "check_socket_dir",
]


READ_SIZE = 64 * 1024
CLOSED = "meworkd closed the connection"


class RpcError(Exception):
    """An error reply from the daemon; ``kind`` is the stable ``data.kind`` string."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    @property
    def kind(self) -> str:
        if isinstance(self.data, dict) and isinstance(self.data.get("kind"), str):
            return str(self.data["kind"])
        return "unknown"

    def __str__(self) -> str:
        detail = self.data.get("detail") if isinstance(self.data, dict) else None
        return f"{self.message}: {detail}" if detail else self.message


class DaemonNotRunning(ConnectionError):
    def __init__(self, path: Path, message: str | None = None) -> None:
        super().__init__(message or f"meworkd is not running (no daemon listening on {path})")
        self.path = path


class UntrustedSocket(DaemonNotRunning):
    """The socket may not be the user's own daemon: nothing was sent to it.

    A :class:`DaemonNotRunning`, since no daemon of ours can be reached there; its message names
    the problem (another user may have planted the socket or its directory).
    """

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(
            path, f"refusing to talk to {path}: {problem} (another user may have planted it)"
        )
        self.problem = problem


# mework_protocol is imported inside these: importing this package (e.g. for
# mework_client.service) stays on the standard library and this package alone
# (tests/test_service_install.py).


def check_socket_dir(path: Path) -> None:
    """Before connecting: the socket's directory must be a private directory of ours."""
    from mework_protocol.boundary import socket_dir_problem

    try:
        problem = socket_dir_problem(path, os.getuid())
    except (FileNotFoundError, NotADirectoryError):
        raise DaemonNotRunning(path) from None
    if problem is not None:
        raise UntrustedSocket(path, problem)


def check_peer(sock: _socket.socket | socket.socket, path: Path) -> None:
    """Once connected, before a byte is sent: the peer must run as our own uid."""
    from mework_protocol.boundary import peer_problem

    problem = peer_problem(sock, os.getuid())
    if problem is not None:
        raise UntrustedSocket(path, problem)


class Client:
    """One connection; calls are sequential. Events received meanwhile are kept in order."""

    def __init__(self, path: Path | str | None = None, timeout: float | None = None) -> None:
        if path is None:
            from mework_protocol.address import default_socket_path  # see check_socket_dir

            path = default_socket_path()
        self.path = Path(path)
        check_socket_dir(self.path)
        self._sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(str(self.path))
            check_peer(self._sock, self.path)
        except (FileNotFoundError, ConnectionRefusedError):
            self._sock.close()
            raise DaemonNotRunning(self.path) from None
        except BaseException:
            self._sock.close()
            raise
        self._unread = bytearray()  # received, not yet returned by _receive
        self._ids = itertools.count(1)
        self._events: deque[tuple[str, Any]] = deque()

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": request_id}
        if params:
            message["params"] = params
        self._send(message)
        while True:
            reply = self._receive()
            if reply.get("method") == "event":
                params_ = reply.get("params") or {}
                self._events.append((str(params_.get("topic")), params_.get("data")))
                continue
            if reply.get("id") != request_id:
                continue  # a reply to an older, abandoned request
            if "error" in reply:
                error = reply["error"]
                raise RpcError(error.get("code", 0), error.get("message", ""), error.get("data"))
            return reply.get("result")

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params:
            message["params"] = params
        self._send(message)

    def events(self, topics: list[str] | None = None) -> Iterator[tuple[str, Any]]:
        """Subscribe, then yield ``(topic, data)`` forever (until the daemon goes away)."""
        self.call("events.subscribe", {"topics": topics} if topics else None)
        while True:
            while self._events:
                yield self._events.popleft()
            reply = self._receive()
            if reply.get("method") == "event":
                params = reply.get("params") or {}
                yield str(params.get("topic")), params.get("data")

    def _send(self, message: dict[str, Any]) -> None:
        try:
            self._sock.sendall(json.dumps(message).encode() + b"\n")
        except (BrokenPipeError, ConnectionResetError):
            # The same end as a read that meets EOF, whichever of the two notices first.
            raise ConnectionError(CLOSED) from None

    def _receive(self) -> dict[str, Any]:
        line = self._readline()
        if not line:
            raise ConnectionError(CLOSED)
        value = json.loads(line)
        if not isinstance(value, dict):
            raise ConnectionError("unexpected reply from meworkd")
        return value

    def _readline(self) -> bytes:
        """The next line with its newline; what is left at end of stream (b"" when nothing)."""
        scanned = 0  # the buffer holds no newline before this offset
        while (end := self._unread.find(b"\n", scanned) + 1) == 0:
            scanned = len(self._unread)
            chunk = self._sock.recv(READ_SIZE)
            if not chunk:
                line = bytes(self._unread)
                self._unread.clear()
                return line
            self._unread += chunk
        line = bytes(self._unread[:end])
        del self._unread[:end]
        return line

    def shutdown(self) -> None:
        """End the connection under a read blocked in another thread (that read gets EOF).

        ``close`` alone would not wake that read.
        """
        try:
            self._sock.shutdown(_socket.SHUT_RDWR)
        except OSError:
            pass  # not connected any more: nothing is blocked on it

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
