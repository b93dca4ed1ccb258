"""The synchronous client: one connection, sequential calls, events kept in order (stdlib only)."""

import itertools
import json
import socket
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Self

__all__ = ["Client", "DaemonNotRunning", "RpcError"]


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
    def __init__(self, path: Path) -> None:
        super().__init__(f"meworkd is not running (no daemon listening on {path})")
        self.path = path


class Client:
    """One connection; calls are sequential. Events received meanwhile are kept in order."""

    def __init__(self, path: Path | str | None = None, timeout: float | None = None) -> None:
        if path is None:
            # Imported here: importing this package (e.g. for mework_client.service) stays on
            # the standard library and this package alone (tests/test_service_install.py).
            from mework_protocol.address import default_socket_path

            path = default_socket_path()
        self.path = Path(path)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(str(self.path))
        except (FileNotFoundError, ConnectionRefusedError):
            self._sock.close()
            raise DaemonNotRunning(self.path) from None
        self._reader = self._sock.makefile("rb")
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
        self._sock.sendall(json.dumps(message).encode() + b"\n")

    def _receive(self) -> dict[str, Any]:
        line = self._reader.readline()
        if not line:
            raise ConnectionError("meworkd closed the connection")
        value = json.loads(line)
        if not isinstance(value, dict):
            raise ConnectionError("unexpected reply from meworkd")
        return value

    def close(self) -> None:
        self._reader.close()
        self._sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
