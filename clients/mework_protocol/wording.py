"""The words every frontend uses for the same state, so that the command line and the UI agree.

A server that last failed is "failed: <kind>" wherever its status is shown, until the daemon
stops reporting that failure (``lastError``); a settings file meworkd cannot use is said with
one sentence: what is wrong, what runs instead, and that edits wait for the fix.
"""

from collections.abc import Mapping
from typing import Any

from mework_protocol.failures import failure_kind

__all__ = ["server_state", "tool_problem", "unreadable_settings"]


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


def tool_problem(problem: Mapping[str, Any]) -> str:
    """A Test connection's finding about one tool (``servers.test`` ``problems``), in words:
    its ``detail`` says it plainly; the code (``name_shortened``) is for programs."""
    where = f"{problem['tool']}: " if problem.get("tool") else ""
    code = str(problem.get("problem") or "").replace("_", " ")
    return f"{where}{problem.get('detail') or problem.get('message') or code}"
