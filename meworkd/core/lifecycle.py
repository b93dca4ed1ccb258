"""The daemon as its clients see it: what runs and where (daemon.status), and a stop asked for.

The composition root builds this with the parts it reports on and waits on :meth:`stopping`;
the method group ``daemon.*`` calls it and never sees the daemon object.
"""

import os
import time
from pathlib import Path
from typing import Any

import anyio

from meworkd import __version__
from meworkd.base.gauge import Gauge
from meworkd.core.health import settings_state
from meworkd.core.state import StateDB
from meworkd.core.turns import Turns
from meworkd.mcp import SessionPool
from meworkd.settings.store import SettingsStore

__all__ = ["Lifecycle"]


class Lifecycle:
    def __init__(
        self,
        store: SettingsStore,
        pool: SessionPool,
        state: StateDB,
        turns: Turns,
        connections: Gauge,
        *,
        socket: Path,
        state_dir: Path,
    ) -> None:
        self._store = store
        self._pool = pool
        self._state = state
        self._turns = turns
        self._connections = connections
        self._socket = socket
        self._state_dir = state_dir
        self._started_at = time.monotonic()
        self._stop = anyio.Event()

    def request_shutdown(self) -> None:
        self._stop.set()

    async def stopping(self) -> None:
        """Return once a stop was asked for (daemon.shutdown, a signal)."""
        await self._stop.wait()

    def uptime(self) -> float:
        return time.monotonic() - self._started_at

    def counts(self) -> tuple[int, int, int]:
        """Servers configured, enabled, and sessions open."""
        servers = self._store.settings.servers
        enabled = sum(1 for c in servers.values() if c.enabled)
        return len(servers), enabled, len(self._pool.sessions)

    def status_line(self) -> str:
        """One line for the service manager (systemd's STATUS=)."""
        servers, enabled, sessions = self.counts()
        return f"{servers} servers ({enabled} enabled), {sessions} sessions"

    def status(self) -> dict[str, Any]:
        """daemon.status: what runs, where its files are, and the settings file's state."""
        servers, enabled, sessions = self.counts()
        health = settings_state(self._store)
        return {
            "version": __version__,
            "pid": os.getpid(),
            "uptimeSeconds": round(self.uptime(), 3),
            "settingsPath": str(self._store.path),
            "socketPath": str(self._socket),
            "stateDir": str(self._state_dir),
            "servers": servers,
            "serversEnabled": enabled,
            "sessions": sessions,
            "conversations": self._state.conversation_count(),
            "turns": self._turns.active,
            "connections": self._connections.value,
            "settingsError": health["error"],
            "settingsWarnings": health["warnings"],
            "settings": health,
        }
