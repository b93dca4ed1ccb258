"""apps.*: a tool's MCP Apps view, and what the view asks, relayed by the frontend showing it."""

from typing import Any

import msgspec
from mework_protocol.params import (
    ViewCallToolParams,
    ViewContextParams,
    ViewLinkParams,
    ViewMessageParams,
    ViewOpenParams,
    ViewReadParams,
)

from meworkd.base.errors import InvalidParams
from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup

__all__ = ["group"]

group: MethodGroup[Services, Connection] = MethodGroup()


@group.add("apps.view", ViewOpenParams)
async def view(s: Services, _conn: Connection, p: ViewOpenParams) -> dict[str, Any]:
    if p.call_id is not None:
        return await s.apps.view(p.call_id, p.turn_id)
    if p.conversation_id and p.server and p.resource_uri:
        return await s.apps.view_ahead(p.conversation_id, p.server, p.resource_uri)
    raise InvalidParams("give callId, or conversationId, server and resourceUri", field="callId")


@group.add("apps.callTool", ViewCallToolParams)
async def call_tool(s: Services, _conn: Connection, p: ViewCallToolParams) -> msgspec.Raw:
    if not p.server or not p.name:
        raise InvalidParams(
            "server and name are required", field="server" if not p.server else "name"
        )
    return await s.apps.call_tool(p.call_id, p.turn_id, p.server, p.name, p.arguments)


@group.add("apps.readResource", ViewReadParams)
async def read_resource(s: Services, _conn: Connection, p: ViewReadParams) -> dict[str, Any]:
    if not p.uri:
        raise InvalidParams("uri is required", field="uri")
    return await s.apps.read_resource(p.call_id, p.turn_id, p.uri)


@group.add("apps.message", ViewMessageParams)
async def message(s: Services, _conn: Connection, p: ViewMessageParams) -> dict[str, Any]:
    if p.role != "user":
        raise InvalidParams('a view\'s message has role "user"', field="role")
    return s.apps.message(p.call_id, p.turn_id, "message", {"content": p.content})


@group.add("apps.updateContext", ViewContextParams)
async def update_context(s: Services, _conn: Connection, p: ViewContextParams) -> dict[str, Any]:
    params = {"content": p.content, "structuredContent": p.structured_content}
    return s.apps.message(p.call_id, p.turn_id, "context", params)


@group.add("apps.openLink", ViewLinkParams)
async def open_link(s: Services, _conn: Connection, p: ViewLinkParams) -> dict[str, Any]:
    return s.apps.message(p.call_id, p.turn_id, "openLink", {"url": p.url})
