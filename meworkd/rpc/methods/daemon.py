"""daemon.*: the daemon's status and its shutdown."""

from typing import Any

from mework_protocol.params import NoParams

from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup

__all__ = ["group"]

group: MethodGroup[Services, Connection] = MethodGroup()


@group.add("daemon.status")
async def status(s: Services, conn: Connection, _p: NoParams) -> dict[str, Any]:
    # The control socket's own figure (meworkd.rpc.holdings) beside the core's.
    return {**s.daemon.status(), "rpcMemory": conn.account.daemon_wide()}


@group.add("daemon.shutdown")
async def shutdown(s: Services, _conn: Connection, _p: NoParams) -> dict[str, Any]:
    s.daemon.request_shutdown()
    return {"stopping": True}
