"""Approvals: apply the decision table, run PermissionRequest hooks, ask the user and wait.

Nothing runs without the permission the rules require. An approval request goes to every
subscribed frontend through the prompt broker; the first answer wins; no answer in time, a
cancelled call and a daemon shutdown all deny. A call that a malformed hook may have concerned is
never allowed by a hook: it is asked of the user (a hook's deny still denies).
"""

from dataclasses import dataclass
from typing import Any

from meworkd.base.errors import ApprovalNotFound, InvalidParams
from meworkd.base.events import EventBus
from meworkd.base.log import Redactor, get_logger
from meworkd.core.approvals.hook_runner import PermissionRequest, run_hooks
from meworkd.core.approvals.policy import (
    ApprovalLevel,
    DecidedBy,
    Rule,
    approval_reason,
    decide,
    resolve,
)
from meworkd.core.prompts import PromptBroker, PromptKind, Subject, Unanswered
from meworkd.core.toolcall import ToolCall
from meworkd.settings import HookSet, Settings, edits
from meworkd.settings.store import SettingsStore

__all__ = ["Approvals", "Decision"]

log = get_logger("meworkd.approvals")


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
GRANTED = "allowed by the user for this conversation"


def _grantable(rule: Rule, hooks: HookSet, name: str) -> bool:
    """A conversation-wide grant stands only where the person alone decides: never for a tool
    that must ask every time, never where a PermissionRequest hook is to decide."""
    return (
        rule is Rule.ASK_HOOK_MAY_DECIDE
        and not hooks.select(name)
        and not hooks.unreadable_for(name)
    )


