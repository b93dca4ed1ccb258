"""Approvals: apply the decision table, run PermissionRequest hooks, ask the user and wait.

Nothing runs without the permission the rules require. An approval request goes to every
subscribed frontend; the first answer wins; no answer in time, a cancelled call and a daemon
shutdown all deny.
"""

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from meworkd.base.errors import ApprovalNotFound, InvalidParams
from meworkd.base.events import EventBus
from meworkd.base.log import get_logger
from meworkd.core.approvals.hooks import (
    PermissionRequest,
    parse_permission_hooks,
    run_permission_hooks,
)
from meworkd.core.approvals.policy import (
    ApprovalLevel,
    DecidedBy,
    Rule,
    approval_reason,
    decide,
    requires_user_interaction,
    resolve,
)
from meworkd.settings import Settings

__all__ = ["Approvals", "CallContext", "Decision"]

log = get_logger("meworkd.approvals")


@dataclass(frozen=True, slots=True)
class CallContext:
    """What approvals need to know about one tool call."""

    conversation_id: str
    turn_id: str
    call_id: str
    name: str  # model-facing
    server: str
    tool: str  # the server's own name
    arguments: dict[str, Any]
    level: ApprovalLevel
    tool_meta: object


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    decided_by: DecidedBy
    reason: str | None = None
    rule: Rule = Rule.RUN


@dataclass(slots=True)
class _Pending:
    request: dict[str, Any]
    turn_id: str
    done: anyio.Event = field(default_factory=anyio.Event)
    decision: Decision | None = None


class Approvals:
    def __init__(self, bus: EventBus, settings: Callable[[], Settings]) -> None:
        self._bus = bus
        self._settings = settings
        self._pending: dict[str, _Pending] = {}
        self._closed = False

    async def authorize(self, call: CallContext) -> Decision:
        settings = self._settings()
        config = settings.servers.get(call.server)
        mandatory = requires_user_interaction(call.tool_meta)
        auto_off = config is not None and call.tool in config.disabled_auto_approve_tools
        rule = decide(call.level, mandatory=mandatory, auto_approve_disabled=auto_off)
        if rule is Rule.RUN:
            return Decision(True, DecidedBy.LEVEL, f"approval level {call.level}", rule)
        verdict_behavior, verdict_message = await self._hooks(call, settings)
        outcome, by = resolve(rule, verdict_behavior)
        if outcome == "run":
            return Decision(True, by or DecidedBy.HOOK, verdict_message, rule)
        if outcome == "deny":
            return Decision(
                False,
                by or DecidedBy.HOOK,
                verdict_message or "denied by a PermissionRequest hook",
                rule,
            )
        reason = approval_reason(call.level, mandatory=mandatory, auto_approve_disabled=auto_off)
        return await self._ask(call, reason or "approval required", rule)

    async def _hooks(self, call: CallContext, settings: Settings) -> tuple[str | None, str | None]:
        matchers, errors = parse_permission_hooks(settings.permission_hooks)
        for error in errors:
            log.warning("hooks.invalid", error=error)
        if not matchers:
            return None, None
        verdict = await run_permission_hooks(
            matchers,
            PermissionRequest(
                conversation_id=call.conversation_id,
                tool_name=call.name,
                tool_input=call.arguments,
                permission_mode=call.level,
                server=call.server,
                tool=call.tool,
            ),
        )
        for error in verdict.errors:
            log.warning("hooks.error", error=error)
        for detail in verdict.details:
            log.info(
                "hooks.ran",
                command=detail.command,
                behavior=detail.behavior,
                note=detail.note,
                ms=detail.duration_ms,
            )
        return verdict.behavior, verdict.message

    async def _ask(self, call: CallContext, reason: str, rule: Rule) -> Decision:
        if self._closed:
            return Decision(False, DecidedBy.SHUTDOWN, "meworkd is shutting down", rule)
        approval_id = uuid.uuid4().hex[:12]
        request = {
            "approvalId": approval_id,
            "conversationId": call.conversation_id,
            "turnId": call.turn_id,
            "callId": call.call_id,
            "name": call.name,
            "server": call.server,
            "tool": call.tool,
            "arguments": call.arguments,
            "reason": reason,
            "hookMayDecide": rule is Rule.ASK_HOOK_MAY_DECIDE,
        }
        pending = _Pending(request, call.turn_id)
        self._pending[approval_id] = pending
        self._bus.publish("approval.requested", request)
        timeout = self._settings().mcp.approval_timeout_seconds
        waited = anyio.move_on_after(timeout)
        try:
            with waited:
                await pending.done.wait()
        finally:
            self._pending.pop(approval_id, None)
            if pending.decision is None:
                # No answer: the wait timed out, or the call itself was cancelled. Both deny.
                pending.decision = (
                    Decision(
                        False,
                        DecidedBy.TIMEOUT,
                        f"nobody answered the approval request within {timeout:g} s",
                        rule,
                    )
                    if waited.cancelled_caught
                    else Decision(False, DecidedBy.CANCELLED, "the call was cancelled", rule)
                )
            self._bus.publish(
                "approval.resolved",
                {
                    "approvalId": approval_id,
                    "decision": "allow" if pending.decision.allowed else "deny",
                    "decidedBy": pending.decision.decided_by.value,
                    "reason": pending.decision.reason,
                },
            )
        return pending.decision

    def respond(self, approval_id: str, decision: str, reason: str | None) -> dict[str, Any]:
        if decision not in ("allow", "deny"):
            raise InvalidParams('decision must be "allow" or "deny"')
        pending = self._pending.get(approval_id)
        if pending is None or pending.decision is not None:
            raise ApprovalNotFound(approval_id)
        allowed = decision == "allow"
        pending.decision = Decision(
            allowed,
            DecidedBy.USER,
            reason or ("allowed by the user" if allowed else "denied by the user"),
        )
        pending.done.set()
        return {"approvalId": approval_id, "decision": decision}

    def list(self) -> list[dict[str, Any]]:
        return [p.request for p in self._pending.values() if p.decision is None]

    def deny_turn(
        self, turn_id: str, why: DecidedBy, reason: str, call_id: str | None = None
    ) -> None:
        """Deny what waits in ``turn_id`` (only the call ``call_id`` when one is given)."""
        for pending in list(self._pending.values()):
            # turns.cancel with a callId denies that call's request only.
            if call_id is not None and pending.request["callId"] != call_id:
                continue
            if pending.turn_id == turn_id and pending.decision is None:
                pending.decision = Decision(False, why, reason)
                pending.done.set()

    def shutdown(self) -> None:
        self._closed = True
        for pending in list(self._pending.values()):
            if pending.decision is None:
                pending.decision = Decision(False, DecidedBy.SHUTDOWN, "meworkd is shutting down")
                pending.done.set()
