"""The method table: typed params in, plain results out; thin adapters over the core services.

Names are the contract of DESIGN.md. Params are camelCase objects; unknown params are refused so
a typo is an error rather than a silent no-op.
"""

import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import msgspec
from msgspec import Struct
from structlog.contextvars import bound_contextvars

from meworkd import __version__
from meworkd.base.errors import InvalidParams, PresetNotFound, ServerNotFound
from meworkd.base.events import TOPICS
from meworkd.core.approvals.policy import ApprovalLevel
from meworkd.core.probe import test_connection
from meworkd.rpc.dispatch import MethodTable, NoParams
from meworkd.rpc.server import Connection
from meworkd.settings import edits as registry
from meworkd.settings import masked_entry
from meworkd.settings.dialects import parse_import

if TYPE_CHECKING:
    from meworkd.app.daemon import Daemon

__all__ = ["build_methods"]


class _Params(Struct, rename="camel", forbid_unknown_fields=True):
    pass


class NameParams(_Params):
    name: str


class GetServerParams(_Params):
    name: str
    reveal: bool = False


class AddServerParams(_Params):
    name: str
    server: dict[str, Any]


class UpdateServerParams(_Params):
    name: str
    patch: dict[str, Any]


class RenameParams(_Params):
    name: str
    new_name: str


class ImportParams(_Params):
    text: str
    on_conflict: Literal["error", "replace", "skip"] = "error"


class ExportParams(_Params):
    reveal: bool = False


class ToolEnabledParams(_Params):
    name: str
    tool: str
    enabled: bool


class ToolAutoApproveParams(_Params):
    name: str
    tool: str
    auto_approve: bool


class McpOptionsParams(Struct, forbid_unknown_fields=True):
    mandatory_description_prefix: str | None = None
    session_idle_minutes: float | None = None
    max_reply_bytes: int | None = None
    approval_timeout_seconds: float | None = None


class PresetParams(_Params):
    name: str
    preset: dict[str, Any]


class LogsParams(_Params):
    name: str
    tail: int | None = None


class IdParams(_Params):
    id: str


class CreateConversationParams(_Params):
    id: str | None = None
    preset: str | None = None
    mcp_servers: list[str] | None = None
    approval_level: ApprovalLevel | None = None


class UpdateConversationParams(_Params):
    id: str
    mcp_servers: list[str] | None = None
    approval_level: ApprovalLevel | None = None
    preset: str | msgspec.UnsetType | None = msgspec.UNSET  # null: detach the preset


class BeginParams(_Params):
    conversation_id: str
    parent_turn_id: str | None = None


class CallToolParams(_Params):
    turn_id: str
    name: str
    arguments: dict[str, Any] = {}
    call_id: str | None = None


class CancelParams(_Params):
    turn_id: str
    call_id: str | None = None


class TurnParams(_Params):
    turn_id: str


class RespondParams(_Params):
    approval_id: str
    decision: Literal["allow", "deny"]
    reason: str | None = None


class AuditParams(_Params):
    conversation_id: str | None = None
    limit: int = 100


class SubscribeParams(_Params):
    topics: list[str] | None = None


