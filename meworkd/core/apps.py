"""MCP Apps, the host's side: a call's view, and what the view asks of its host.

meworkd plays the spec's AppBridge for every frontend: a frontend renders the view (sandboxed,
as the spec requires) and relays the view's requests here. Each request names the call whose
view asks (``turnId``, ``callId``); the conversation and the server come from that call, never
from the frontend, so a view cannot reach another conversation or another server. A view's
tool call takes the model's path (approvals, the policy of now, the audit, with origin
``"app"``); its chat messages, context updates and links become events for the conversation's
frontends (meworkd opens no link). Each view has at most :data:`MAX_VIEW_REQUESTS` requests
in flight, like a server's questions.
"""

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import msgspec
from mework_protocol import codes

from meworkd.base import telemetry
from meworkd.base.errors import MeworkError
from meworkd.base.events import EventBus
from meworkd.base.log import get_logger
from meworkd.core.approvals.policy import DecidedBy, requires_user_interaction
from meworkd.core.callrecord import CallRecord
from meworkd.core.catalog import Binding, tool_name
from meworkd.core.inspect import Inventory
from meworkd.core.replies import Redact, arguments_digest
from meworkd.core.state import StateDB
from meworkd.core.toolcall import ToolCall, new_call_id
from meworkd.core.toolsearch import no_offer
from meworkd.core.turns import Turn, Turns
from meworkd.core.viewcalls import ViewCall
from meworkd.core.viewcheck import (
    check_link,
    check_view,
    check_view_uri,
    content_blocks,
    structured,
)
from meworkd.core.viewref import view_ref
from meworkd.mcp import SessionPool, list_tools, read_raw
from meworkd.settings import ServerConfig
from meworkd.settings.store import SettingsStore

__all__ = ["MAX_VIEW_REQUESTS", "Apps", "AppsOff", "TooManyViewRequests", "ViewCallRefused"]

MAX_VIEW_REQUESTS = 8  # one view's requests in flight at once (as a session's questions)
log = get_logger("meworkd.apps")


class AppsOff(MeworkError):
    kind: ClassVar[str] = "apps_off"
    code: ClassVar[int] = codes.PERMISSION_DENIED

    def __init__(self) -> None:
        super().__init__("MCP Apps are turned off in meworkd (mcp.apps)")


class ViewCallRefused(MeworkError):
    """A view's tool call meworkd refuses outright (nothing reaches the server, nobody is
    asked): another server's tool, a tool not visible to views, a tool the server lacks."""

    kind: ClassVar[str] = "view_call_refused"
    code: ClassVar[int] = codes.PERMISSION_DENIED


class TooManyViewRequests(MeworkError):
    kind: ClassVar[str] = "too_many_view_requests"
    code: ClassVar[int] = codes.RESOURCE_EXHAUSTED


