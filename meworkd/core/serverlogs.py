"""Each server's stderr and log notifications (the Logs tab): a ring buffer capped in lines and
bytes, and ``server.log`` events."""

import time
from collections import deque
from collections.abc import Callable

from meworkd.base.events import EventBus

__all__ = ["LogRing", "ServerLogs"]

MAX_LINES = 1000
MAX_BYTES = 256 * 1024
MAX_LINE = 4096  # a longer line is cut (a flood of one endless line cannot grow memory)


class LogRing:
    def __init__(self, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> None:
        self._lines: deque[tuple[float, str]] = deque()
        self._bytes = 0
        self.max_lines, self.max_bytes = max_lines, max_bytes
        self.dropped = 0

    def append(self, line: str) -> str:
        if len(line) > MAX_LINE:
            line = line[:MAX_LINE] + f"… [{len(line) - MAX_LINE} characters cut]"
        self._lines.append((time.time(), line))
        self._bytes += _size(line)
        while self._lines and (len(self._lines) > self.max_lines or self._bytes > self.max_bytes):
            _t, old = self._lines.popleft()
            self._bytes -= _size(old)
            self.dropped += 1
        return line

    def tail(self, n: int | None = None) -> list[tuple[float, str]]:
        lines = list(self._lines)
        return lines if n is None else lines[-n:] if n > 0 else []

    @property
    def size(self) -> int:
        return self._bytes


def _size(line: str) -> int:
    return len(line.encode("utf-8", "surrogatepass"))


class ServerLogs:
    """One ring per server name, fed by every session of that server (and by Test connection)."""

    def __init__(self, bus: EventBus, redact: Callable[[str], str]) -> None:
        self._bus = bus
        self._redact = redact
        self._rings: dict[str, LogRing] = {}

    def ring(self, server: str) -> LogRing:
        ring = self._rings.get(server)
        if ring is None:
            ring = self._rings[server] = LogRing()
        return ring

    def writer(self, server: str, conversation: str | None) -> Callable[[str], str]:
        """A sink for one session's lines; it returns each line as stored (redacted, capped)."""

        def write(line: str) -> str:
            stored = self.ring(server).append(self._redact(line))
            self._bus.publish(
                "server.log", {"server": server, "conversation": conversation, "line": stored}
            )
            return stored

        return write

    def message(
        self, server: str, conversation: str | None, level: str, logger: str | None, text: str
    ) -> str:
        """A server's ``notifications/message`` line: stored next to its stderr, with its level."""
        source = f"{logger}: " if logger else ""
        stored = self.ring(server).append(self._redact(f"[{level}] {source}{text}"))
        self._bus.publish(
            "server.log",
            {
                "server": server,
                "conversation": conversation,
                "line": stored,
                "level": level,
                "source": "notification",
            },
        )
        return stored

    def forget(self, server: str) -> None:
        self._rings.pop(server, None)

    def rename(self, old: str, new: str) -> None:
        if old in self._rings:
            self._rings[new] = self._rings.pop(old)
