"""conversations.*: a conversation's server selection, approval level, preset and roots.

The rules (presets, checking a selection and roots, what a change or a delete closes) are
:class:`meworkd.core.conversations.Conversations`'.
"""

from typing import Any

from mework_protocol.params import (
    CreateConversationParams,
    IdParams,
    NoParams,
    PrepareParams,
    UpdateConversationParams,
)

from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup

__all__ = ["group"]

group: MethodGroup[Services, Connection] = MethodGroup()


@group.add("conversations.create", CreateConversationParams)
async def create(s: Services, _conn: Connection, p: CreateConversationParams) -> dict[str, Any]:
    return s.conversations.create(
        p.id, preset=p.preset, servers=p.mcp_servers, level=p.approval_level, roots=p.roots
    )


@group.add("conversations.get", IdParams)
async def get(s: Services, _conn: Connection, p: IdParams) -> dict[str, Any]:
    return s.conversations.get(p.id)


@group.add("conversations.list")
async def list_(s: Services, _conn: Connection, _p: NoParams) -> dict[str, Any]:
    return s.conversations.listing()


@group.add("conversations.update", UpdateConversationParams)
async def update(s: Services, _conn: Connection, p: UpdateConversationParams) -> dict[str, Any]:
    return await s.conversations.update(
        p.id, preset=p.preset, servers=p.mcp_servers, level=p.approval_level, roots=p.roots
    )


@group.add("conversations.delete", IdParams)
async def delete(s: Services, _conn: Connection, p: IdParams) -> dict[str, Any]:
    return s.conversations.delete(p.id)


@group.add("conversations.prepare", PrepareParams)
async def prepare(s: Services, _conn: Connection, p: PrepareParams) -> dict[str, Any]:
    return s.conversations.prepare(p.conversation_id)
