"""Approvals: apply the decision table, run PermissionRequest hooks, ask the user and wait.

Nothing runs without the permission the rules require. An approval request goes to every
subscribed frontend through the prompt broker; the first answer wins; no answer in time, a
cancelled call and a daemon shutdown all deny.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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
from meworkd.core.prompts import PromptBroker, PromptKind, Subject, Unanswered
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


def _resolution(decision: Decision) -> dict[str, Any]:
    return {
        "decision": "allow" if decision.allowed else "deny",
        "decidedBy": decision.decided_by.value,
        "reason": decision.reason,
    }


APPROVAL_PROMPTS: PromptKind[Decision] = PromptKind(
    id_key="approvalId",
    requested="approval.requested",
    resolved="approval.resolved",
    resolution=_resolution,
    not_found=ApprovalNotFound,
)
_SHUTTING_DOWN = "meworkd is shutting down"


class Approvals:
    def __init__(self, bus: EventBus, settings: Callable[[], Settings]) -> None:
        self._settings = settings
        self._prompts = PromptBroker(bus, APPROVAL_PROMPTS)

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
        within = self._settings().mcp.approval_timeout_seconds

        def unanswered(why: Unanswered) -> Decision:
            if why is Unanswered.TIMEOUT:
                text = f"nobody answered the approval request within {within:g} s"
                return Decision(False, DecidedBy.TIMEOUT, text, rule)
            if why is Unanswered.CANCELLED:
                return Decision(False, DecidedBy.CANCELLED, "the call was cancelled", rule)
            return Decision(False, DecidedBy.SHUTDOWN, _SHUTTING_DOWN, rule)

        return await self._prompts.ask(
            Subject(call.conversation_id, call.turn_id, call.call_id),
            {
                "name": call.name,
                "server": call.server,
                "tool": call.tool,
                "arguments": call.arguments,
                "reason": reason,
                "hookMayDecide": rule is Rule.ASK_HOOK_MAY_DECIDE,
            },
            within=within,
            unanswered=unanswered,
        )

    def respond(self, approval_id: str, decision: str, reason: str | None) -> dict[str, Any]:
        if decision not in ("allow", "deny"):
            raise InvalidParams('decision must be "allow" or "deny"')
        allowed = decision == "allow"
        self._prompts.answer(
            approval_id,
            Decision(
                allowed,
                DecidedBy.USER,
                reason or ("allowed by the user" if allowed else "denied by the user"),
            ),
        )
        return {"approvalId": approval_id, "decision": decision}

    def list(self) -> list[dict[str, Any]]:
        return self._prompts.open_questions()

    def deny_turn(
        self, turn_id: str, why: DecidedBy, reason: str, call_id: str | None = None
    ) -> None:
        """Deny what waits in ``turn_id`` (only the call ``call_id`` when one is given)."""
        self._prompts.cancel(turn_id, Decision(False, why, reason), call_id)

    def shutdown(self) -> None:
        self._prompts.stop(lambda _why: Decision(False, DecidedBy.SHUTDOWN, _SHUTTING_DOWN))
