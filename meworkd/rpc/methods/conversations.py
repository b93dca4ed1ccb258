"""conversations.*: a conversation's server selection, approval level, preset and roots."""

from typing import Any

from mework_protocol.levels import DEFAULT_APPROVAL_LEVEL, ApprovalLevel
from mework_protocol.params import (
    CreateConversationParams,
    IdParams,
    NoParams,
    PrepareParams,
    UpdateConversationParams,
)

from meworkd.base.errors import InvalidParams, PresetNotFound, ServerNotFound
from meworkd.core.catalog import select
from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup

__all__ = ["apply_preset", "check_roots", "check_selection", "group"]

group: MethodGroup[Services, Connection] = MethodGroup()


def check_selection(s: Services, names: list[str] | None) -> None:
    """Refuse a selection naming a server the settings do not have (valid or not)."""
    if names is None:
        return
    settings = s.store.settings
    known = set(settings.servers) | set(settings.server_errors)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ServerNotFound(unknown[0])


def apply_preset(
    s: Services, name: str, servers: list[str] | None, level: ApprovalLevel | None
) -> tuple[list[str] | None, ApprovalLevel | None]:
    """A preset's selection and level, where the request does not give its own."""
    preset = s.store.settings.presets.get(name)
    if preset is None:
        raise PresetNotFound(name)
    return (list(preset.mcp_servers) if servers is None else servers), (
        level or preset.approval_level
    )


def check_roots(roots: list[str] | None) -> list[str] | None:
    """Refuse a root that is not an absolute ``file://`` URI of a directory path."""
    for uri in roots or []:
        if not uri.startswith("file:///"):
            raise InvalidParams(
                f"roots: {uri!r} is not a file:// URI (e.g. file:///home/me/project)"
            )
    return roots


@group.add("conversations.create", CreateConversationParams)
async def create(s: Services, _conn: Connection, p: CreateConversationParams) -> dict[str, Any]:
    servers, level = p.mcp_servers, p.approval_level
    if p.preset is not None:
        servers, level = apply_preset(s, p.preset, servers, level)
    check_selection(s, servers)
    conv = s.live().state.create_conversation(
        p.id, servers or [], level or DEFAULT_APPROVAL_LEVEL, p.preset, check_roots(p.roots)
    )
    return conv.as_dict()


@group.add("conversations.get", IdParams)
async def get(s: Services, _conn: Connection, p: IdParams) -> dict[str, Any]:
    return s.live().state.get_conversation(p.id).as_dict()


@group.add("conversations.list")
async def list_(s: Services, _conn: Connection, _p: NoParams) -> dict[str, Any]:
    return {"conversations": [c.as_dict() for c in s.live().state.list_conversations()]}


@group.add("conversations.update", UpdateConversationParams)
async def update(s: Services, _conn: Connection, p: UpdateConversationParams) -> dict[str, Any]:
    servers, level = p.mcp_servers, p.approval_level
    if isinstance(p.preset, str):  # switch to a preset, as conversations.create applies one
        servers, level = apply_preset(s, p.preset, servers, level)
    check_selection(s, servers)
    before = s.live().state.get_conversation(p.id).roots
    roots = check_roots(p.roots)
    conv = s.live().state.update_conversation(
        p.id, mcp_servers=servers, approval_level=level, preset=p.preset, roots=roots
    )
    if roots is not None and tuple(roots) != before:
        await s.pool.roots_changed(p.id)
    if servers is not None:
        # Sessions of servers the conversation no longer selects close once their calls end.
        pool = s.pool
        dropped = {x.server for x in pool.sessions if x.conversation == p.id} - set(servers)
        pool.retire(lambda x: x.conversation == p.id and x.server in dropped)
    return conv.as_dict()


@group.add("conversations.delete", IdParams)
async def delete(s: Services, _conn: Connection, p: IdParams) -> dict[str, Any]:
    live = s.live()
    live.state.delete_conversation(p.id)
    live.turns.end_conversation(p.id)
    s.approvals.forget_conversation(p.id)
    closed = s.pool.close_conversation(p.id)
    return {"deleted": p.id, "sessionsClosed": closed}


@group.add("conversations.prepare", PrepareParams)
async def prepare(s: Services, _conn: Connection, p: PrepareParams) -> dict[str, Any]:
    conv = s.live().state.get_conversation(p.conversation_id)
    settings = s.store.settings
    selected, failures = select(conv.mcp_servers, settings)
    connecting = s.pool.prepare(conv.id, {n: settings.servers[n] for n in selected})
    return {"conversationId": conv.id, "connecting": connecting, "failures": failures}
