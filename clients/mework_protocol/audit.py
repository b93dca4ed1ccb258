"""What the audit log holds besides tool calls: a server's questions to a person, one entry each,
named by their MCP method (docs/api.md, ``audit.list``)."""

from collections.abc import Mapping
from typing import Any

__all__ = ["ELICITATION_METHOD", "QUESTION_METHODS", "SAMPLING_METHOD", "is_question"]

ELICITATION_METHOD = "elicitation/create"
SAMPLING_METHOD = "sampling/createMessage"
QUESTION_METHODS = frozenset({ELICITATION_METHOD, SAMPLING_METHOD})


def is_question(entry: Mapping[str, Any]) -> bool:
    """True for an entry of a server's question (not a tool call, whatever its ids)."""
    return not entry.get("tool") and entry.get("name") in QUESTION_METHODS
