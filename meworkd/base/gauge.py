"""A count of things open now, kept by the part that opens them and read by another.

The RPC server counts its connections in one; ``daemon.status`` reads it through the core, so
neither needs the other (the server is built after the method table the status is part of).
"""

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Gauge"]


class Gauge:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0

    @contextmanager
    def held(self) -> Iterator[None]:
        """Counted while the block runs."""
        self.value += 1
        try:
            yield
        finally:
            self.value -= 1