class Approvals:
    def __init__(
        self,
        bus: EventBus,
        store: SettingsStore,
        redactor: Redactor | None = None,
    ) -> None:
        self._prompts = PromptBroker(bus, APPROVAL_PROMPTS)
        self._store = store  # read by respond only: a call is decided on its own snapshot
        # (conversation, server, tool) the user allowed for the rest of the conversation.
        self._grants: set[tuple[str, str, str]] = set()
        # A hook's message is kept in the audit and shown: secrets out before it is cut; and
        # what waits is listed redacted, like the approval.requested events that announced it.
        self._redactor = redactor or Redactor()

    async def authorize(
        self,
        call: ToolCall,
        arguments: dict[str, Any],
        level: ApprovalLevel,
        settings: Settings,
        *,
        requires_user: bool,
    ) -> Decision:
        """Decide ``call`` at the conversation's ``level`` under ``settings``, the snapshot the
        caller read for this decision; ``requires_user``: the server marks the tool as needing
        the user (read from its ``_meta`` once, at bind)."""
        config = settings.servers.get(call.server)
        mandatory = requires_user
        auto_off = config is not None and call.tool in config.disabled_auto_approve_tools
        rule = decide(level, mandatory=mandatory, auto_approve_disabled=auto_off)
        # alwaysAllowTools after the mandatory asks (a rule never pre-approves those, as a hook
        # cannot), before hooks and the level (docs/api.md, "Per-tool rules").
        allowed_by = config.always_allows(call.tool) if config is not None else None
        if allowed_by is not None and not (mandatory or auto_off):
            return Decision(True, DecidedBy.RULE, f"alwaysAllowTools: {allowed_by}", Rule.RUN)
        if rule is Rule.RUN:
            return Decision(True, DecidedBy.LEVEL, f"approval level {level}", rule)
        key = (call.conversation_id, call.server, call.tool)
        if key in self._grants and _grantable(rule, settings.hooks, call.name):
            return Decision(True, DecidedBy.USER, GRANTED, rule)
        verdict_behavior, verdict_message = await self._hooks(
            call, arguments, level, settings.hooks
        )
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
        reason = approval_reason(level, mandatory=mandatory, auto_approve_disabled=auto_off)
        within = settings.mcp.approval_timeout_seconds
        return await self._ask(call, arguments, reason or "approval required", rule, within)

    async def _hooks(
        self, call: ToolCall, arguments: dict[str, Any], level: ApprovalLevel, hooks: HookSet
    ) -> tuple[str | None, str | None]:
        for error in hooks.errors:
            log.warning("hooks.invalid", error=error)
        selected = hooks.select(call.name)
        if not selected:
            return None, None
        verdict = await run_hooks(
            selected,
            PermissionRequest(
                conversation_id=call.conversation_id,
                tool_name=call.name,
                tool_input=arguments,
                permission_mode=level,
                server=call.server,
                tool=call.tool,
            ),
            redact=self._redactor.redact,
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
        if verdict.behavior == "allow" and hooks.unreadable_for(call.name):
            # Fail closed: the malformed entry may have been the one that denies.
            log.warning("hooks.allow_withheld", name=call.name)
            return None, None
        return verdict.behavior, verdict.message

    async def _ask(
        self, call: ToolCall, arguments: dict[str, Any], reason: str, rule: Rule, within: float
    ) -> Decision:
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
                "origin": call.origin,  # "app": a tool's view asks (MCP Apps)
                "arguments": arguments,
                "reason": reason,
                "hookMayDecide": rule is Rule.ASK_HOOK_MAY_DECIDE,
            },
            within=within,
            unanswered=unanswered,
        )

    async def respond(
        self,
        approval_id: str,
        decision: str,
        reason: str | None,
        scope: str = "once",
    ) -> dict[str, Any]:
        """Answer an approval; ``scope`` "conversation" also allows the same tool for the rest
        of the conversation, where a person's answer alone decides (under the settings of now);
        "always" writes it into the server's ``alwaysAllowTools`` (every conversation, for good)."""
        if decision not in ("allow", "deny"):
            raise InvalidParams('decision must be "allow" or "deny"')
        allowed = decision == "allow"
        if scope != "once" and not allowed:
            raise InvalidParams(f'scope "{scope}" goes only with decision "allow"')
        if scope == "conversation":
            self._grant(self._prompts.question(approval_id), self._store.settings)
        elif scope == "always":
            await self._always(self._prompts.question(approval_id))
        self._prompts.answer(
            approval_id,
            Decision(
                allowed,
                DecidedBy.USER,
                reason or ("allowed by the user" if allowed else "denied by the user"),
            ),
        )
        return {"approvalId": approval_id, "decision": decision}

    def _grant(self, question: dict[str, Any], settings: Settings) -> None:
        rule = (
            Rule.ASK_HOOK_MAY_DECIDE if question["hookMayDecide"] else Rule.ASK_HOOK_MAY_ONLY_DENY
        )
        if not _grantable(rule, settings.hooks, question["name"]):
            raise InvalidParams(
                "this call cannot be allowed for the whole conversation: the tool asks every "
                'time or a PermissionRequest hook decides it; answer with scope "once"'
            )
        self._grants.add((question["conversationId"], question["server"], question["tool"]))

    async def _always(self, question: dict[str, Any]) -> None:
        """Write the asked-about tool into its server's ``alwaysAllowTools`` (a minimal edit of
        the file: the user's comments stay), unless it is one no rule may pre-approve."""
        if not question["hookMayDecide"]:
            raise InvalidParams(
                f"{question['tool']} cannot always be allowed: {question['reason']}, and no "
                'rule pre-approves that; answer with scope "once"'
            )
        server, tool = question["server"], question["tool"]
        await self._store.mutate(
            lambda doc: edits.set_tool_flag(doc, server, tool, key="alwaysAllowTools", on=True)
        )

    def forget_conversation(self, conversation_id: str) -> None:
        self._grants = {g for g in self._grants if g[0] != conversation_id}

    def pending(self) -> dict[str, Any]:
        """approvals.list: the approval requests waiting for a person."""
        return {"approvals": self._redactor.redact_value(self._prompts.open_questions())}

    def deny_turn(
        self, turn_id: str, why: DecidedBy, reason: str, call_id: str | None = None
    ) -> None:
        """Deny what waits in ``turn_id`` (only the call ``call_id`` when one is given)."""
        self._prompts.cancel(turn_id, Decision(False, why, reason), call_id)

    def shutdown(self) -> None:
        self._prompts.stop(lambda _why: Decision(False, DecidedBy.SHUTDOWN, _SHUTTING_DOWN))
