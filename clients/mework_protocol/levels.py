"""The approval levels of a conversation, weakest first, and the one a new conversation gets."""

from typing import Literal

__all__ = ["APPROVAL_LEVELS", "DEFAULT_APPROVAL_LEVEL", "ApprovalLevel"]

ApprovalLevel = Literal["request_approval", "allow_edits", "plan", "full_access"]
APPROVAL_LEVELS: tuple[ApprovalLevel, ...] = (
    "request_approval",
    "allow_edits",
    "plan",
    "full_access",
)
DEFAULT_APPROVAL_LEVEL: ApprovalLevel = "request_approval"
