"""Newline-delimited framing with a size cap that survives oversized lines.

Pure and synchronous so it can be property-tested: bytes go in, whole lines (or a marker for a
line that was too long and has been skipped) come out.
"""

from dataclasses import dataclass, field

__all__ = ["DEFAULT_MAX_LINE", "EDGE", "LineSplitter", "Oversized"]

DEFAULT_MAX_LINE = 8 * 1024 * 1024
EDGE = 256  # bytes kept of each end of an oversized line (where a JSON-RPC id is written)


@dataclass(frozen=True, slots=True)
class Oversized:
    """Stands for a line longer than the limit; its bytes were discarded but for its ends."""

    size: int
    head: bytes = field(default=b"", compare=False)
    tail: bytes = field(default=b"", compare=False)


class LineSplitter:
    def __init__(self, max_line: int = DEFAULT_MAX_LINE) -> None:
        self.max_line = max_line
        self._buffer = bytearray()
        self._skipping = False  # inside an oversized line: drop bytes until its newline
        self._skipped = 0
        self._head = b""  # of the oversized line
        self._tail = b""

    def feed(self, data: bytes) -> list[bytes | Oversized]:
        out: list[bytes | Oversized] = []
        start = 0
        while start < len(data):
            end = data.find(b"\n", start)
            chunk = data[start:] if end < 0 else data[start:end]
            if self._skipping:
                self._skipped += len(chunk)
                self._keep_tail(chunk)
            else:
                self._buffer += chunk
                if len(self._buffer) > self.max_line:
                    self._skipping, self._skipped = True, len(self._buffer)
                    self._head, self._tail = bytes(self._buffer[:EDGE]), b""
                    self._keep_tail(self._buffer)
                    self._buffer.clear()
            if end < 0:
                break
            if self._skipping:
                out.append(Oversized(self._skipped, self._head, self._tail))
                self._skipping, self._skipped = False, 0
            else:
                out.append(bytes(self._buffer))
                self._buffer.clear()
            start = end + 1
        return out

    def _keep_tail(self, chunk: bytes | bytearray) -> None:
        if len(chunk) >= EDGE:
            self._tail = bytes(chunk[-EDGE:])
        else:
            self._tail = (self._tail + chunk)[-EDGE:]

    @property
    def buffered(self) -> int:
        """Bytes of an unfinished line held in memory (none of one being skipped)."""
        return len(self._buffer)

    @property
    def pending(self) -> int:
        """Bytes of an unfinished line (a half-written message at EOF)."""
        return self._skipped if self._skipping else len(self._buffer)
