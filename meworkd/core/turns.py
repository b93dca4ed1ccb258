"""Turns: list the selected servers' tools, bind them for the model, run the model's calls.

``begin`` lists the selected servers' tools concurrently and binds each under its stable
model-facing name (:mod:`meworkd.core.catalog`); ``call_tool`` resolves a binding, applies
approvals, calls the server with the original name and returns its reply minus every ``_meta``,
refused (not truncated) when too large, as the bytes of the JSON-RPC result. Failures that the
model should read come back as ``isError`` results; a malformed call (unknown or ended turn) is
an error of the request itself.
"""

import hashlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import msgspec

from meworkd.base.errors import MeworkError, ServerUnavailable, TurnNotFound
from meworkd.base.events import EventBus
from meworkd.base.log import get_logger
from meworkd.core.approvals.gate import Approvals, CallContext, Decision
from meworkd.core.approvals.policy import DecidedBy
from meworkd.core.catalog import Binding, bind, system_prompt
from meworkd.core.state import AuditEntry, StateDB
from meworkd.mcp import SessionPool, ToolInfo, call_failure_text, call_tool, list_tools
from meworkd.settings import Settings
from meworkd.settings.store import SettingsStore

__all__ = ["Turn", "Turns"]

MAX_TURNS = 10_000  # turns kept open at once; the oldest ended first beyond this
log = get_logger("meworkd.turns")

# Secrets out of a value (the Redactor's redact_value): the same object when none are known.
Redact = Callable[[object], object]


@dataclass(slots=True)
class Turn:
    id: str
    conversation_id: str
    bindings: dict[str, Binding]
    tools: list[dict[str, Any]] = field(default_factory=list)
    parent_id: str | None = None
    calls: dict[str, anyio.CancelScope] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)


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
        redact: Redact,
    ) -> None:
        self._store = store
        self._pool = pool
        self._approvals = approvals
        self._db = db
        self._bus = bus
        self._redact = redact
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
            catalog = bind(selected, listings, settings)
            bindings, tools = catalog.bindings, catalog.tools
            failures += catalog.problems
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
            "systemPrompt": system_prompt(conversation.mcp_servers, settings, failures),
            "failures": failures,
        }

    async def _discover(
        self,
        conversation_id: str,
        servers: list[str],
        settings: Settings,
        failures: list[dict[str, str]],
    ) -> dict[str, list[ToolInfo]]:
        listings: dict[str, list[ToolInfo]] = {}

        async def discover(server: str) -> None:
            config = settings.servers[server]
            try:
                listings[server] = await self._pool.using(
                    conversation_id, server, config, list_tools, within=config.timeout
                )
            except MeworkError as exc:
                failures.append({"server": server, "reason": exc.message})

        async with anyio.create_task_group() as tg:
            for server in servers:
                tg.start_soon(discover, server)
        return listings

    # --- calls ---------------------------------------------------------------------------

    async def call_tool(
        self, turn_id: str, name: str, arguments: dict[str, Any], call_id: str | None
    ) -> msgspec.Raw:
        """Run one call of the model's; the result's JSON bytes (for the reply as they are)."""
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
            return self._wire(
                _error_result(f"Unknown tool {name!r}. Tools available this turn: {known}")
            )
        decision: Decision | None = None
        result: dict[str, Any] | None = None
        with anyio.CancelScope() as scope:
            turn.calls[call_id] = scope
            try:
                decision = await self._authorize(
                    turn, binding, name, arguments, call_id, self._store.settings
                )
                if not decision.allowed:
                    self._record(
                        audit, "deny", decision.decided_by, decision.reason, started, None, True
                    )
                    return self._wire(
                        _error_result(f"The call was not approved: {decision.reason}")
                    )
                # The settings are read again after the decision, on purpose: a server
                # disabled or removed while the user decided is not called.
                call_with = self._store.settings
                result = await self._call(turn, binding, arguments, call_id, call_with)
            finally:
                turn.calls.pop(call_id, None)
        if scope.cancelled_caught:
            # Cancelled before a decision (hooks running, user asked) is a deny by
            # cancellation; cancelled while running keeps who allowed it.
            if decision is None or not decision.allowed:
                self._record(audit, "deny", DecidedBy.CANCELLED, "cancelled", started, None, True)
            else:
                self._record(audit, "allow", decision.decided_by, "cancelled", started, None, True)
            return self._wire(_error_result("The call was cancelled."))
        assert decision is not None
        assert result is not None
        return self._finish(audit, decision, result, call_with.mcp.max_reply_bytes, started)

    async def _authorize(
        self,
        turn: Turn,
        binding: Binding,
        name: str,
        arguments: dict[str, Any],
        call_id: str,
        decide_with: Settings,
    ) -> Decision:
        conversation = self._db.get_conversation(turn.conversation_id)
        return await self._approvals.authorize(
            CallContext(
                conversation_id=turn.conversation_id,
                turn_id=turn.id,
                call_id=call_id,
                name=name,
                server=binding.server,
                tool=binding.tool,
                arguments=arguments,
                level=conversation.approval_level,
                requires_user=binding.requires_user,
            ),
            decide_with,
        )

    def _finish(
        self,
        audit: dict[str, Any],
        decision: Decision,
        result: dict[str, Any],
        limit: int,
        started: float,
    ) -> msgspec.Raw:
        """Size-check the reply on its bytes, encoded once, audit it, and hand the bytes out."""
        encoded = msgspec.json.encode(result)
        size = len(encoded)
        if size > limit:
            result = _error_result(
                f"The tool's reply was {size} bytes, over the limit of {limit} bytes, so "
                "it was refused (not truncated). Ask for less: use the tool's pagination, "
                "filtering or limit parameters if it has them."
            )
        is_error = bool(result.get("isError"))
        self._record(audit, "allow", decision.decided_by, decision.reason, started, size, is_error)
        return self._wire(result, encoded if size <= limit else None)

    def _wire(self, result: dict[str, Any], encoded: bytes | None = None) -> msgspec.Raw:
        """``result`` as JSON for the client, secrets redacted (``encoded``: its bytes, if known).

        With no secrets configured the redactor hands the same object back and the bytes
        already made are used; otherwise the redacted copy is encoded.
        """
        redacted = self._redact(result)
        if encoded is None or redacted is not result:
            encoded = msgspec.json.encode(redacted)
        return msgspec.Raw(encoded)

    async def _call(
        self,
        turn: Turn,
        binding: Binding,
        arguments: dict[str, Any],
        call_id: str,
        settings: Settings,
    ) -> dict[str, Any]:
        config = settings.servers.get(binding.server)
        if config is None or not config.enabled:
            return _error_result(f"The MCP server {binding.server} is no longer available.")

        def progress(progress: float, total: float | None, message: str | None) -> None:
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

        try:
            return await self._pool.using(
                turn.conversation_id,
                binding.server,
                config,
                lambda client: call_tool(
                    client,
                    binding.tool,
                    arguments,
                    request_timeout=config.timeout,
                    long_running=config.long_running,
                    on_progress=progress,
                    reply_limit=settings.mcp.max_reply_bytes,
                ),
            )
        except ServerUnavailable as exc:
            return _error_result(call_failure_text(exc, binding.server))

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
