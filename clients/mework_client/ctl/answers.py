"""How a person's typed answer to an approval reads: allow, allow always, deny, or a reason.

Shared by ``meworkctl call`` (asked on the terminal while the call waits) and ``meworkctl
approvals watch``.
"""

from collections.abc import Callable
from typing import Any, NamedTuple

from mework_client import RpcError

__all__ = ["ALLOW_PROMPT", "NOT_ALWAYS", "Answer", "ask_decision", "respond"]

ALLOW_PROMPT = "Allow? [y/N, a = always, or a reason to deny] "
# The daemon refuses "always" for a tool that asks every time: the person's allow stands, once.
NOT_ALWAYS = "this tool asks every time, so it cannot be allowed always: allowed once"


class Answer(NamedTuple):
    decision: str  # "allow" or "deny"
    reason: str | None
    scope: str = "once"  # "always": the tool joins its server's alwaysAllowTools


def ask_decision(answer: str) -> Answer:
    """``y`` allows, ``a`` allows always, ``n`` (or nothing) denies, any other text denies
    with it as the reason."""
    text = answer.strip()
    if text.lower() in ("y", "yes"):
        return Answer("allow", None)
    if text.lower() in ("a", "always"):
        return Answer("allow", None, "always")
    if text.lower() in ("", "n", "no"):
        return Answer("deny", None)
    return Answer("deny", text)


def respond(
    call: Callable[[str, dict[str, Any]], Any], approval_id: str, answer: Answer
) -> str | None:
    """Send ``answer`` (``approvals.respond``); what to tell the person besides, if anything.

    An "always" the daemon refuses (a tool that asks every time) is sent again as once: the
    person allowed it. Other refusals (``approval_not_found``: answered elsewhere) are raised.
    """
    params: dict[str, Any] = {"approvalId": approval_id, "decision": answer.decision}
    if answer.scope != "once":
        params["scope"] = answer.scope
    if answer.reason:
        params["reason"] = answer.reason
    try:
        call("approvals.respond", params)
    except RpcError as exc:
        if exc.kind != "invalid_params" or answer.scope != "always":
            raise
        call("approvals.respond", params | {"scope": "once"})
        return NOT_ALWAYS
    return None
