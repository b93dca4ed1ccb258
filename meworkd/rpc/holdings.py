"""One daemon-wide budget for the bytes held for frontends, and each connection's account of it.

Every connection holds bytes for its peer: a partial line (read, its newline not yet come),
requests in flight (their lines, and a batch's replies gathered so far) and replies waiting to be
written. Each is bounded per connection elsewhere (the line limit, the in-flight limit, the
outbox); here their sum over all connections is kept under one budget (``HELD_BYTES``), so that
many connections together cannot make the daemon grow without bound either.

Past the budget, new work waits: readers read no more and requests already read do not start.
While it waits, the connections stalled longest are cut (each socket shut down, its requests
cancelled, what it held given back) until a quarter of the budget is free again. A connection
is stalled while it has a line unfinished (since the line began) or replies its peer does not
take (since the writer last wrote). Only when no connection is stalled so are those whose work
waits for room cut (else all might wait on each other). Never the daemon: it only cuts
connections.
"""

from collections.abc import Callable

import anyio

from meworkd.base.log import get_logger

__all__ = ["HELD_BYTES", "Account", "Holdings"]

# Bytes held for all connections together before new work waits and stalled connections are cut.
HELD_BYTES = 32 * 1024 * 1024

log = get_logger("meworkd.rpc")


class Account:
    """What one connection holds: its partial line, its requests in flight, its waiting replies."""

    __slots__ = (
        "_cut",
        "_holdings",
        "cut_off",
        "in_flight",
        "partial",
        "partial_since",
        "queued",
        "queued_since",
        "waiting_since",
    )

    def __init__(self, holdings: "Holdings", cut: Callable[[], None]) -> None:
        self._holdings = holdings
        self._cut = cut
        self.cut_off = False
        self.partial = self.in_flight = self.queued = 0
        self.partial_since: float | None = None
        self.queued_since: float | None = None
        self.waiting_since: float | None = None

    @property
    def held(self) -> int:
        return self.partial + self.in_flight + self.queued

    def set_partial(self, size: int) -> None:
        """The connection's unfinished line now has ``size`` bytes."""
        if size and not self.partial:
            self.partial_since = anyio.current_time()
        elif not size:
            self.partial_since = None
        self._holdings.change(size - self.partial)
        self.partial = size

    def take(self, size: int) -> None:
        """A request line or a batch's gathered replies: ``size`` more bytes in flight."""
        self.in_flight += size
        self._holdings.change(size)

    def give_back(self, size: int) -> None:
        self.in_flight -= size
        self._holdings.change(-size)

    def queue(self, size: int) -> None:
        """``size`` bytes of replies wait for the writer."""
        if not self.queued:
            self.queued_since = anyio.current_time()
        self.queued += size
        self._holdings.change(size)

    def written(self, size: int) -> None:
        """The writer took ``size`` bytes off the queue: the peer reads, it is not stalled."""
        self.queued -= size
        self.queued_since = anyio.current_time() if self.queued else None
        self._holdings.change(-size)

    def stalled_since(self) -> float | None:
        """Since when the peer leaves bytes here unmoved: a line it does not finish, replies it
        does not take (None: it does not)."""
        if self.cut_off or not self.held:
            return None
        if self.partial_since is None or self.queued_since is None:
            return self.partial_since if self.queued_since is None else self.queued_since
        return min(self.partial_since, self.queued_since)

    def waiting(self) -> float | None:
        """Since when its work waits for room, holding what it holds (None: it does not)."""
        return None if self.cut_off or not self.held else self.waiting_since

    async def room(self) -> None:
        """Wait while the daemon holds more than its budget (cutting the longest stalled)."""
        if not self._holdings.over:
            return
        self.waiting_since = anyio.current_time()
        try:
            await self._holdings.room()
        finally:
            self.waiting_since = None

    def cut(self) -> None:
        self.cut_off = True
        self._cut()

    def close(self) -> None:
        """The connection has gone: whatever is still on its account is given back."""
        self._holdings.close(self)

    def daemon_wide(self) -> dict[str, int]:
        """What all connections together hold (:meth:`Holdings.report`)."""
        return self._holdings.report()


class Holdings:
    """The bytes held for all connections, against one budget."""

    def __init__(self, limit: int = HELD_BYTES) -> None:
        self.limit = limit
        self.held = 0
        self.peak = 0  # the most held at once since start
        self.cut = 0  # connections cut to keep under the budget
        self._accounts: set[Account] = set()
        self._cut_off: set[Account] = set()  # cut, still giving back what they held
        self._waiting = 0
        self._less = anyio.Event()  # set when bytes are given back while someone waits

    @property
    def over(self) -> bool:
        return self.held > self.limit

    def report(self) -> dict[str, int]:
        """daemon.status ``rpcMemory``: the bytes held for all connections, against the budget."""
        return {
            "heldBytes": self.held,
            "peakHeldBytes": self.peak,
            "budgetBytes": self.limit,
            "connectionsCut": self.cut,
        }

    def open(self, cut: Callable[[], None]) -> Account:
        """A new connection's account; ``cut`` ends the connection (see the module doc)."""
        account = Account(self, cut)
        self._accounts.add(account)
        return account

    def change(self, delta: int) -> None:
        self.held += delta
        if self.held > self.peak:
            self.peak = self.held
        elif delta < 0 and self._waiting:
            self._less.set()

    def close(self, account: Account) -> None:
        self._accounts.discard(account)
        self._cut_off.discard(account)
        self.change(-account.held)
        account.partial = account.in_flight = account.queued = 0

    async def room(self) -> None:
        self._waiting += 1
        try:
            while self.over:
                self._relieve()
                if self._less.is_set():
                    self._less = anyio.Event()
                await self._less.wait()
        finally:
            self._waiting -= 1

    def _relieve(self) -> None:
        """Cut the connections stalled longest until what stays is under three quarters of the
        budget (so that readers do not stop again at once). The peers that stall come first;
        work that waits for room only when nothing else holds bytes (else all might wait)."""
        giving_back = sum(a.held for a in self._cut_off)
        excess = self.held - giving_back - self.limit * 3 // 4
        if excess <= 0:
            return
        stalled = [(since, a) for a in self._accounts if (since := a.stalled_since()) is not None]
        if not stalled:
            stalled = [(since, a) for a in self._accounts if (since := a.waiting()) is not None]
        stalled.sort(key=lambda pair: pair[0])
        now = anyio.current_time()
        for since, victim in stalled:
            if excess <= 0:
                break
            excess -= victim.held
            self.cut += 1
            log.warning(
                "rpc.connection_cut",
                held=self.held,
                limit=self.limit,
                its_bytes=victim.held,
                stalled_seconds=round(now - since, 3),
            )
            self._cut_off.add(victim)
            victim.cut()
