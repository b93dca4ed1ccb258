"""daemon.*: the daemon's status and its shutdown."""

import os
from typing import Any

from mework_protocol.params import NoParams

from meworkd import __version__
from meworkd.core.health import settings_state
from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup

__all__ = ["group"]

group: MethodGroup[Services, Connection] = MethodGroup()


@group.add("daemon.status")
async def status(s: Services, _conn: Connection, _p: NoParams) -> dict[str, Any]:
    counts = s.counts()
    live = s.live()
    health = settings_state(s.store)
    return {
        "version": __version__,
        "pid": os.getpid(),
        "uptimeSeconds": round(s.uptime(), 3),
        "settingsPath": str(s.paths.settings),
        "socketPath": str(s.paths.socket),
        "stateDir": str(s.paths.state_dir),
        "servers": counts.servers,
        "serversEnabled": counts.enabled,
        "sessions": counts.sessions,
        "conversations": live.state.conversation_count(),
        "turns": live.turns.active,
        "connections": s.connections(),
        "settingsError": health["error"],
        "settingsWarnings": health["warnings"],
        "settings": health,
    }


@group.add("daemon.shutdown")
async def shutdown(s: Services, _conn: Connection, _p: NoParams) -> dict[str, Any]:
    s.shutdown()
    return {"stopping": True}
