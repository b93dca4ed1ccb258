"""The MCP side of a turn: discover tools, name them for the model, translate calls back.

``begin`` lists the selected servers' tools concurrently and binds each under its stable
model-facing name; ``call_tool`` resolves a binding, applies approvals, calls the server with the
original name and returns its reply minus every ``_meta``, refused (not truncated) when too large.
Failures that the model should read come back as ``isError`` results; a malformed call (unknown
or ended turn) is an error of the request itself.
"""

import hashlib
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
import msgspec
from mcp import ClientSession, MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
from pydantic import BaseModel, ConfigDict, ValidationError

from meworkd.base.errors import MeworkError, ServerUnavailable, TurnNotFound
from meworkd.base.events import EventBus
from meworkd.base.log import get_logger
from meworkd.core.approvals.gate import Approvals, CallContext, Decision
from meworkd.core.approvals.policy import DecidedBy, requires_user_interaction
from meworkd.core.catalog import bind_names
from meworkd.core.state import AuditEntry, StateDB
from meworkd.mcp.pool import SessionPool
from meworkd.mcp.session import describe_failure, list_all
from meworkd.settings import ServerConfig, Settings
from meworkd.settings.store import SettingsStore

__all__ = ["Binding", "Turn", "Turns", "strip_meta"]

MAX_TURNS = 10_000  # turns kept open at once; the oldest ended first beyond this
log = get_logger("meworkd.turns")


@dataclass(frozen=True, slots=True)
class Binding:
    server: str
    tool: str
    annotations: dict[str, Any] | None
    meta: object


@dataclass(slots=True)
class Turn:
    id: str
    conversation_id: str
    bindings: dict[str, Binding]
    tools: list[dict[str, Any]] = field(default_factory=list)
    parent_id: str | None = None
    calls: dict[str, anyio.CancelScope] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)


def strip_meta(value: Any) -> Any:
    """Remove every ``_meta`` key from the reply's envelope and content blocks."""
    if isinstance(value, dict):
        return {k: strip_meta(v) for k, v in value.items() if k != "_meta"}
    if isinstance(value, list):
        return [strip_meta(v) for v in value]
    return value


class _RawResult(BaseModel):
    """A tools/call result as the server sent it (every member kept, as is).

    The SDK checks the result against the negotiated revision's schema before handing it over;
    taking it raw skips building a CallToolResult only to dump it back to a dict (bench B1).
    What this module relies on is checked again in ``_send``, whatever the revision.
    """

    model_config = ConfigDict(extra="allow")


class _NotAToolResult(Exception):
    """The server's reply to tools/call does not have the shape of a tool result."""


def _error_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _digest(arguments: dict[str, Any]) -> str:
    return hashlib.sha256(msgspec.json.encode(arguments, order="sorted")).hexdigest()[:16]


