"""The words every frontend uses for the same state, so that the command line and the UI agree.

A server that last failed is "failed: <kind>" wherever its status is shown, until the daemon
stops reporting that failure (``lastError``); a settings file meworkd cannot use is said with
one sentence: what is wrong, what runs instead, and that edits wait for the fix. What a
server's tools cost a turn reads the same too: a size, and tokens marked as an estimate. An MCP
task's status and age read alike in ``meworkctl tasks`` and the UI's Tasks screen.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datetime import datetime

from mework_protocol.failures import failure_kind

__all__ = [
    "OPEN_TASK_STATES",
    "age",
    "byte_size",
    "server_state",
    "task_state",
    "token_estimate",
    "tool_problem",
    "unreadable_settings",
]


def server_state(entry: Mapping[str, Any]) -> str:
    """A ``servers.list`` entry's status in words: the daemon's word, or its last failure.

    A server connected now is connected, whatever failed before; a disabled or invalid one says
    so first (its failure is not what stops it).
    """
    status = str(entry.get("status") or "-")
    last = entry.get("lastError")
    if status in ("enabled", "unknown") and isinstance(last, Mapping):
        return f"failed: {failure_kind(last) or 'error'}"
    return status


def unreadable_settings(error: object) -> str:
    """The one sentence for a settings file that is not in force."""
    return (
        f"settings file not in force: {error} (meworkd runs on the last good settings and "
        "refuses edits until the file is fixed)"
    )


def byte_size(count: object) -> str:
    """``812 B``, ``4.1 KiB``, ``1.2 MiB`` (``?`` for what is not a count)."""
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        return "?"
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KiB"
    return f"{count / (1024 * 1024):.1f} MiB"


def token_estimate(count: object, *, unit: bool = True) -> str:
    """``~1,052 tokens`` (``~`` because it is bytes / 4: the model's tokenizer differs);
    ``~1,052`` without ``unit``, for a column that names it."""
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        return "?"
    return f"~{count:,}" + (f" token{'s' * (count != 1)}" if unit else "")


def tool_problem(problem: Mapping[str, Any]) -> str:
    """A Test connection's finding about one tool (``servers.test`` ``problems``), in words:
    its ``detail`` says it plainly; the code (``name_shortened``) is for programs."""
    where = f"{problem['tool']}: " if problem.get("tool") else ""
    code = str(problem.get("problem") or "").replace("_", " ")
    return f"{where}{problem.get('detail') or problem.get('message') or code}"


# A task's status (the server's word) as a person reads it; the ones not ended yet first.
OPEN_TASK_STATES = ("working", "input_required")
_TASK_WORDS = {
    "working": "working",
    "input_required": "needs your answer",
    "completed": "completed",
    "failed": "failed",
    "cancelled": "cancelled",
}


def task_state(task: Mapping[str, Any]) -> str:
    """A ``tasks.list`` task's status in words (an unknown word is shown as it came)."""
    status = str(task.get("status") or "?")
    return _TASK_WORDS.get(status, status)


def age(since: object, now: datetime | None = None) -> str:
    """How long ago an ISO 8601 time was: ``12 s``, ``4 min``, ``3 h``, ``2 d`` (``?``: not a
    time)."""
    from datetime import UTC, datetime  # here, not at the top: meworkctl's start-up (bench B6)

    try:
        then = datetime.fromisoformat(str(since))
    except ValueError:
        return "?"
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    seconds = max(int(((now or datetime.now(UTC)) - then).total_seconds()), 0)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"
