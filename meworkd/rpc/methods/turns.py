"""turns.*: a model turn's tools, its tool calls, cancelling them, ending it."""

from typing import Any

import msgspec
from mework_protocol.params import (
    BeginParams,
    CallToolParams,
    CancelParams,
    ListTurnsParams,
    TurnParams,
)
from structlog.contextvars import bind_contextvars, reset_contextvars

from meworkd.core.toolcall import new_call_id
from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup

__all__ = ["group"]

group: MethodGroup[Services, Connection] = MethodGroup()


@group.add("turns.begin", BeginParams)
async def begin(s: Services, _conn: Connection, p: BeginParams) -> dict[str, Any]:
    return await s.turns.begin(p.conversation_id, p.parent_turn_id)


@group.add("turns.callTool", CallToolParams)
async def call_tool(s: Services, conn: Connection, p: CallToolParams) -> msgspec.Raw:
    # The reply's bytes as Turns encoded them once (and redacted, when secrets are configured).
    # Tokens, not bound_contextvars: that one copies the whole context first (bench B1).
    tokens = bind_contextvars(turn=p.turn_id)
    turns = s.turns
    call_id = p.call_id or new_call_id()  # named here, so that a hang-up can name it
    try:
        with conn.while_open(lambda: turns.caller_gone(p.turn_id, call_id)):
            return await turns.call_tool(p.turn_id, p.name, p.arguments, call_id)
    finally:
        reset_contextvars(**tokens)


@group.add("turns.cancel", CancelParams)
async def cancel(s: Services, _conn: Connection, p: CancelParams) -> dict[str, Any]:
    return {"cancelled": s.turns.cancel(p.turn_id, p.call_id)}


@group.add("turns.list", ListTurnsParams)
async def list_(s: Services, _conn: Connection, p: ListTurnsParams) -> dict[str, Any]:
    return {"turns": s.turns.listing(p.conversation_id)}


@group.add("turns.end", TurnParams)
async def end(s: Services, _conn: Connection, p: TurnParams) -> dict[str, Any]:
    s.turns.end(p.turn_id)
    return {"ended": p.turn_id}