class Turns:
    def __init__(
        self,
        store: SettingsStore,
        pool: SessionPool,
        approvals: Approvals,
        db: StateDB,
        bus: EventBus,
    ) -> None:
        self._store = store
        self._pool = pool
        self._approvals = approvals
        self._db = db
        self._bus = bus
        self._turns: dict[str, Turn] = {}

    # --- begin ---------------------------------------------------------------------------

    async def begin(self, conversation_id: str, parent_turn_id: str | None) -> dict[str, Any]:
        conversation = self._db.get_conversation(conversation_id)
        settings = self._store.settings
        selected = [
            name
            for name in dict.fromkeys(conversation.mcp_servers)
            if name in settings.servers and settings.servers[name].enabled
        ]
        # A selected server whose entry never validated cannot take part: say so, like a
        # server that failed to connect (one with a last good definition runs on that).
        failures: list[dict[str, str]] = [
            {"server": name, "reason": f"invalid settings entry: {settings.server_errors[name]}"}
            for name in dict.fromkeys(conversation.mcp_servers)
            if name not in settings.servers and name in settings.server_errors
        ]
        if parent_turn_id is not None:
            # A subagent sees exactly what its parent saw, without asking the servers again.
            parent = self._get(parent_turn_id)
            if parent.conversation_id != conversation_id:
                raise TurnNotFound(parent_turn_id)
            bindings, tools = dict(parent.bindings), list(parent.tools)
        else:
            listings = await self._discover(conversation_id, selected, settings, failures)
            bindings, tools, collisions = self._bind(selected, listings, settings)
            failures += collisions
        turn = Turn(uuid.uuid4().hex, conversation_id, bindings, tools, parent_turn_id)
        self._remember(turn)
        for failure in failures:
            log.warning(
                "turn.server_failed",
                turn=turn.id,
                conversation=conversation_id,
                server=failure["server"],
                reason=failure["reason"],
            )
        return {
            "turnId": turn.id,
            "tools": tools,
            "bindings": {
                name: {"server": b.server, "tool": b.tool, "annotations": b.annotations}
                for name, b in bindings.items()
            },
            "systemPrompt": self._system_prompt(conversation.mcp_servers, settings, failures),
            "failures": failures,
        }

    async def _discover(
        self,
        conversation_id: str,
        servers: list[str],
        settings: Settings,
        failures: list[dict[str, str]],
    ) -> dict[str, list[types.Tool]]:
        listings: dict[str, list[types.Tool]] = {}

        async def discover(server: str) -> None:
            config = settings.servers[server]
            try:
                with anyio.fail_after(config.timeout):
                    listings[server] = await self._pool.using(
                        conversation_id, server, lambda client: list_all(client, "tools")
                    )
            except MeworkError as exc:
                failures.append({"server": server, "reason": exc.message})
            except (MCPError, TimeoutError, OSError) as exc:
                failures.append({"server": server, "reason": describe_failure(exc, config)[1]})

        async with anyio.create_task_group() as tg:
            for server in servers:
                tg.start_soon(discover, server)
        return listings

    def _bind(
        self, servers: list[str], listings: dict[str, list[types.Tool]], settings: Settings
    ) -> tuple[dict[str, Binding], list[dict[str, Any]], list[dict[str, str]]]:
        pairs: list[tuple[str, str]] = []
        by_pair: dict[tuple[str, str], types.Tool] = {}
        for server in servers:
            config = settings.servers[server]
            for tool in listings.get(server, []):
                if tool.name in config.disabled_tools or (server, tool.name) in by_pair:
                    continue
                pairs.append((server, tool.name))
                by_pair[(server, tool.name)] = tool
        bound, collisions = bind_names(pairs)
        bindings: dict[str, Binding] = {}
        for name, (server, tool_name) in bound.items():
            tool = by_pair[(server, tool_name)]
            annotations = (
                tool.annotations.model_dump(by_alias=True, mode="json", exclude_none=True)
                if tool.annotations
                else None
            )
            bindings[name] = Binding(server, tool_name, annotations, tool.meta)
        problems = [
            {
                "server": c.server,
                "reason": f"tool {c.tool!r} was left out: its name {c.name} "
                f"collides with {c.clashes_with[1]!r} of {c.clashes_with[0]}",
            }
            for c in collisions
        ]
        return bindings, self._model_tools(bindings, listings, settings), problems

    def _model_tools(
        self,
        bindings: dict[str, Binding],
        listings: dict[str, list[types.Tool]],
        settings: Settings,
    ) -> list[dict[str, Any]]:
        prefix = settings.mcp.mandatory_description_prefix
        index = {(s, t.name): t for s, tools in listings.items() for t in tools}
        out: list[dict[str, Any]] = []
        for name, binding in bindings.items():
            tool = index.get((binding.server, binding.tool))
            if tool is None:
                continue
            config = settings.servers.get(binding.server)
            mandatory = requires_user_interaction(tool.meta) or (
                config is not None and tool.name in config.disabled_auto_approve_tools
            )
            description = tool.description or ""
            entry: dict[str, Any] = {
                "name": name,
                "title": tool.title or (tool.annotations.title if tool.annotations else None),
                "description": prefix + description if mandatory else description,
                "inputSchema": tool.input_schema,
            }
            out.append(entry)
        return out

    @staticmethod
    def _system_prompt(
        selected: tuple[str, ...], settings: Settings, failures: list[dict[str, str]]
    ) -> str:
        failed = {f["server"] for f in failures}
        lines = []
        for name in selected:
            config = settings.servers.get(name)
            if config is None or not config.enabled:
                continue
            text = f"- {name}"
            if config.description:
                text += f": {config.description}"
            if name in failed:
                text += " (unavailable this turn)"
            lines.append(text)
        if not lines:
            return ""
        return (
            "## MCP servers\n"
            "These MCP servers are connected to this conversation. Their tools are offered "
            "with names that start with mcp__<server>; calls that have side effects may ask "
            "the user for approval first.\n" + "\n".join(lines)
        )

    # --- calls ---------------------------------------------------------------------------

    async def call_tool(
        self, turn_id: str, name: str, arguments: dict[str, Any], call_id: str | None
    ) -> dict[str, Any]:
        turn = self._get(turn_id)
        call_id = call_id or uuid.uuid4().hex[:12]
        binding = turn.bindings.get(name)
        started = time.monotonic()
        audit = {
            "conversation_id": turn.conversation_id,
            "turn_id": turn.id,
            "call_id": call_id,
            "server": binding.server if binding else "",
            "tool": binding.tool if binding else "",
            "name": name,
            "arguments_digest": _digest(arguments),
        }
        if binding is None:
            # The model made up a name: it gets a readable answer, the audit a denied call.
            self._record(audit, "deny", DecidedBy.POLICY, "unknown tool", started, None, True)
            known = ", ".join(sorted(turn.bindings)[:20]) or "none"
            return _error_result(f"Unknown tool {name!r}. Tools available this turn: {known}")
        conversation = self._db.get_conversation(turn.conversation_id)
        decision: Decision | None = None
        with anyio.CancelScope() as scope:
            turn.calls[call_id] = scope
            try:
                decision = await self._approvals.authorize(
                    CallContext(
                        conversation_id=turn.conversation_id,
                        turn_id=turn.id,
                        call_id=call_id,
                        name=name,
                        server=binding.server,
                        tool=binding.tool,
                        arguments=arguments,
                        level=conversation.approval_level,
                        requires_user=requires_user_interaction(binding.meta),
                    ),
                    self._store.settings,
                )
                if not decision.allowed:
                    self._record(
                        audit, "deny", decision.decided_by, decision.reason, started, None, True
                    )
                    return _error_result(f"The call was not approved: {decision.reason}")
                result = await self._call(turn, binding, arguments, call_id)
            finally:
                turn.calls.pop(call_id, None)
        if scope.cancelled_caught:
            # Cancelled before a decision (hooks running, user asked) is a deny by
            # cancellation; cancelled while running keeps who allowed it.
            if decision is None or not decision.allowed:
                self._record(audit, "deny", DecidedBy.CANCELLED, "cancelled", started, None, True)
            else:
                self._record(audit, "allow", decision.decided_by, "cancelled", started, None, True)
            return _error_result("The call was cancelled.")
        assert decision is not None
        reply_bytes = len(msgspec.json.encode(result))
        limit = self._store.settings.mcp.max_reply_bytes
        if reply_bytes > limit:
            result = _error_result(
                f"The tool's reply was {reply_bytes} bytes, over the limit of {limit} bytes, so "
                "it was refused (not truncated). Ask for less: use the tool's pagination, "
                "filtering or limit parameters if it has them."
            )
        self._record(
            audit,
            "allow",
            decision.decided_by,
            decision.reason,
            started,
            reply_bytes,
            bool(result.get("isError")),
        )
        return result

    async def _call(
        self, turn: Turn, binding: Binding, arguments: dict[str, Any], call_id: str
    ) -> dict[str, Any]:
        config = self._store.settings.servers.get(binding.server)
        if config is None or not config.enabled:
            return _error_result(f"The MCP server {binding.server} is no longer available.")

        async def send(client: ClientSession) -> dict[str, Any]:
            return await self._send(client, config, turn, binding, arguments, call_id)

        try:
            return await self._pool.using(turn.conversation_id, binding.server, send)
        except MCPError as exc:
            return _error_result(self._explain(exc, binding.server, config))
        except ServerUnavailable as exc:
            return _error_result(f"The MCP server {binding.server} is unavailable: {exc.message}")
        except (ValidationError, _NotAToolResult):
            # The reply is not a CallToolResult at all (e.g. content is not a list).
            return _error_result(
                f"The MCP server {binding.server} sent a reply that is not a valid tool result."
            )

    async def _send(
        self,
        client: ClientSession,
        config: ServerConfig,
        turn: Turn,
        binding: Binding,
        arguments: dict[str, Any],
        call_id: str,
    ) -> dict[str, Any]:
        # A long-running server may take as long as it keeps reporting progress: a watchdog
        # whose deadline each report moves. Any other call has the SDK's own request timeout
        # (which also sends notifications/cancelled), a cancel scope less per call.
        watchdog = (
            anyio.CancelScope(deadline=anyio.current_time() + config.timeout)
            if config.long_running
            else None
        )

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            if watchdog is not None:
                watchdog.deadline = anyio.current_time() + config.timeout
            self._bus.publish(
                "turn.progress",
                {
                    "turnId": turn.id,
                    "callId": call_id,
                    "conversationId": turn.conversation_id,
                    "server": binding.server,
                    "tool": binding.tool,
                    "progress": progress,
                    "total": total,
                    "message": message,
                },
            )

        # send_request, not call_tool: no client-side outputSchema validation (a mismatching
        # reply is still the server's reply) and no implicit tools/list.
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(name=binding.tool, arguments=arguments)
        )
        if watchdog is None:
            result = await client.send_request(
                request,
                _RawResult,
                request_read_timeout_seconds=config.timeout,
                progress_callback=progress,
            )
        else:
            with watchdog:
                result = await client.send_request(request, _RawResult, progress_callback=progress)
            if watchdog.cancelled_caught:
                raise MCPError(REQUEST_TIMEOUT, f"timed out after {config.timeout:g} s")
        raw = result.model_extra or {}
        content = raw.get("content", [])
        structured = raw.get("structuredContent")
        is_error = raw.get("isError", False)
        if (
            not isinstance(content, list)
            or not all(isinstance(block, dict) and "type" in block for block in content)
            or not isinstance(structured, dict | None)
            or not isinstance(is_error, bool | None)
        ):
            raise _NotAToolResult
        out: dict[str, Any] = {"content": strip_meta(content)}
        if structured is not None:
            out["structuredContent"] = structured
        out["isError"] = bool(is_error)
        return out

    @staticmethod
    def _explain(exc: MCPError, server: str, config: ServerConfig) -> str:
        if exc.code == REQUEST_TIMEOUT:
            return (
                f"The call to {server} timed out after {config.timeout:g} s without a reply "
                "and was cancelled."
            )
        if exc.code == CONNECTION_CLOSED:
            return (
                f"The MCP server {server} closed the connection during the call (it may have "
                "crashed); it will be restarted on the next call."
            )
        return f"The MCP server {server} answered with an error: {exc.message} (code {exc.code})"

    def _record(
        self,
        audit: dict[str, Any],
        decision: str,
        decided_by: DecidedBy,
        reason: str | None,
        started: float,
        reply_bytes: int | None,
        is_error: bool,
    ) -> None:
        self._db.record(
            AuditEntry(
                **audit,
                decision=decision,
                decided_by=decided_by.value,
                reason=reason,
                duration_ms=round((time.monotonic() - started) * 1000, 2),
                reply_bytes=reply_bytes,
                is_error=is_error,
            )
        )

    # --- lifecycle -----------------------------------------------------------------------

    def cancel(self, turn_id: str, call_id: str | None) -> int:
        turn = self._get(turn_id)
        # Only the named call's approval request when a callId is given (not the whole turn's).
        self._approvals.deny_turn(
            turn_id,
            DecidedBy.CANCELLED,
            "the call was cancelled" if call_id else "the turn was cancelled",
            call_id,
        )
        scopes = (
            [turn.calls[call_id]]
            if call_id in turn.calls
            else ([] if call_id else list(turn.calls.values()))
        )
        for scope in scopes:
            scope.cancel()
        return len(scopes)

    def end(self, turn_id: str) -> None:
        self.cancel(turn_id, None)
        self._turns.pop(turn_id, None)

    def end_conversation(self, conversation_id: str) -> None:
        for turn in [t for t in self._turns.values() if t.conversation_id == conversation_id]:
            self.end(turn.id)

    def _get(self, turn_id: str) -> Turn:
        turn = self._turns.get(turn_id)
        if turn is None:
            raise TurnNotFound(turn_id)
        return turn

    def _remember(self, turn: Turn) -> None:
        if len(self._turns) >= MAX_TURNS:
            oldest = min(self._turns.values(), key=lambda t: t.started)
            self.end(oldest.id)
        self._turns[turn.id] = turn

    @property
    def active(self) -> int:
        return len(self._turns)
