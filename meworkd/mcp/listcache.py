"""The lists a 2026-07-28 server says may be reused (``ttlMs``), kept per session.

A ``tools/list`` (or prompts, resources, templates) whose every page carries ``ttlMs > 0`` is
fresh for that long (the shortest page's), so a turn that starts meanwhile reuses it instead of
asking the server again. A ``list_changed`` notification of that list drops it at once, and a
listing that was under way when it came is not kept (it may predate the change). Older revisions
send no ``ttlMs`` (0: immediately stale), so nothing of theirs is kept. Per session, so a
``private`` list (``cacheScope``) is only reused within the login that fetched it; a ``public``
one is not shared across sessions either (one session per conversation and server keeps a
server's answers to one conversation apart).
"""

import time
from collections.abc import Callable
from typing import Any

__all__ = ["ListingCache"]


class ListingCache:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._fresh: dict[str, tuple[float, list[Any]]] = {}
        self._generation: dict[str, int] = {}

    def get(self, what: str) -> list[Any] | None:
        """The kept list of ``what`` while it is fresh (a copy), else None."""
        kept = self._fresh.get(what)
        if kept is None:
            return None
        if self._clock() >= kept[0]:
            del self._fresh[what]
            return None
        return list(kept[1])

    def generation(self, what: str) -> int:
        """A token a fetch takes before it asks: :meth:`keep` refuses it after a change."""
        return self._generation.get(what, 0)

    def keep(self, what: str, items: list[Any], ttl_ms: int, generation: int) -> None:
        if ttl_ms > 0 and generation == self.generation(what):
            self._fresh[what] = (self._clock() + ttl_ms / 1000, list(items))

    def forget(self, what: str) -> None:
        """The server said the list changed."""
        self._generation[what] = self.generation(what) + 1
        self._fresh.pop(what, None)
