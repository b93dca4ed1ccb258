"""settings.*: the settings document as stored, a reload, the mcp.* options."""

from typing import Any

import msgspec
from mework_protocol.params import McpOptionsParams, NoParams

from meworkd.base.errors import InvalidParams
from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup
from meworkd.settings import edits, masked_entry, safety

__all__ = ["group"]

group: MethodGroup[Services, Connection] = MethodGroup()


@group.add("settings.get")
async def get(s: Services, _conn: Connection, _p: NoParams) -> dict[str, Any]:
    store = s.store
    doc = store.document()
    servers = edits.servers_of(doc)
    for name, entry in servers.items():
        if isinstance(entry, dict):
            servers[name] = masked_entry(entry)
    return {
        "path": str(store.path),
        "document": doc,
        "mcp": msgspec.to_builtins(store.settings.mcp),
        "errors": list(store.settings.errors),
        "serverErrors": dict(store.settings.server_errors),
        "unreadable": store.unreadable,
        "warnings": list(safety.inspect(store.path).warnings),
    }


@group.add("settings.reload")
async def reload(s: Services, _conn: Connection, _p: NoParams) -> dict[str, Any]:
    diff = await s.store.reload("rpc")
    return {
        "applied": s.store.unreadable is None,
        "error": s.store.unreadable,
        **(diff.as_event() if diff is not None else {}),
    }


@group.add("settings.setMcpOptions", McpOptionsParams)
async def set_mcp_options(s: Services, _conn: Connection, p: McpOptionsParams) -> dict[str, Any]:
    options = {k: v for k, v in msgspec.structs.asdict(p).items() if v is not None}
    if not options:
        raise InvalidParams("give at least one option to change")
    parsed = await s.store.mutate(lambda doc: edits.set_mcp_options(doc, options))
    return {"mcp": msgspec.to_builtins(parsed)}
