"""calls.*: the calls that moved to the background (``mcp.background_after_seconds``)."""

from typing import Any

from mework_protocol.params import CallParams

from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup

__all__ = ["group"]

group: MethodGroup[Services, Connection] = MethodGroup()


@group.add("calls.result", CallParams)
async def result(s: Services, _conn: Connection, p: CallParams) -> dict[str, Any]:
    return s.turns.background.result(p.call_id)


@group.add("calls.cancel", CallParams)
async def cancel(s: Services, _conn: Connection, p: CallParams) -> dict[str, Any]:
    return {"cancelled": s.turns.background.cancel(p.call_id)}
