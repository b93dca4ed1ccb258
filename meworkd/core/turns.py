"""Turns: list the selected servers' tools, bind them for the model, run the model's calls.

``begin`` lists the selected servers' tools concurrently and binds each under its stable
model-facing name (:mod:`meworkd.core.catalog`); ``call_tool`` resolves a binding, applies
approvals, calls the server with the original name and returns its reply minus every ``_meta``
(refused, not truncated, when too large) as the bytes of the JSON-RPC result. Each call obeys
the policy of now (settings, selection, level), not of the turn's start. What the model should
read is an ``isError`` result; a malformed call (unknown or ended turn, a running callId) fails.
"""

import uuid
from dataclasses import dataclass, field
from typing import Any

import msgspec

from meworkd.base import telemetry
from meworkd.base.clock import wire_time
from meworkd.base.errors import DuplicateCallId, MeworkError, ServerUnavailable, TurnNotFound
from meworkd.base.events import EventBus
from meworkd.base.log import get_logger
from meworkd.core.approvals.gate import Approvals, Decision
from meworkd.core.approvals.policy import DecidedBy
from meworkd.core.asks import ServerAsks
from meworkd.core.background import Background
from meworkd.core.callrecord import CallRecord
from meworkd.core.callrun import CallRunner
from meworkd.core.catalog import (
    Binding,
    bind,
    rebind,
    select,
    system_prompt,
    unbound,
    wire_bindings,
)
from meworkd.core.definitions import Definitions
from meworkd.core.discovery import discover
from meworkd.core.inspect import Inventory
from meworkd.core.replies import Redact, arguments_digest, error_result, refuse_oversized, to_wire
from meworkd.core.state import StateDB
from meworkd.core.tasks import Tasks
from meworkd.core.toolcall import ToolCall, new_call_id
from meworkd.core.toolsearch import Offer, ToolSearch, offer_fields
from meworkd.core.viewcalls import ViewCalls
from meworkd.mcp import CallClock, SessionPool, call_failure_text, list_tools
from meworkd.settings import Settings
from meworkd.settings.store import SettingsStore

__all__ = ["Turn", "Turns"]

MAX_TURNS = 10_000  # turns kept open at once; the oldest ended first beyond this
log = get_logger("meworkd.turns")


@dataclass(slots=True)
class Turn:
    id: str
    conversation_id: str
    bindings: dict[str, Binding]
    offer: Offer  # every tool, which ones the model is offered (tool search), their index
    parent_id: str | None = None
    calls: dict[str, CallClock] = field(default_factory=dict)
    began: str = field(default_factory=wire_time)  # turns.list


