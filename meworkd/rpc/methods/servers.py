"""servers.*: the configured MCP servers: describe, edit, import and export them.

servers.test and servers.logs, which ask the running servers, are in :mod:`.probe`.
"""

import os
from typing import Any

import msgspec
from mework_protocol import params

from meworkd.base.errors import ServerNotFound
from meworkd.core.health import settings_state
from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup
from meworkd.settings import edits, mask_value, masked_entry
from meworkd.settings.dialects import parse_import
from meworkd.settings.entry_text import entry_from_text
from meworkd.settings.lookup import command_warnings

__all__ = ["describe", "group"]

group: MethodGroup[Services, Connection] = MethodGroup()


def describe(s: Services, name: str) -> dict[str, Any]:
    """One server as servers.list shows it (an entry the settings refused shows as invalid)."""
    settings = s.store.settings
    config = settings.servers.get(name)
    error = settings.server_errors.get(name)
    if config is None and error is None:
        raise ServerNotFound(name)
    out: dict[str, Any] = {"name": name}
    if config is None:
        out.update(type=None, enabled=False, status="invalid")
    else:
        sessions = s.pool.count_for(name)
        out.update(
            type=config.type,
            enabled=config.enabled,
            status="disabled" if not config.enabled else "connected" if sessions else "enabled",
            sessions=sessions,
            description=config.description,
            command=config.command,
            args=list(config.args),
            url=None if config.url is None else mask_value("url", "url", config.url),
            timeoutSeconds=config.timeout,
            longRunning=config.long_running,
            disabledTools=list(config.disabled_tools),
            disabledAutoApproveTools=list(config.disabled_auto_approve_tools),
            serverInfo=msgspec.to_builtins(config.server_info) if config.server_info else None,
        )
        if (auth := s.auth.status(name, config)) is not None:
            out["auth"] = auth  # OAuth state, scopes, expiry; never a token
    # Its latest failure to connect or list (any conversation) until it connects again.
    out["lastError"] = s.redactor.redact_value(s.pool.status.last_error(name))
    if error is not None:
        out["error"] = error
    return out


@group.add("servers.list")
async def list_(s: Services, _conn: Connection, _p: params.NoParams) -> dict[str, Any]:
    settings = s.store.settings
    names = list(settings.servers) + [
        n for n in settings.server_errors if n not in settings.servers
    ]
    return {"servers": [describe(s, n) for n in names], "settings": settings_state(s.store)}


@group.add("servers.get", params.GetServerParams)
async def get(s: Services, _conn: Connection, p: params.GetServerParams) -> dict[str, Any]:
    out = describe(s, p.name)
    out["settings"] = settings_state(s.store)
    raw = edits.servers_of(s.store.document()).get(p.name)
    if isinstance(raw, dict):
        out["server"] = raw if p.reveal else masked_entry(raw)
    return out


@group.add("servers.add", params.AddServerParams)
async def add(s: Services, _conn: Connection, p: params.AddServerParams) -> dict[str, Any]:
    await s.store.mutate(lambda doc: edits.add_server(doc, p.name, p.server))
    out = describe(s, p.name)
    # Said now, not when a conversation first uses it: a command meworkd will not find.
    if (config := s.store.settings.servers.get(p.name)) is not None:
        out["warnings"] = command_warnings(config, os.environ)
    return out


@group.add("servers.update", params.UpdateServerParams)
async def update(s: Services, _conn: Connection, p: params.UpdateServerParams) -> dict[str, Any]:
    await s.store.mutate(lambda doc: edits.update_server(doc, p.name, p.patch))
    return describe(s, p.name)


@group.add("servers.replace", params.ReplaceServerParams)
async def replace(s: Services, _conn: Connection, p: params.ReplaceServerParams) -> dict[str, Any]:
    entry = entry_from_text(p.text)
    stored = await s.store.mutate(lambda doc: edits.replace_server(doc, p.name, entry))
    return {**describe(s, p.name), "server": masked_entry(stored)}


