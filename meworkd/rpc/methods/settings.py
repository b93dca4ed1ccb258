"""settings.*: the settings document as stored, a reload, the mcp.* options."""

from typing import Any

import msgspec
from mework_protocol.params import McpOptionsParams, NoParams

from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup

__all__ = ["group"]

group: MethodGroup[Services, Connection] = MethodGroup()


@group.add("settings.get")
async def get(s: Services, _conn: Connection, _p: NoParams) -> dict[str, Any]:
    return s.settings.get()


@group.add("settings.reload")
async def reload(s: Services, _conn: Connection, _p: NoParams) -> dict[str, Any]:
    return await s.settings.reload()


@group.add("settings.setMcpOptions", McpOptionsParams)
async def set_mcp_options(s: Services, _conn: Connection, p: McpOptionsParams) -> dict[str, Any]:
    return await s.settings.set_mcp_options(msgspec.structs.asdict(p))
