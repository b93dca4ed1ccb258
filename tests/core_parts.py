"""The daemon's core built in-process, without a socket: the façades on a real settings file and
a real state database, so the domain rules are tested as calls (``core`` fixture's ``Core``).

No session is started unless a test asks a server: the pool runs, real but idle.
"""

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from meworkd.base.events import EventBus
from meworkd.base.gauge import Gauge
from meworkd.base.log import Redactor
from meworkd.core.approvals.gate import Approvals
from meworkd.core.asks import ServerAsks
from meworkd.core.conversations import Conversations
from meworkd.core.inspect import Inventory
from meworkd.core.lifecycle import Lifecycle
from meworkd.core.listings import ListFollower
from meworkd.core.serverlogs import ServerLogs
from meworkd.core.servers import Servers
from meworkd.core.settingsfile import SettingsFile
from meworkd.core.state import StateDB
from meworkd.core.turns import Turns
from meworkd.mcp import AuthRegistry, PidLedger, SessionPool
from meworkd.settings.store import SettingsStore


@dataclass
class Core:
    path: Path  # the settings file
    bus: EventBus
    store: SettingsStore
    state: StateDB
    logs: ServerLogs
    inventory: Inventory
    pool: SessionPool
    approvals: Approvals
    turns: Turns
    servers: Servers
    conversations: Conversations
    settings: SettingsFile
    connections: Gauge
    lifecycle: Lifecycle

    async def write(self, doc: dict[str, Any]) -> None:
        """Replace the settings file and read it, as the watcher would on a hand edit."""
        self.path.write_text(json.dumps(doc))
        await self.store.reload("test")

    def writes(self, server: str, line: str) -> None:
        """A line on ``server``'s stderr, as one of its sessions would write it."""
        self.logs.writer(server, None)(line)


def build_core(root: Path) -> Core:
    """The core on a fresh settings file (created with the defaults) and state database."""
    path = root / "cfg" / "settings.json"
    bus, redactor = EventBus(), Redactor()
    store = SettingsStore(path, bus)
    store.open()
    state = StateDB(root / "state.db").open()
    logs = ServerLogs(bus, redactor.redact)
    inventory = Inventory()
    ledger = PidLedger(root / "pids", owner="test")
    auth = AuthRegistry(root, bus, {})
    asks = ServerAsks(bus, store, logs, state, ListFollower(bus, inventory))
    pool = SessionPool({}, logs.writer, ledger, bus, auth, host=asks)
    approvals = Approvals(bus, store)
    turns = Turns(store, pool, approvals, state, bus, redactor.redact_value, asks)
    connections = Gauge()
    lifecycle = Lifecycle(
        store, pool, state, turns, connections, socket=root / "d.sock", state_dir=root
    )
    return Core(
        path,
        bus,
        store,
        state,
        logs,
        inventory,
        pool,
        approvals,
        turns,
        Servers(store, pool, auth, logs, inventory, state, redactor.redact_value),
        Conversations(store, pool, state, turns, approvals),
        SettingsFile(store),
        connections,
        lifecycle,
    )


@pytest.fixture
async def core(tmp_path: Path) -> AsyncIterator[Core]:
    """The core with its pool running (as the daemon's backend runs it), closed afterwards."""
    parts = build_core(tmp_path)
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(parts.pool.run, parts.store.settings)
            yield parts
            tg.cancel_scope.cancel()
    finally:
        parts.state.close()
