"""Failure objects on the wire: every failure says ``kind`` (the stable classified kind) and
``error`` (the sentence), wherever it appears (docs/api.md "Failure objects").

Older fields stay as deprecated aliases for clients in the wild: ``reason`` is the sentence in a
turn's ``failures`` and the kind in a failed ``servers.test``. The readers here prefer the new
names and fall back to the old ones, so a client reads a daemon of either age alike.
"""

from collections.abc import Mapping
from typing import Any

__all__ = ["failure", "failure_error", "failure_kind"]


def failure(kind: str, error: str, **fields: Any) -> dict[str, Any]:
    """A failure object: ``fields`` plus ``kind`` and ``error``."""
    return {**fields, "kind": kind, "error": error}


def failure_kind(obj: Mapping[str, Any]) -> str | None:
    """The classified kind (``timeout``, ``command_not_found``, ...), or None if it has none."""
    kind = obj.get("kind")
    if isinstance(kind, str) and kind:
        return kind
    # A failed servers.test of an older daemon named the kind ``reason`` (beside ``error``).
    reason = obj.get("reason")
    return reason if "ok" in obj and isinstance(reason, str) and reason else None


def failure_error(obj: Mapping[str, Any]) -> str | None:
    """The sentence saying what went wrong, or None if it has none."""
    error = obj.get("error")
    if isinstance(error, str) and error:
        return error
    # A turn's failure of an older daemon said it as ``reason`` (its kind was ``kind``).
    reason = obj.get("reason")
    return reason if "ok" not in obj and isinstance(reason, str) and reason else None