class Turns:
    def __init__(
        self,
        store: SettingsStore,
        pool: SessionPool,
        approvals: Approvals,
        db: StateDB,
        bus: EventBus,
        redact: Redact,
        asks: ServerAsks,
        *,
        inventory: Inventory | None = None,
    ) -> None:
        self._store = store
        self._pool = pool
        self._approvals = approvals
        self._db = db
        self._bus = bus
        self._redact = redact
        self._inventory = inventory or Inventory()  # what discovery found (servers.tools)
        self._asks = asks
        self.views = ViewCalls()  # the calls of tools with an MCP Apps view (apps.view)
        # the MCP tasks of calls (tasks.*), followed again after a restart
        self.tasks = Tasks(db, bus, pool, store, asks, redact)
        self._runner = CallRunner(pool, bus, asks, self.tasks)
        self.background = Background(db, bus)  # calls that outlive their turn (calls.*)
        self._turns: dict[str, Turn] = {}
        self._definitions = Definitions()
        self._search = ToolSearch(store, db)

    # --- begin ---------------------------------------------------------------------------

    async def begin(self, conversation_id: str, parent_turn_id: str | None) -> dict[str, Any]:
        with telemetry.span("turn.begin", {"mework.conversation": conversation_id}) as traced:
            reply = await self._begin(conversation_id, parent_turn_id)
            traced.set("mework.turn", reply["turnId"])
            traced.set("mework.tools", len(reply["tools"]))
            traced.set("mework.failures", len(reply["failures"]))
            return reply

    async def _begin(self, conversation_id: str, parent_turn_id: str | None) -> dict[str, Any]:
        conversation = self._db.get_conversation(conversation_id)
        settings = self._store.settings
        selected, failures = select(conversation.mcp_servers, settings)
        if parent_turn_id is not None:
            # A subagent sees exactly what its parent saw, without asking the servers again.
            parent = self._get(parent_turn_id)
            if parent.conversation_id != conversation_id:
                raise TurnNotFound(parent_turn_id)
            bindings, chosen = dict(parent.bindings), parent.offer
        else:
            listings = await discover(
                self._pool, self._inventory, conversation_id, selected, settings, failures
            )
            catalog = bind(selected, listings, settings, lambda s: str(self._redact(s)))
            bindings, chosen = (
                catalog.bindings,
                self._search.plan(conversation_id, catalog, settings),
            )
            failures += catalog.problems
        turn = Turn(uuid.uuid4().hex, conversation_id, bindings, chosen, parent_turn_id)
        self._remember(turn)
        for failure in failures:
            log.warning(
                "turn.server_failed",
                turn=turn.id,
                conversation=conversation_id,
                server=failure["server"],
                reason=failure["reason"],
            )
        # Failure reasons and tool descriptions come from servers and may quote a secret.
        reply = {
            "turnId": turn.id,
            **offer_fields(chosen),
            "bindings": wire_bindings(bindings),
            "systemPrompt": system_prompt(
                conversation.mcp_servers, settings, failures, chosen.search_tool
            ),
            "failures": failures,
        }
        return self._redact(reply)  # type: ignore[return-value]

    # --- calls ---------------------------------------------------------------------------

    async def call_tool(
        self, turn_id: str, name: str, arguments: dict[str, Any], call_id: str | None
    ) -> msgspec.Raw:
        """Run one call of the model's; the result's JSON bytes (for the reply as they are).

        Raises:
            DuplicateCallId: ``call_id`` is already running in this turn.
            AuditUnavailable: the call's ``requested`` record could not be written.
        """
        # The span is current while the call runs: the request to the server carries it.
        with telemetry.span("tools/call", client=True) as traced:
            return await self._call_tool(turn_id, name, arguments, call_id, traced)

    async def _call_tool(
        self,
        turn_id: str,
        name: str,
        arguments: dict[str, Any],
        call_id: str | None,
        traced: telemetry.Traced,
    ) -> msgspec.Raw:
        turn = self._get(turn_id)
        if name == turn.offer.search_tool:  # meworkd's own, read-only: no approval, no audit
            return self._wire(self._search.for_model(turn.offer, turn.conversation_id, arguments))
        call_id = call_id or new_call_id()
        if call_id in turn.calls:
            # Refused, not run: the second call would take over the first one's cancel scope.
            raise DuplicateCallId(turn.id, call_id)
        binding = turn.bindings.get(name)
        call = ToolCall(
            turn.conversation_id,
            turn.id,
            call_id,
            binding.server if binding else "",
            binding.tool if binding else "",
            name,
            arguments_digest(arguments),
        )
        # Durable before anything is asked or sent; AuditUnavailable refuses the call.
        record = CallRecord(self._db, self._bus, call, traced)
        try:
            if binding is None:
                # The model made up a name: it gets a readable answer, the audit a denied call.
                record.finish("deny", DecidedBy.POLICY, "unknown tool")
                known = ", ".join(sorted(turn.bindings)[:20]) or "none"
                return self._wire(
                    error_result(f"Unknown tool {name!r}. Tools available this turn: {known}")
                )
            after = self._store.settings.mcp.background_after_seconds
            if after is None:
                return await self.call_recorded(turn, binding, arguments, record)
            return await self.background.run(
                record,
                lambda: self.call_recorded(turn, binding, arguments, record),
                after,
                cancel=lambda: self._cancel_call(turn, record.call.call_id),
                detach=lambda: turn.calls.pop(record.call.call_id, None),
            )
        finally:
            # Only a cancellation from outside gets here unfinished: the daemon stopping
            # past its grace. The call still gets its one outcome (and call.finished). A call
            # that moved to the background gets it there.
            if not record.moved:
                record.cut_off(DecidedBy.SHUTDOWN, "meworkd stopped during the call")

    async def call_recorded(
        self, turn: Turn, binding: Binding, arguments: dict[str, Any], record: CallRecord
    ) -> msgspec.Raw:
        call_id = record.call.call_id
        # One cancel scope for the whole call: the turn's cancel and, while the request is
        # out, the server's timeout (bench B1: a scope costs as much as a small method).
        clock = CallClock()
        with clock.scope:
            turn.calls[call_id] = clock
            try:
                outcome = await self._run(turn, binding, arguments, record, clock)
            except Exception as exc:
                # Its requested record gets an outcome now, not "interrupted" at the next start.
                reason = exc.message if isinstance(exc, MeworkError) else "internal error"
                record.finish("deny", DecidedBy.POLICY, reason)
                raise
            finally:
                turn.calls.pop(call_id, None)
        if clock.scope.cancelled_caught:
            if not clock.expired:
                # Cancelled before a decision (hooks running, user asked) is a deny by
                # cancellation; cancelled while running keeps who allowed it.
                record.cut_off(DecidedBy.CANCELLED, "cancelled")
                return self._wire(error_result("The call was cancelled."))
            # The server's time ran out: an allowed call that failed, as the pool words it.
            assert record.allowed is not None  # (the clock runs only once it is allowed)
            outcome = record.allowed, self._runner.expired(binding.server, clock), clock.reply_limit
        decision, result, limit = outcome
        if not decision.allowed:
            record.finish("deny", decision.decided_by, decision.reason)
            return self._wire(result)
        # Size-checked on its bytes, encoded once, audited, and the bytes handed out.
        result, encoded, size = refuse_oversized(result, limit)
        is_error = bool(result.get("isError"))
        record.finish("allow", decision.decided_by, decision.reason, size, is_error=is_error)
        self.views.keep(record.call, binding.view, arguments, result)  # if it has a view
        return self._wire(result, encoded)

    async def _run(
        self,
        turn: Turn,
        binding: Binding,
        arguments: dict[str, Any],
        record: CallRecord,
        clock: CallClock,
    ) -> tuple[Decision, dict[str, Any], int]:
        """Decide the call under the policy of now, then make it: (decision, result, limit)."""
        call = record.call
        checked = await self._current(turn, call.name, binding)
        if isinstance(checked, Decision):
            return checked, error_result(checked.reason or ""), 0
        current, decide_with = checked
        level = self._db.get_conversation(turn.conversation_id).approval_level
        decision = await self._approvals.authorize(
            call, arguments, level, decide_with, requires_user=current.requires_user
        )
        if not decision.allowed:
            return decision, error_result(f"The call was not approved: {decision.reason}"), 0
        record.allow(decision)
        # Checked again after the decision, on purpose: a server disabled, removed or
        # deselected, or a tool switched off, while the user decided is not called.
        checked = await self._current(turn, call.name, current)
        if isinstance(checked, Decision):
            return checked, error_result(checked.reason or ""), 0
        bound, call_with = checked
        result = await self._runner.run(record, arguments, call_with, clock, as_task=bound.as_task)
        return decision, result, call_with.mcp.max_reply_bytes

    async def _current(
        self, turn: Turn, name: str, binding: Binding
    ) -> tuple[Binding, Settings] | Decision:
        """``binding`` under the settings and selection of now, with that snapshot, or a deny.

        A server redefined since the turn began is asked for its tools again: the binding
        holds, with the new definition's flags, if the tool is still there. The snapshot it
        was checked against is the one the caller decides or calls with, even when a reload
        lands while the tools are listed again.
        """
        settings = self._store.settings
        selection = self._db.get_conversation(turn.conversation_id).mcp_servers
        gone = unbound(binding, settings, selection)
        if gone is None and binding.definition != self._definitions.of(settings, binding.server):
            config = settings.servers[binding.server]
            try:
                listing = await self._pool.using(
                    turn.conversation_id, binding.server, config, list_tools, within=config.timeout
                )
            except ServerUnavailable as exc:
                self._pool.status.failed(binding.server, turn.conversation_id, exc)
                return Decision(False, DecidedBy.POLICY, call_failure_text(exc, binding.server))
            fresh = rebind(binding, listing, config)
            if isinstance(fresh, Binding):
                turn.bindings[name] = fresh
                return fresh, settings
            gone = fresh
        if gone is None:
            return binding, settings
        return Decision(False, DecidedBy.POLICY, gone)

    def search_tools(self, turn_id: str, query: str, limit: int | None) -> dict[str, Any]:
        """What search_tools finds in the turn, each with its binding (turns.searchTools)."""
        turn = self._get(turn_id)
        found = self._search.for_frontend(turn.offer, turn.conversation_id, query, limit)
        return self._redact(found)  # type: ignore[return-value]

    def _wire(self, result: dict[str, Any], encoded: bytes | None = None) -> msgspec.Raw:
        return to_wire(self._redact, result, encoded)

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
        self._asks.cancel(turn_id, call_id)  # the server's questions of the call, likewise
        named = [turn.calls[call_id]] if call_id in turn.calls else []
        clocks = named if call_id else list(turn.calls.values())
        for clock in clocks:
            clock.cancel()
        return len(clocks)

    def caller_gone(self, turn_id: str, call_id: str) -> None:
        """Its frontend hung up mid-call: the call goes too, as its Ctrl-C would take it."""
        if turn_id in self._turns:  # else the turn ended first, and its calls with it
            self.cancel(turn_id, call_id)

    def _cancel_call(self, turn: Turn, call_id: str) -> None:
        if (clock := turn.calls.get(call_id)) is not None:
            clock.cancel()

    def end(self, turn_id: str) -> None:
        self.cancel(turn_id, None)
        self._turns.pop(turn_id, None)

    def end_conversation(self, conversation_id: str) -> None:
        for turn in [t for t in self._turns.values() if t.conversation_id == conversation_id]:
            self.end(turn.id)
        self.background.end_conversation(conversation_id)
        self.tasks.end_conversation(conversation_id)

    def _get(self, turn_id: str) -> Turn:
        turn = self._turns.get(turn_id)
        if turn is None:
            raise TurnNotFound(turn_id)
        return turn

    def _remember(self, turn: Turn) -> None:
        if len(self._turns) >= MAX_TURNS:
            self.end(next(iter(self._turns)))  # the dict keeps turns in the order they began
        self._turns[turn.id] = turn

    @property
    def active(self) -> int:
        return len(self._turns)

    def listing(self, conversation_id: str | None) -> list[dict[str, Any]]:
        """The open turns (of one conversation, or all), oldest first (turns.list)."""
        if conversation_id is not None:
            self._db.get_conversation(conversation_id)  # a mistyped id is an error, not []
        return [
            {
                "turnId": t.id,
                "conversationId": t.conversation_id,
                "parentTurnId": t.parent_id,
                "began": t.began,
                "callsInFlight": len(t.calls),
                "tools": list(t.bindings),
            }
            for t in self._turns.values()
            if conversation_id in (None, t.conversation_id)
        ]
