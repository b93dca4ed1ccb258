"""Process groups: the one routine that signals a child's whole group and stops it within a bound.

Every child meworkd starts (MCP servers, hook commands) leads a process group of its own, so a
grandchild cannot outlive it. The escalation is the MCP SDK's: close stdin, poll the exit status,
SIGTERM the group, SIGKILL what is left. ``ProcessLookupError`` means gone; ``PermissionError``
is never proof of life (the pid may belong to someone else's process by now).
"""

import os
import signal

import anyio
from anyio.abc import Process

__all__ = ["SIGTERM_GRACE", "STDIN_EOF_GRACE", "close_process", "kill_group", "stop_process"]

STDIN_EOF_GRACE = 1.0  # seconds a child gets to exit on its own once stdin closes
SIGTERM_GRACE = 1.5  # then SIGTERM to the group, then SIGKILL
_EXIT_POLL = 0.01
_STREAM_ERRORS = (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError)


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> bool:
    """Signal a whole process group; False if it no longer exists (or is not ours to signal)."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def _exited(process: Process, within: float) -> bool:
    with anyio.move_on_after(within):
        # Polled, not process.wait(): that also waits for pipe EOF, which a grandchild holding
        # our pipes would delay past the grace period.
        while process.returncode is None:  # noqa: ASYNC110
            await anyio.sleep(_EXIT_POLL)
        return True
    return False


async def stop_process(process: Process, *, graceful: bool = True) -> None:
    """Close stdin, wait, SIGTERM the group, wait, SIGKILL the group. Bounded; never raises.

    Not ``graceful``: SIGKILL the group at once.
    """
    if not graceful:
        kill_group(process.pid, signal.SIGKILL)
    try:
        if process.stdin is not None:
            await process.stdin.aclose()
    except _STREAM_ERRORS:
        pass
    if not await _exited(process, STDIN_EOF_GRACE):
        kill_group(process.pid, signal.SIGTERM)
        if not await _exited(process, SIGTERM_GRACE):
            kill_group(process.pid, signal.SIGKILL)
            await _exited(process, SIGTERM_GRACE)
    # Grandchildren outlive a leader that exits promptly; the group kill reaches them.
    kill_group(process.pid, signal.SIGKILL)
    for stream in (process.stdout, process.stderr):
        try:
            if stream is not None:
                await stream.aclose()
        except _STREAM_ERRORS:
            pass
    if process.returncode is not None:
        with anyio.move_on_after(SIGTERM_GRACE):
            await process.aclose()


async def close_process(process: Process, *, kill: bool, within: float) -> None:
    """Reap a short-lived child (a hook), SIGKILLing its group first when ``kill``. Shielded."""
    with anyio.CancelScope(shield=True):
        if kill:
            kill_group(process.pid)
        with anyio.move_on_after(within):
            await process.aclose()
