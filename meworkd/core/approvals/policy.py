"""The approval decision table (docs/api.md, Approvals): pure, synchronous, fail-closed.

Given a conversation's level and a tool's flags it says whether a call runs, asks, or asks with a
PermissionRequest hook allowed to decide; it also names who decided, for the audit log.
"""

from collections.abc import Mapping
from enum import StrEnum
from typing import Literal

from mework_protocol.levels import APPROVAL_LEVELS, ApprovalLevel

__all__ = [
    "APPROVAL_LEVELS",
    "REQUIRES_USER_INTERACTION_KEY",
    "ApprovalLevel",
    "AskReason",
    "DecidedBy",
    "Outcome",
    "Rule",
    "approval_reason",
    "ask_reasons",
    "decide",
    "requires_user_interaction",
    "resolve",
]

REQUIRES_USER_INTERACTION_KEY = "anthropic/requiresUserInteraction"


class Rule(StrEnum):
    """What the table says about one call, before any hook or user has spoken."""

    RUN = "run"
    # Ask the user, unless a PermissionRequest hook allows or denies first.
    ASK_HOOK_MAY_DECIDE = "ask_hook_may_decide"
    # Ask the user at every level; a hook's deny still denies, its allow is ignored.
    ASK_HOOK_MAY_ONLY_DENY = "ask_hook_may_only_deny"


class DecidedBy(StrEnum):
    """Provenance of a final decision, as written to the audit log."""

    USER = "user"
    HOOK = "hook"
    RULE = "rule"  # the server entry's alwaysAllowTools
    LEVEL = "level"
    POLICY = "policy"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    SHUTDOWN = "shutdown"


class AskReason(StrEnum):
    """Why a call needs the user; the value is the text shown in the approval request."""

    REQUIRES_USER_INTERACTION = "requires user interaction (server-declared)"
    AUTO_APPROVE_DISABLED = "auto-approve is switched off for this tool"
    LEVEL_ASKS = "approval level {level} asks for every call"


Outcome = Literal["run", "deny", "ask"]


def requires_user_interaction(meta: object) -> bool:
    """Read ``_meta["anthropic/requiresUserInteraction"]``; anything malformed fails closed.

    ``None`` (no ``_meta``), a missing key and ``false`` mean False; ``true`` means True; any other
    value, or a ``_meta`` that is not an object, means True.
    """
    if meta is None:
        return False
    if not isinstance(meta, Mapping):
        return True
    if REQUIRES_USER_INTERACTION_KEY not in meta:
        return False
    # Identity checks: 1, "true" and 0 are not JSON booleans and must not pass as them.
    return meta[REQUIRES_USER_INTERACTION_KEY] is not False


def decide(level: ApprovalLevel, *, mandatory: bool, auto_approve_disabled: bool) -> Rule:
    """The table's cell for a call at ``level``; an unknown level is treated as asking."""
    if mandatory or auto_approve_disabled:
        return Rule.ASK_HOOK_MAY_ONLY_DENY
    if level == "full_access":
        return Rule.RUN
    return Rule.ASK_HOOK_MAY_DECIDE


def resolve(rule: Rule, hook_behavior: str | None) -> tuple[Outcome, DecidedBy | None]:
    """Combine a rule with a hook verdict (``"allow"``, ``"deny"`` or None for no decision).

    Returns ``("ask", None)`` when the user must be asked. Hooks are only consulted when the rule
    is not RUN, so for RUN the verdict is ignored.
    """
    if rule is Rule.RUN:
        return "run", DecidedBy.LEVEL
    if hook_behavior == "deny":
        return "deny", DecidedBy.HOOK
    if hook_behavior == "allow" and rule is Rule.ASK_HOOK_MAY_DECIDE:
        return "run", DecidedBy.HOOK
    return "ask", None


def ask_reasons(
    level: ApprovalLevel, *, mandatory: bool, auto_approve_disabled: bool
) -> list[AskReason]:
    """Every reason the call needs the user, most specific first; empty when it just runs."""
    reasons: list[AskReason] = []
    if mandatory:
        reasons.append(AskReason.REQUIRES_USER_INTERACTION)
    if auto_approve_disabled:
        reasons.append(AskReason.AUTO_APPROVE_DISABLED)
    if not reasons and decide(level, mandatory=False, auto_approve_disabled=False) is not Rule.RUN:
        reasons.append(AskReason.LEVEL_ASKS)
    return reasons


def approval_reason(
    level: ApprovalLevel, *, mandatory: bool, auto_approve_disabled: bool
) -> str | None:
    """The human reason text of an approval request, or None when the call would just run."""
    reasons = ask_reasons(level, mandatory=mandatory, auto_approve_disabled=auto_approve_disabled)
    if not reasons:
        return None
    return "; ".join(r.value.format(level=level) for r in reasons)