class Apps:
    """The ``apps.*`` methods' façade."""

    def __init__(
        self,
        store: SettingsStore,
        pool: SessionPool,
        db: StateDB,
        bus: EventBus,
        turns: Turns,
        redact: Redact,
        inventory: Inventory | None = None,
    ) -> None:
        self._store = store
        self._pool = pool
        self._db = db
        self._bus = bus
        self._turns = turns
        self._redact = redact
        self._inventory = inventory or Inventory()  # the tools' definitions, for the view
        self._busy: Counter[tuple[str, str]] = Counter()

    # --- lookups -------------------------------------------------------------------------

    def _find(self, call_id: str, turn_id: str | None) -> ViewCall:
        if not self._store.settings.mcp.apps:
            raise AppsOff
        found = self._turns.views.find(call_id, turn_id)
        self._db.get_conversation(found.call.conversation_id)  # deleted: ConversationNotFound
        return found

    def _config(self, found: ViewCall) -> ServerConfig:
        """The view's server's entry, while it is enabled and its conversation selects it."""
        server = found.call.server
        config = self._store.settings.servers.get(server)
        selection = self._db.get_conversation(found.call.conversation_id).mcp_servers
        if config is None or not config.enabled or server not in selection:
            raise ViewCallRefused(
                f"the view's server {server} is removed, disabled or no longer selected in its "
                "conversation",
                reason="server_gone",
            )
        return config

    @contextmanager
    def _slot(self, found: ViewCall | tuple[str, str]) -> Iterator[None]:
        """One of a view's (or a view read ahead's) requests in flight, within the bound."""
        key = (found.call.turn_id, found.call.call_id) if isinstance(found, ViewCall) else found
        if self._busy[key] >= MAX_VIEW_REQUESTS:
            log.warning("apps.too_many_requests", view=key)
            raise TooManyViewRequests(
                f"the view already has {MAX_VIEW_REQUESTS} requests in flight; wait for them"
            )
        self._busy[key] += 1
        try:
            yield
        finally:
            self._busy[key] -= 1
            if not self._busy[key]:
                del self._busy[key]

    # --- the view itself -----------------------------------------------------------------

    async def view(self, call_id: str, turn_id: str | None) -> dict[str, Any]:
        """The call's view, with the call's arguments and result (apps.view)."""
        found = self._find(call_id, turn_id)
        call = found.call
        uri = check_view_uri(call.server, found.view.resource_uri)
        config = self._config(found)
        with self._slot(found):
            reply = await self._pool.using(
                call.conversation_id, call.server, config, read_raw(uri), within=config.timeout
            )
        view = check_view(call.server, uri, reply)
        for warning in view["warnings"]:
            log.warning("apps.view_csp", server=call.server, uri=uri, warning=warning)
        out = {
            **call.wire(),
            "resourceUri": uri,
            "visibility": list(found.view.visibility),
            **view,
            "toolDefinition": self._definition(call.server, call.tool),
            "toolInput": {"arguments": found.arguments},
            "toolResult": found.result,
        }
        return self._redact(out)  # type: ignore[return-value]

    async def view_ahead(self, conversation_id: str, server: str, uri: str) -> dict[str, Any]:
        """A view read without a call (to show or cache it ahead): no input, no result, and,
        having no call, nothing it could call back through."""
        if not self._store.settings.mcp.apps:
            raise AppsOff
        conversation = self._db.get_conversation(conversation_id)
        config = self._store.settings.servers.get(server)
        if config is None or not config.enabled or server not in conversation.mcp_servers:
            raise ViewCallRefused(
                f"{server} is not an enabled server of this conversation", reason="other_server"
            )
        check_view_uri(server, uri)
        with self._slot((conversation_id, uri)):
            reply = await self._pool.using(
                conversation_id, server, config, read_raw(uri), within=config.timeout
            )
        out = {
            "conversationId": conversation_id,
            "turnId": None,
            "callId": None,
            "server": server,
            "tool": None,
            "name": None,
            "resourceUri": uri,
            "visibility": None,
            **check_view(server, uri, reply),
            "toolInput": None,
            "toolResult": None,
        }
        return self._redact(out)  # type: ignore[return-value]

    def _definition(self, server: str, tool: str) -> dict[str, Any]:
        """The tool as the server last listed it (the view's ``hostContext.toolInfo.tool``)."""
        listed = self._inventory.get(server).get("tools") or []
        entry = next((t for t in listed if t.get("name") == tool), None)
        if entry is None:
            return {"name": tool, "inputSchema": {"type": "object"}}
        keys = ("name", "title", "description", "inputSchema", "annotations")
        return {k: entry[k] for k in keys if k in entry}

    # --- what the view asks --------------------------------------------------------------

    async def call_tool(
        self, call_id: str, turn_id: str | None, server: str, name: str, arguments: Any
    ) -> msgspec.Raw:
        """A view's ``tools/call``: its own server's tools only, visible to views only."""
        found = self._find(call_id, turn_id)
        call = found.call
        if server != call.server:
            log.warning("apps.other_server", view_server=call.server, asked=server)
            raise ViewCallRefused(
                f"a view may call only its own server's tools ({call.server}), not {server}'s",
                reason="other_server",
            )
        config = self._config(found)
        with self._slot(found):
            listing = await self._pool.using(
                call.conversation_id, server, config, list_tools, within=config.timeout
            )
            tool = next((t for t in listing if t.name == name), None)
            ref = view_ref(tool.meta) if tool is not None else None
            if tool is None or tool.needs_tasks:
                raise ViewCallRefused(
                    f"{server} has no tool {name!r} a view can call", reason="unknown_tool"
                )
            if ref is not None and not ref.for_app:
                raise ViewCallRefused(
                    f"the tool {name!r} of {server} is for the model only (its visibility "
                    'lacks "app"); views may not call it',
                    reason="not_for_app",
                )
            binding = Binding(
                server,
                name,
                tool.annotations,
                requires_user_interaction(tool.meta),
                config.connection_key(),
                ref,
            )
            return await self._call(call, binding, arguments)

    async def _call(self, view: ToolCall, binding: Binding, arguments: Any) -> msgspec.Raw:
        """The model's path and rules for a view's call, audited with origin "app", in a turn of
        its own (the view outlives its turn; the call is the view's turn's on record)."""
        server, tool = binding.server, binding.tool
        name, digest = tool_name(server, tool), arguments_digest(arguments)
        call = ToolCall(
            view.conversation_id, view.turn_id, new_call_id(), server, tool, name, digest, "app"
        )
        turn = Turn(view.turn_id, view.conversation_id, {}, no_offer())
        with telemetry.span("tools/call", client=True) as traced:
            record = CallRecord(self._db, self._bus, call, traced)
            try:
                return await self._turns.call_recorded(turn, binding, arguments, record)
            finally:
                record.cut_off(DecidedBy.SHUTDOWN, "meworkd stopped during the call")

    async def read_resource(self, call_id: str, turn_id: str | None, uri: str) -> dict[str, Any]:
        """A view's ``resources/read`` on its own server's session: ``{contents}``."""
        found = self._find(call_id, turn_id)
        call = found.call
        config = self._config(found)
        with self._slot(found):
            reply = await self._pool.using(
                call.conversation_id, call.server, config, read_raw(uri), within=config.timeout
            )
        return self._redact({"contents": reply.get("contents", [])})  # type: ignore[return-value]

    def message(
        self, call_id: str, turn_id: str | None, what: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        """A view's ``ui/message`` (``what`` "message"), ``ui/update-model-context``
        ("context") or ``ui/open-link`` ("openLink"), published as ``app.<what>``."""
        found = self._find(call_id, turn_id)
        if what == "message":
            body: dict[str, Any] = {
                "role": "user",
                "content": content_blocks(params.get("content"), "content"),
            }
        elif what == "context":
            body = {}
            if params.get("content") is not None:
                body["content"] = content_blocks(params["content"], "content")
            if params.get("structuredContent") is not None:
                body["structuredContent"] = structured(
                    params["structuredContent"], "structuredContent"
                )
        else:
            body = {"url": check_link(str(params.get("url", "")))}
        call = found.call
        event = {
            "conversationId": call.conversation_id,
            "turnId": call.turn_id,
            "callId": call.call_id,
            "server": call.server,
            "tool": call.tool,
            **body,
        }
        topic = f"app.{what}"
        watching = self._bus.watching(topic)
        self._bus.publish(topic, event)  # (redacted on the way out, as every event)
        return {"delivered": watching > 0}
