"""One tool call's identity: the one record every part of the call path knows the call by.

The audit's ``requested`` entry and ``call.started`` are written from it, approvals decide on it,
the server's questions are bound to it while it is in flight, and progress events name it.
"""

import secrets
from typing import NamedTuple

__all__ = ["ToolCall", "new_call_id"]


def new_call_id() -> str:
    """A call id for a call its frontend did not name: 12 hex digits (as uuid4().hex[:12] was)."""
    return secrets.token_hex(6)


class ToolCall(NamedTuple):
    """Which call (conversation, turn, call id), what it calls, and its arguments' digest.

    A made-up name has no server or tool: "". The first seven fields are the audit entry's
    leading fields, in order: the audit takes them by position (bench B1). ``origin``: who
    asked, ``"model"`` (turns.callTool) or ``"app"`` (a tool's view, apps.callTool).
    """

    conversation_id: str
    turn_id: str
    call_id: str
    server: str
    tool: str
    name: str  # model-facing
    arguments_digest: str
    origin: str = "model"

    def wire(self) -> dict[str, str]:
        """How events and replies name the call: ``{conversationId, turnId, callId, server,
        tool, name}``."""
        return {
            "conversationId": self.conversation_id,
            "turnId": self.turn_id,
            "callId": self.call_id,
            "server": self.server,
            "tool": self.tool,
            "name": self.name,
        }
