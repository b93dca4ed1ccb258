"""Conversations: a conversation's server selection, approval level, preset and roots, its audit.

The rules live here: a preset gives the selection and level a request leaves out; a selection
names only servers the settings have (valid or not); roots are ``file://`` URIs. A changed
selection retires the sessions of the servers dropped (once their calls end), changed roots are
told to the conversation's sessions, and deleting a conversation ends its turns, forgets what
was allowed in it and closes its sessions.
"""

from typing import Any

import msgspec
from mework_protocol.levels import DEFAULT_APPROVAL_LEVEL, ApprovalLevel

from meworkd.base.errors import InvalidParams, PresetNotFound, ServerNotFound
from meworkd.core.approvals.gate import Approvals
from meworkd.core.catalog import select
from meworkd.core.replies import Redact
from meworkd.core.state import StateDB
from meworkd.core.turns import Turns
from meworkd.mcp import SessionPool
from meworkd.settings import Settings
from meworkd.settings.store import SettingsStore

__all__ = ["Conversations", "check_roots", "check_selection", "with_preset"]

Selection = tuple[list[str] | None, ApprovalLevel | None]


def check_selection(settings: Settings, names: list[str] | None) -> None:
    """Refuse a selection naming a server the settings do not have (valid or not)."""
    if names is None:
        return
    known = set(settings.servers) | set(settings.server_errors)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ServerNotFound(unknown[0])


def with_preset(
    settings: Settings, name: str, servers: list[str] | None, level: ApprovalLevel | None
) -> Selection:
    """A preset's selection and level, where the request does not give its own."""
    preset = settings.presets.get(name)
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


class Conversations:
    def __init__(
        self,
        store: SettingsStore,
        pool: SessionPool,
        state: StateDB,
        turns: Turns,
        approvals: Approvals,
        redact: Redact = lambda value: value,
    ) -> None:
        self._redact = redact  # a server's tool name in the audit may carry a secret given to it
        self._store = store
        self._pool = pool
        self._state = state
        self._turns = turns
        self._approvals = approvals

    def _selection(self, preset: str | None, servers: list[str] | None, level: Any) -> Selection:
        settings = self._store.settings
        if preset is not None:
            servers, level = with_preset(settings, preset, servers, level)
        check_selection(settings, servers)
        return servers, level

    def create(
        self,
        conversation_id: str | None,
        *,
        preset: str | None,
        servers: list[str] | None,
        level: ApprovalLevel | None,
        roots: list[str] | None,
    ) -> dict[str, Any]:
        servers, level = self._selection(preset, servers, level)
        conversation = self._state.create_conversation(
            conversation_id,
            servers or [],
            level or DEFAULT_APPROVAL_LEVEL,
            preset,
            check_roots(roots),
        )
        return conversation.as_dict()

    def get(self, conversation_id: str) -> dict[str, Any]:
        return self._state.get_conversation(conversation_id).as_dict()

    def listing(self) -> dict[str, Any]:
        return {"conversations": [c.as_dict() for c in self._state.list_conversations()]}

    async def update(
        self,
        conversation_id: str,
        *,
        preset: str | msgspec.UnsetType | None,
        servers: list[str] | None,
        level: ApprovalLevel | None,
        roots: list[str] | None,
    ) -> dict[str, Any]:
        """Change what is given; ``preset`` a name switches to it as :meth:`create` applies one,
        None detaches the label, UNSET keeps it."""
        switch_to = preset if isinstance(preset, str) else None
        servers, level = self._selection(switch_to, servers, level)
        before = self._state.get_conversation(conversation_id).roots
        roots = check_roots(roots)
        conversation = self._state.update_conversation(
            conversation_id, mcp_servers=servers, approval_level=level, preset=preset, roots=roots
        )
        if roots is not None and tuple(roots) != before:
            await self._pool.roots_changed(conversation_id)
        if servers is not None:
            # Sessions of servers the conversation no longer selects close once their calls end.
            pool = self._pool
            mine = {x.server for x in pool.sessions if x.conversation == conversation_id}
            dropped = mine - set(servers)
            pool.retire(lambda x: x.conversation == conversation_id and x.server in dropped)
        return conversation.as_dict()

    def delete(self, conversation_id: str) -> dict[str, Any]:
        """Delete it, end its turns, forget what was allowed in it, close its sessions."""
        self._state.delete_conversation(conversation_id)
        self._turns.end_conversation(conversation_id)
        self._approvals.forget_conversation(conversation_id)
        closed = self._pool.close_conversation(conversation_id)
        return {"deleted": conversation_id, "sessionsClosed": closed}

    def prepare(self, conversation_id: str) -> dict[str, Any]:
        """Start connecting the servers it selects, before its first turn needs them."""
        conversation = self._state.get_conversation(conversation_id)
        settings = self._store.settings
        selected, failures = select(conversation.mcp_servers, settings)
        connecting = self._pool.prepare(conversation.id, {n: settings.servers[n] for n in selected})
        return {"conversationId": conversation.id, "connecting": connecting, "failures": failures}

    def audit(self, conversation_id: str | None, limit: int) -> dict[str, Any]:
        """audit.list: the audit log's last ``limit`` entries (of one conversation, when given),
        redacted for the reply; the log itself keeps the real names."""
        return {"entries": self._redact(self._state.audit(conversation_id, limit))}