def build_methods(daemon: "Daemon") -> MethodTable[Connection]:
    table: MethodTable[Connection] = MethodTable()
    store = daemon.store

    # --- daemon ----------------------------------------------------------------------------

    @table.add("daemon.status")
    async def daemon_status(_conn: Connection, _p: NoParams) -> dict[str, Any]:
        settings = store.settings
        return {
            "version": __version__,
            "pid": os.getpid(),
            "uptimeSeconds": round(daemon.uptime(), 3),
            "settingsPath": str(daemon.paths.settings),
            "socketPath": str(daemon.paths.socket),
            "stateDir": str(daemon.paths.state_dir),
            "servers": len(settings.servers),
            "serversEnabled": sum(1 for c in settings.servers.values() if c.enabled),
            "sessions": len(daemon.pool.sessions),
            "conversations": daemon.state.conversation_count(),
            "turns": daemon.turns.active,
            "connections": daemon.rpc.connections,
            "settingsError": store.unreadable,
        }

    @table.add("daemon.shutdown")
    async def daemon_shutdown(_conn: Connection, _p: NoParams) -> dict[str, Any]:
        daemon.request_shutdown()
        return {"stopping": True}

    # --- settings --------------------------------------------------------------------------

    @table.add("settings.get")
    async def settings_get(_conn: Connection, _p: NoParams) -> dict[str, Any]:
        doc = store.document()
        servers = registry.servers_of(doc)
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
        }

    @table.add("settings.reload")
    async def settings_reload(_conn: Connection, _p: NoParams) -> dict[str, Any]:
        diff = await store.reload("rpc")
        return {
            "applied": store.unreadable is None,
            "error": store.unreadable,
            **(diff.as_event() if diff is not None else {}),
        }

    @table.add("settings.setMcpOptions", McpOptionsParams)
    async def settings_set_mcp(_conn: Connection, p: McpOptionsParams) -> dict[str, Any]:
        options = {k: v for k, v in msgspec.structs.asdict(p).items() if v is not None}
        if not options:
            raise InvalidParams("give at least one option to change")
        parsed = await store.mutate(lambda doc: registry.set_mcp_options(doc, options))
        return {"mcp": msgspec.to_builtins(parsed)}

    # --- servers ---------------------------------------------------------------------------

    def describe(name: str) -> dict[str, Any]:
        settings = store.settings
        config = settings.servers.get(name)
        error = settings.server_errors.get(name)
        if config is None and error is None:
            raise ServerNotFound(name)
        out: dict[str, Any] = {"name": name}
        if config is None:
            out.update(type=None, enabled=False, status="invalid")
        else:
            out.update(
                type=config.type,
                enabled=config.enabled,
                status=(
                    "disabled"
                    if not config.enabled
                    else "connected"
                    if daemon.pool.count_for(name)
                    else "enabled"
                ),
                sessions=daemon.pool.count_for(name),
                description=config.description,
                command=config.command,
                args=list(config.args),
                url=config.url,
                timeoutSeconds=config.timeout,
                longRunning=config.long_running,
                disabledTools=list(config.disabled_tools),
                disabledAutoApproveTools=list(config.disabled_auto_approve_tools),
                serverInfo=msgspec.to_builtins(config.server_info) if config.server_info else None,
            )
        if error is not None:
            out["error"] = error
        return out

    @table.add("servers.list")
    async def servers_list(_conn: Connection, _p: NoParams) -> dict[str, Any]:
        settings = store.settings
        names = list(settings.servers) + [
            n for n in settings.server_errors if n not in settings.servers
        ]
        return {"servers": [describe(n) for n in names]}

    @table.add("servers.get", GetServerParams)
    async def servers_get(_conn: Connection, p: GetServerParams) -> dict[str, Any]:
        out = describe(p.name)
        raw = registry.servers_of(store.document()).get(p.name)
        if isinstance(raw, dict):
            out["server"] = raw if p.reveal else masked_entry(raw)
        return out

    @table.add("servers.add", AddServerParams)
    async def servers_add(_conn: Connection, p: AddServerParams) -> dict[str, Any]:
        await store.mutate(lambda doc: registry.add_server(doc, p.name, p.server))
        return describe(p.name)

    @table.add("servers.update", UpdateServerParams)
    async def servers_update(_conn: Connection, p: UpdateServerParams) -> dict[str, Any]:
        await store.mutate(lambda doc: registry.update_server(doc, p.name, p.patch))
        return describe(p.name)

    @table.add("servers.remove", NameParams)
    async def servers_remove(_conn: Connection, p: NameParams) -> dict[str, Any]:
        await store.mutate(lambda doc: registry.remove_server(doc, p.name))
        daemon.logs.forget(p.name)
        touched = daemon.state.replace_server_in_selections(p.name, None)
        return {"removed": p.name, "conversationsUpdated": touched}

    @table.add("servers.rename", RenameParams)
    async def servers_rename(_conn: Connection, p: RenameParams) -> dict[str, Any]:
        await store.mutate(lambda doc: registry.rename_server(doc, p.name, p.new_name))
        daemon.logs.rename(p.name, p.new_name)
        touched = daemon.state.replace_server_in_selections(p.name, p.new_name)
        return {**describe(p.new_name), "conversationsUpdated": touched}

    @table.add("servers.import", ImportParams)
    async def servers_import(_conn: Connection, p: ImportParams) -> dict[str, Any]:
        parsed = parse_import(p.text)
        report = await store.mutate(
            lambda doc: registry.import_servers(doc, parsed.entries, p.on_conflict)
        )
        report["rejected"] = parsed.rejected + report["rejected"]
        return {"format": parsed.format, "duplicates": parsed.duplicates, **report}

    @table.add("servers.export", ExportParams)
    async def servers_export(_conn: Connection, p: ExportParams) -> dict[str, Any]:
        servers = registry.servers_of(store.document())
        if not p.reveal:
            servers = {n: masked_entry(e) if isinstance(e, dict) else e for n, e in servers.items()}
        return {"mcpServers": servers}

    @table.add("servers.setToolEnabled", ToolEnabledParams)
    async def servers_set_tool_enabled(_conn: Connection, p: ToolEnabledParams) -> dict[str, Any]:
        disabled = await store.mutate(
            lambda doc: registry.set_tool_flag(
                doc, p.name, p.tool, key="disabledTools", on=not p.enabled
            )
        )
        return {"name": p.name, "tool": p.tool, "enabled": p.enabled, "disabledTools": disabled}

    @table.add("servers.setToolAutoApprove", ToolAutoApproveParams)
    async def servers_set_tool_auto_approve(
        _conn: Connection, p: ToolAutoApproveParams
    ) -> dict[str, Any]:
        disabled = await store.mutate(
            lambda doc: registry.set_tool_flag(
                doc, p.name, p.tool, key="disabledAutoApproveTools", on=not p.auto_approve
            )
        )
        return {
            "name": p.name,
            "tool": p.tool,
            "autoApprove": p.auto_approve,
            "disabledAutoApproveTools": disabled,
        }

    @table.add("servers.test", NameParams)
    async def servers_test(_conn: Connection, p: NameParams) -> dict[str, Any]:
        if (config := store.settings.servers.get(p.name)) is None:
            raise ServerNotFound(p.name)
        result = await test_connection(daemon.pool, p.name, config)
        # Server-sourced text may quote a secret: redacted for the reply and for the settings
        # file alike (the recorded serverInfo shows in servers.list).
        redacted: dict[str, Any] = daemon.redactor.redact_value(result)  # type: ignore[assignment]
        if redacted["ok"]:
            info = redacted["serverInfo"]
            await store.mutate(lambda doc: registry.record_server_info(doc, p.name, info))
        return redacted

    @table.add("servers.logs", LogsParams)
    async def servers_logs(_conn: Connection, p: LogsParams) -> dict[str, Any]:
        if p.name not in store.settings.servers and p.name not in store.settings.server_errors:
            raise ServerNotFound(p.name)
        ring = daemon.logs.ring(p.name)
        return {
            "name": p.name,
            "lines": [
                {"time": datetime.fromtimestamp(t, UTC).isoformat(), "line": line}
                for t, line in ring.tail(p.tail)
            ],
            "dropped": ring.dropped,
        }

    # --- presets ---------------------------------------------------------------------------

    @table.add("presets.list")
    async def presets_list(_conn: Connection, _p: NoParams) -> dict[str, Any]:
        return {
            "presets": [
                {"name": n, **msgspec.to_builtins(p)} for n, p in store.settings.presets.items()
            ]
        }

    @table.add("presets.set", PresetParams)
    async def presets_set(_conn: Connection, p: PresetParams) -> dict[str, Any]:
        await store.mutate(lambda doc: registry.set_preset(doc, p.name, p.preset))
        return {"name": p.name, **msgspec.to_builtins(store.settings.presets[p.name])}

    @table.add("presets.remove", NameParams)
    async def presets_remove(_conn: Connection, p: NameParams) -> dict[str, Any]:
        await store.mutate(lambda doc: registry.remove_preset(doc, p.name))
        return {"removed": p.name}

    # --- conversations ---------------------------------------------------------------------

    def check_selection(names: list[str] | None) -> None:
        if names is None:
            return
        known = set(store.settings.servers) | set(store.settings.server_errors)
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ServerNotFound(unknown[0])

    def apply_preset(
        name: str, servers: list[str] | None, level: ApprovalLevel | None
    ) -> tuple[list[str] | None, ApprovalLevel | None]:
        """A preset's selection and level, where the request does not give its own."""
        preset = store.settings.presets.get(name)
        if preset is None:
            raise PresetNotFound(name)
        return (list(preset.mcp_servers) if servers is None else servers), (
            level or preset.approval_level
        )

    @table.add("conversations.create", CreateConversationParams)
    async def conversations_create(
        _conn: Connection, p: CreateConversationParams
    ) -> dict[str, Any]:
        servers, level = p.mcp_servers, p.approval_level
        if p.preset is not None:
            servers, level = apply_preset(p.preset, servers, level)
        check_selection(servers)
        conv = daemon.state.create_conversation(
            p.id, servers or [], level or "request_approval", p.preset
        )
        return conv.as_dict()

    @table.add("conversations.get", IdParams)
    async def conversations_get(_conn: Connection, p: IdParams) -> dict[str, Any]:
        return daemon.state.get_conversation(p.id).as_dict()

    @table.add("conversations.list")
    async def conversations_list(_conn: Connection, _p: NoParams) -> dict[str, Any]:
        return {"conversations": [c.as_dict() for c in daemon.state.list_conversations()]}

    @table.add("conversations.update", UpdateConversationParams)
    async def conversations_update(
        _conn: Connection, p: UpdateConversationParams
    ) -> dict[str, Any]:
        servers, level = p.mcp_servers, p.approval_level
        if isinstance(p.preset, str):  # switch to a preset, as conversations.create applies one
            servers, level = apply_preset(p.preset, servers, level)
        check_selection(servers)
        conv = daemon.state.update_conversation(
            p.id, mcp_servers=servers, approval_level=level, preset=p.preset
        )
        if servers is not None:
            dropped = {s.server for s in daemon.pool.sessions if s.conversation == p.id} - set(
                servers
            )
            daemon.pool.retire(lambda s: s.conversation == p.id and s.server in dropped)
        return conv.as_dict()

    @table.add("conversations.delete", IdParams)
    async def conversations_delete(_conn: Connection, p: IdParams) -> dict[str, Any]:
        daemon.state.delete_conversation(p.id)
        daemon.turns.end_conversation(p.id)
        closed = daemon.pool.close_conversation(p.id)
        return {"deleted": p.id, "sessionsClosed": closed}

    # --- turns -----------------------------------------------------------------------------

    @table.add("turns.begin", BeginParams)
    async def turns_begin(_conn: Connection, p: BeginParams) -> dict[str, Any]:
        result = await daemon.turns.begin(p.conversation_id, p.parent_turn_id)
        # Failure reasons and tool descriptions come from servers and may quote a secret.
        return daemon.redactor.redact_value(result)  # type: ignore[return-value]

    @table.add("turns.callTool", CallToolParams)
    async def turns_call_tool(_conn: Connection, p: CallToolParams) -> msgspec.Raw:
        with bound_contextvars(turn=p.turn_id):
            return await daemon.turns.call_tool(p.turn_id, p.name, p.arguments, p.call_id)

    @table.add("turns.cancel", CancelParams)
    async def turns_cancel(_conn: Connection, p: CancelParams) -> dict[str, Any]:
        return {"cancelled": daemon.turns.cancel(p.turn_id, p.call_id)}

    @table.add("turns.end", TurnParams)
    async def turns_end(_conn: Connection, p: TurnParams) -> dict[str, Any]:
        daemon.turns.end(p.turn_id)
        return {"ended": p.turn_id}

    # --- approvals -------------------------------------------------------------------------

    @table.add("approvals.list")
    async def approvals_list(_conn: Connection, _p: NoParams) -> dict[str, Any]:
        return {"approvals": daemon.approvals.list()}

    @table.add("approvals.respond", RespondParams)
    async def approvals_respond(_conn: Connection, p: RespondParams) -> dict[str, Any]:
        return daemon.approvals.respond(p.approval_id, p.decision, p.reason)

    @table.add("audit.list", AuditParams)
    async def audit_list(_conn: Connection, p: AuditParams) -> dict[str, Any]:
        return {"entries": daemon.state.audit(p.conversation_id, p.limit)}

    # --- events ----------------------------------------------------------------------------

    @table.add("events.subscribe", SubscribeParams)
    async def events_subscribe(conn: Connection, p: SubscribeParams) -> dict[str, Any]:
        if p.topics is not None:
            unknown = sorted(set(p.topics) - TOPICS)
            if unknown:
                raise InvalidParams(f"unknown topics: {', '.join(unknown)}", topics=sorted(TOPICS))
        conn.subscribe(p.topics)
        return {"topics": sorted(TOPICS if p.topics is None else p.topics)}

    return table
