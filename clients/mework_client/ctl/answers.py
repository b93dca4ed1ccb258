"""How a person's typed answer to an approval reads: allow, allow always, deny, or a reason.

Shared by ``meworkctl call`` (asked on the terminal while the call waits) and ``meworkctl
approvals watch``.
"""

from typing import NamedTuple

__all__ = ["ALLOW_PROMPT", "NOT_ALWAYS", "Answer", "ask_decision"]

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
