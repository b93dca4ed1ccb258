"""Request lines handed from a connection's reader to its idle workers.

An anyio memory stream did this before; its ``receive`` costs a waiting worker a checkpoint (an
extra event-loop pass), a record of the current task and an event, every time (bench B1: about
6 % of the daemon's samples on the call path). Here an idle worker waits on one event, and the
reader hands a line to the worker idle longest, or says that none is idle (it starts one then).
"""

from collections import deque

import anyio

__all__ = ["Handoff"]


class _Idle:
    __slots__ = ("event", "line")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.line: bytes | None = None


class Handoff:
    """The idle workers of one connection."""

    def __init__(self) -> None:
        self._idle: deque[_Idle] = deque()
        self._closed = False

    def give(self, line: bytes) -> bool:
        """Hand ``line`` to an idle worker; False when none is idle (or the hand-off closed)."""
        if not self._idle:
            return False
        idle = self._idle.popleft()
        idle.line = line
        idle.event.set()
        return True

    async def take(self) -> bytes | None:
        """The next line for this worker once one is given; None once :meth:`close` was called."""
        if self._closed:
            return None
        idle = _Idle()
        self._idle.append(idle)
        try:
            await idle.event.wait()
        finally:
            if not idle.event.is_set():  # cancelled while idle: no line goes to it any more
                self._idle.remove(idle)
        return idle.line

    def close(self) -> None:
        """No more lines: every idle worker's :meth:`take` gives None, and so do later ones."""
        self._closed = True
        while self._idle:
            self._idle.popleft().event.set()
