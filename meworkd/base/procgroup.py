"""Process groups: the one routine that signals a child's whole group and stops it within a bound.

Every child meworkd starts (MCP servers, hook commands) leads a process group of its own, so a
grandchild cannot outlive it. The escalation is the MCP SDK's: close stdin, poll the exit status,
SIGTERM the group, SIGKILL what is left. ``ProcessLookupError`` means gone; ``PermissionError``
is never proof of life (the pid may belong to someone else's process by now).

A helper that leaves the group (``setsid``) or double-forks escapes a group kill: the server's
whole tree is taken from ``/proc`` before it is stopped and killed by pid afterwards, and the
daemon is a child subreaper (:func:`become_subreaper`), so what a dying process leaves behind
becomes the daemon's child (killed and reaped with the session it came from) instead of init's.
Which session an adopted helper came from is read from its environment (:data:`SESSION_VAR`, set
for every server started); one that cleared its environment is attributed by start time.
"""

import ctypes
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process

__all__ = [
    "SESSION_VAR",
    "SIGTERM_GRACE",
    "STDIN_EOF_GRACE",
    "STREAM_ERRORS",
    "Tree",
    "become_subreaper",
    "close_process",
    "kill_group",
    "kill_tree",
    "open_group",
    "orphans",
    "process_start_time",
    "process_tree",
    "stop_process",
    "track",
    "untrack",
]

STDIN_EOF_GRACE = 1.0  # seconds a child gets to exit on its own once stdin closes
SIGTERM_GRACE = 1.5  # then SIGTERM to the group, then SIGKILL
_EXIT_POLL = 0.01
# A pipe or stream the other side closed (or that we closed).
STREAM_ERRORS = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


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
    except STREAM_ERRORS:
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
        except STREAM_ERRORS:
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
        untrack(process.pid)


# --- whole trees --------------------------------------------------------------------------------

_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
_REAP_BOUND = 2.0  # seconds for SIGKILLed processes to die before they are left to later sweeps

# Tags a server's environment with its session's random id; helpers inherit it, which tells
# whose an adopted helper is when several sessions run (start times alone cannot).
SESSION_VAR = "MEWORKD_SESSION"
_SESSION_PREFIX = SESSION_VAR.encode() + b"="

# Processes of a tree: pid -> start time (clock ticks since boot), so a reused pid is never hit.
Tree = dict[int, int]


def become_subreaper() -> bool:
    """Make this process the child subreaper of everything it starts; False if refused."""
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)


def process_start_time(pid: int) -> int | None:
    """The start time of ``pid`` in clock ticks since boot, or None if it is gone."""
    stat = _stat(pid)
    return None if stat is None else stat[2]


def is_subreaper() -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    flag = ctypes.c_int(0)
    if libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) != 0:
        return False
    return flag.value != 0


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state letter, start time) of ``pid`` from ``/proc``, or None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name may contain spaces and parentheses: fields start after the last ")".
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[1]), fields[0], int(fields[19])


def _processes() -> dict[int, tuple[int, str, int]]:
    table: dict[int, tuple[int, str, int]] = {}
    with os.scandir("/proc") as entries:
        for entry in entries:
            if entry.name.isdigit():
                stat = _stat(int(entry.name))
                if stat is not None:
                    table[int(entry.name)] = stat
    return table


# Children this process started (servers, hooks) and that still run: pid -> start time.
_started: Tree = {}


async def open_group(command: Sequence[str], **kwargs: Any) -> Process:
    """Start ``command`` leading a process group and session of its own, as a child we track."""
    process = await anyio.open_process(command, start_new_session=True, **kwargs)
    track(process.pid)
    return process


def track(pid: int) -> None:
    """Note a child this process has just started (it is nobody's orphan)."""
    start = process_start_time(pid)
    if start is not None:
        _started[pid] = start


def untrack(pid: int) -> None:
    _started.pop(pid, None)


def process_tree(root: int, session: str | None = None) -> Tree:
    """What stopping ``root`` must also stop: its descendants, whatever group or session.

    As a subreaper this process also adopted the helpers whose parent exited (double forks).
    An adopted one whose environment names a session (:data:`SESSION_VAR`) is ``root``'s
    exactly when that is ``session``; one without (it cleared its environment, or it cannot be
    read) counts as ``root``'s when no other child of ours that still runs was started before
    it, so another session's helper is never taken for this one's.
    """
    table = _processes()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _state, _start) in table.items():
        children.setdefault(ppid, []).append(pid)
    roots = [root]
    since = _started.get(root)
    if since is not None and is_subreaper():
        others = [start for pid, start in _started.items() if pid != root]
        for pid in children.get(os.getpid(), []):
            start = table[pid][2]
            if pid in _started:
                continue
            tag = _session_of(pid)
            if tag is not None:
                if tag == session:
                    roots.append(pid)
            elif start >= since and all(o > start for o in others):
                roots.append(pid)
    tree: Tree = {}
    while roots:
        pid = roots.pop()
        if pid != root and pid in table:
            tree[pid] = table[pid][2]
        roots += [child for child in children.get(pid, []) if child not in tree]
    return tree


def _session_of(pid: int) -> str | None:
    """The session ``pid``'s environment names, or None (none, gone, or not ours to read)."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    for entry in environ.split(b"\0"):
        if entry.startswith(_SESSION_PREFIX):
            return entry[len(_SESSION_PREFIX) :].decode("ascii", "replace")
    return None


def orphans() -> Tree:
    """As a subreaper: the adopted children that are no child's of ours, and their trees."""
    if not is_subreaper():
        return {}
    me = os.getpid()
    table = _processes()
    tree: Tree = {}
    pending = [pid for pid, (ppid, _s, _t) in table.items() if ppid == me and pid not in _started]
    while pending:
        pid = pending.pop()
        tree[pid] = table[pid][2]
        pending += [c for c, (ppid, _s, _t) in table.items() if ppid == pid and c not in tree]
    return tree


async def kill_tree(tree: Tree) -> None:
    """SIGKILL every process of ``tree`` still running, and reap those that are our children."""
    mine: list[int] = []
    for pid, start in tree.items():
        stat = _stat(pid)
        if stat is None or stat[2] != start:
            continue  # gone, or the pid is someone else's now
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
        if stat[0] == os.getpid():
            mine.append(pid)
    # Re-parented ones are ours to wait for: until then they are zombies.
    with anyio.move_on_after(_REAP_BOUND):
        while mine:
            mine = [pid for pid in mine if not _reaped(pid)]
            if mine:
                await anyio.sleep(_EXIT_POLL)


def _reaped(pid: int) -> bool:
    try:
        done, _status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True  # not (or no longer) our child to wait for
    return done != 0
