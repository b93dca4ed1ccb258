"""servers.*: the configured MCP servers: describe, edit, import and export them.

servers.test, servers.logs and the detail page's inspection are in :mod:`.probe`; login and
logout in :mod:`.auth`. Every handler is one call of :class:`meworkd.core.servers.Servers`.
"""

from typing import Any

from mework_protocol import params

from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup

__all__ = ["group"]

group: MethodGroup[Services, Connection] = MethodGroup()


@group.add("servers.list")
async def list_(s: Services, _conn: Connection, _p: params.NoParams) -> dict[str, Any]:
    return s.servers.listing()


@group.add("servers.get", params.GetServerParams)
async def get(s: Services, _conn: Connection, p: params.GetServerParams) -> dict[str, Any]:
    return s.servers.get(p.name, reveal=p.reveal)


@group.add("servers.add", params.AddServerParams)
async def add(s: Services, _conn: Connection, p: params.AddServerParams) -> dict[str, Any]:
    return await s.servers.add(p.name, p.server)


@group.add("servers.update", params.UpdateServerParams)
async def update(s: Services, _conn: Connection, p: params.UpdateServerParams) -> dict[str, Any]:
    return await s.servers.update(p.name, p.patch)


@group.add("servers.replace", params.ReplaceServerParams)
async def replace(s: Services, _conn: Connection, p: params.ReplaceServerParams) -> dict[str, Any]:
    return await s.servers.replace(p.name, p.text)


@group.add("servers.remove", params.NameParams)
async def remove(s: Services, _conn: Connection, p: params.NameParams) -> dict[str, Any]:
    return await s.servers.remove(p.name)


@group.add("servers.closeSessions", params.NameParams)
async def close_sessions(s: Services, _conn: Connection, p: params.NameParams) -> dict[str, Any]:
    return s.servers.close_sessions(p.name)


@group.add("servers.rename", params.RenameParams)
async def rename(s: Services, _conn: Connection, p: params.RenameParams) -> dict[str, Any]:
    return await s.servers.rename(p.name, p.new_name)


@group.add("servers.import", params.ImportParams)
async def import_(s: Services, _conn: Connection, p: params.ImportParams) -> dict[str, Any]:
    return await s.servers.import_(p.text, p.inputs, p.on_conflict, dry_run=p.dry_run)


@group.add("servers.export", params.ExportParams)
async def export(s: Services, _conn: Connection, p: params.ExportParams) -> dict[str, Any]:
    return s.servers.export(reveal=p.reveal)


@group.add("servers.setToolEnabled", params.ToolEnabledParams)
async def set_tool_enabled(
    s: Services, _conn: Connection, p: params.ToolEnabledParams
) -> dict[str, Any]:
    return await s.servers.set_tool_enabled(p.name, p.tool, enabled=p.enabled)


@group.add("servers.setToolAutoApprove", params.ToolAutoApproveParams)
async def set_tool_auto_approve(
    s: Services, _conn: Connection, p: params.ToolAutoApproveParams
) -> dict[str, Any]:
    return await s.servers.set_tool_auto_approve(p.name, p.tool, auto_approve=p.auto_approve)
