"""tasks.*: the MCP tasks of calls, known by their call ids (:mod:`meworkd.core.tasks`)."""

from typing import Any

from mework_protocol.params import ListTasksParams, TaskParams

from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup

__all__ = ["group"]

group: MethodGroup[Services, Connection] = MethodGroup()


@group.add("tasks.list", ListTasksParams)
async def listing(s: Services, _conn: Connection, p: ListTasksParams) -> dict[str, Any]:
    return {"tasks": s.turns.tasks.listing(p.conversation_id, p.open_only)}


@group.add("tasks.get", TaskParams)
async def get(s: Services, _conn: Connection, p: TaskParams) -> dict[str, Any]:
    return s.turns.tasks.get(p.call_id)


@group.add("tasks.cancel", TaskParams)
async def cancel(s: Services, _conn: Connection, p: TaskParams) -> dict[str, Any]:
    return {"cancelled": s.turns.tasks.cancel(p.call_id)}
