"""What RPC handlers may use: the services the composition root built, handed over as one value.

Handlers see this, never the daemon object: the daemon builds a :class:`Services` and the method
table from it, so no rpc module imports ``meworkd.app`` (the layers run app > rpc > core).
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol

from meworkd.base.log import Redactor
from meworkd.core.approvals.gate import Approvals
from meworkd.core.asks import ServerAsks
from meworkd.core.inspect import Inventory
from meworkd.core.serverlogs import ServerLogs
from meworkd.core.state import StateDB
from meworkd.core.turns import Turns
from meworkd.mcp import AuthRegistry
from meworkd.mcp.pool import SessionPool
from meworkd.settings.store import SettingsStore

__all__ = ["Counts", "Live", "Locations", "Services"]


class Locations(Protocol):
    """The daemon's files, as ``daemon.status`` reports them."""

    @property
    def settings(self) -> Path: ...
    @property
    def socket(self) -> Path: ...
    @property
    def state_dir(self) -> Path: ...


class Live(NamedTuple):
    """What exists only while the daemon runs: the state database and the turns on it."""

    state: StateDB
    turns: Turns


class Counts(NamedTuple):
    servers: int
    enabled: int
    sessions: int


@dataclass(frozen=True, slots=True)
class Services:
    store: SettingsStore
    pool: SessionPool
    auth: AuthRegistry
    approvals: Approvals
    asks: ServerAsks
    logs: ServerLogs
    redactor: Redactor
    paths: Locations
    connections: Callable[[], int]  # open RPC connections
    uptime: Callable[[], float]  # seconds
    shutdown: Callable[[], None]  # ask the daemon to stop
    live: Callable[[], Live]  # raises ShuttingDown unless the daemon is running
    inventory: Inventory  # what each server last reported (servers.tools)

    def counts(self) -> Counts:
        """Servers configured, enabled, and sessions open (daemon.status, the systemd status)."""
        servers = self.store.settings.servers
        enabled = sum(1 for c in servers.values() if c.enabled)
        return Counts(len(servers), enabled, len(self.pool.sessions))
