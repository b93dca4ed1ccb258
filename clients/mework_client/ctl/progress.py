"""A spinner on stderr while a slow call runs (a first ``npx`` download takes tens of seconds).

Only on a terminal, only after a short delay (a quick call shows nothing), and the line is
cleared when the call ends, so output and error lines stay clean and scripts never see it.
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any, TextIO

__all__ = ["Progress"]

FRAMES = "|/-\\"
CLEAR = "\r\x1b[K"


class Progress:
    """``with Progress(sys.stderr, "starting servers"):`` around a call that may take long."""

    def __init__(self, stream: TextIO, label: str, *, delay: float = 0.4, tick: float = 0.1):
        self.stream, self.label, self.delay, self.tick = stream, label, delay, tick
        self._stop: Any = None
        self._thread: Any = None

    def __enter__(self) -> Progress:
        if not _is_terminal(self.stream):
            return self
        import threading  # only on a terminal: start-up time of every other run

        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()
        return self

    def _spin(self) -> None:
        started = time.monotonic()
        if self._stop.wait(self.delay):
            return
        frame = 0
        while True:
            seconds = time.monotonic() - started
            self.stream.write(f"{CLEAR}{FRAMES[frame % len(FRAMES)]} {self.label}… {seconds:.0f} s")
            self.stream.flush()
            frame += 1
            if self._stop.wait(self.tick):
                self.stream.write(CLEAR)
                self.stream.flush()
                return

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