@group.add("servers.remove", params.NameParams)
async def remove(s: Services, _conn: Connection, p: params.NameParams) -> dict[str, Any]:
    config = s.store.settings.servers.get(p.name)
    await s.store.mutate(lambda doc: edits.remove_server(doc, p.name))
    if config is not None:  # its stored OAuth login and registration go too (issue 16)
        await s.auth.forget(p.name, config, s.store.settings.servers)
    s.logs.forget(p.name)
    s.inventory.forget(p.name)
    touched = s.live().state.replace_server_in_selections(p.name, None)
    return {"removed": p.name, "conversationsUpdated": touched}


@group.add("servers.closeSessions", params.NameParams)
async def close_sessions(s: Services, _conn: Connection, p: params.NameParams) -> dict[str, Any]:
    describe(s, p.name)  # server_not_found for a name the settings do not know
    # Not forced: a call in flight finishes on its session; the next use dials a fresh one.
    closed = s.pool.retire(lambda session: session.server == p.name)
    return {"name": p.name, "sessionsClosed": closed}


@group.add("servers.rename", params.RenameParams)
async def rename(s: Services, _conn: Connection, p: params.RenameParams) -> dict[str, Any]:
    await s.store.mutate(lambda doc: edits.rename_server(doc, p.name, p.new_name))
    s.logs.rename(p.name, p.new_name)
    s.inventory.rename(p.name, p.new_name)
    touched = s.live().state.replace_server_in_selections(p.name, p.new_name)
    return {**describe(s, p.new_name), "conversationsUpdated": touched}


@group.add("servers.import", params.ImportParams)
async def import_(s: Services, _conn: Connection, p: params.ImportParams) -> dict[str, Any]:
    parsed = parse_import(p.text, p.inputs)

    def apply(doc: dict[str, Any]) -> dict[str, list[Any]]:
        return edits.import_servers(doc, parsed.entries, p.on_conflict)

    # A dry run applies the import to a copy: the result says what would happen, nothing is written.
    report = apply(s.store.document()) if p.dry_run else await s.store.mutate(apply)
    report["rejected"] = parsed.rejected + report["rejected"]
    rejected = {r["name"] for r in report["rejected"]}
    return {
        "format": parsed.format,
        "dryRun": p.dry_run,
        "duplicates": parsed.duplicates,
        **report,
        "warnings": [w for w in parsed.warnings if w["name"] not in rejected],
        "needsInputs": parsed.needs_inputs,
    }


@group.add("servers.export", params.ExportParams)
async def export(s: Services, _conn: Connection, p: params.ExportParams) -> dict[str, Any]:
    servers = edits.servers_of(s.store.document())
    if not p.reveal:
        servers = {n: masked_entry(e) if isinstance(e, dict) else e for n, e in servers.items()}
    return {"mcpServers": servers}


@group.add("servers.setToolEnabled", params.ToolEnabledParams)
async def set_tool_enabled(
    s: Services, _conn: Connection, p: params.ToolEnabledParams
) -> dict[str, Any]:
    disabled = await s.store.mutate(
        lambda doc: edits.set_tool_flag(doc, p.name, p.tool, key="disabledTools", on=not p.enabled)
    )
    return {"name": p.name, "tool": p.tool, "enabled": p.enabled, "disabledTools": disabled}


@group.add("servers.setToolAutoApprove", params.ToolAutoApproveParams)
async def set_tool_auto_approve(
    s: Services, _conn: Connection, p: params.ToolAutoApproveParams
) -> dict[str, Any]:
    disabled = await s.store.mutate(
        lambda doc: edits.set_tool_flag(
            doc, p.name, p.tool, key="disabledAutoApproveTools", on=not p.auto_approve
        )
    )
    return {
        "name": p.name,
        "tool": p.tool,
        "autoApprove": p.auto_approve,
        "disabledAutoApproveTools": disabled,
    }
