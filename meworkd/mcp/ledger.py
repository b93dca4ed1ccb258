"""The pid ledger: which server process groups this daemon started, so a daemon that starts
after a crash of the previous one can kill what it left behind.

Each entry records the process's start time (from ``/proc``) so a pid that the kernel has since
given to an unrelated process is never killed. The ledger names its owner (the daemon's socket,
which its successor shares): each owner has a file of its own, so two daemons that share a state
directory by mistake never reap each other's children, and an entry of another owner is left.
"""

import hashlib
import json
import os
from pathlib import Path

from meworkd.base.log import get_logger
from meworkd.base.private import write_private
from meworkd.base.procgroup import kill_group, process_start_time

__all__ = ["LedgerUnwritable", "PidLedger", "process_start_time"]

log = get_logger("meworkd.procs")


class LedgerUnwritable(Exception):
    """A child could not be recorded (the state dir is full or read-only); it must not run."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.strerror or type(error).__name__)  # no paths: a client reads it


class PidLedger:
    def __init__(self, path: Path, owner: str) -> None:
        """``path``: the ledgers' base name in the state dir; ``owner``: who this daemon is."""
        tag = hashlib.sha256(owner.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        self.path = path.with_name(f"{path.stem}-{tag}{path.suffix}")
        self.owner = owner
        self._entries: dict[int, dict[str, object]] = {}

    def add(self, pid: int, server: str) -> None:
        """Record ``pid``; on failure nothing is recorded and the caller must stop the child.

        Raises:
            LedgerUnwritable: the ledger file could not be written.
        """
        start = process_start_time(pid)
        self._entries[pid] = {"server": server, "start": start, "owner": self.owner}
        try:
            self._save()
        except OSError as exc:
            del self._entries[pid]
            raise LedgerUnwritable(exc) from exc

    def remove(self, pid: int) -> None:
        if self._entries.pop(pid, None) is not None:
            try:
                self._save()
            except OSError as exc:
                # A stale entry is harmless: the start time keeps a successor off a reused pid.
                log.warning("procs.ledger_write_failed", pid=pid, error=str(exc))

    def _save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        write_private(tmp, json.dumps({str(k): v for k, v in self._entries.items()}).encode())
        os.replace(tmp, self.path)

    def reap_leftovers(self) -> list[int]:
        """Kill the process groups a previous daemon recorded and that still run. Synchronous."""
        try:
            stale = json.loads(self.path.read_text())
        except (OSError, ValueError):
            stale = None
        if not isinstance(stale, dict):
            return []
        reaped: list[int] = []
        for key, entry in stale.items():
            if not isinstance(entry, dict) or entry.get("owner") != self.owner:
                continue  # another daemon's: never ours to stop
            pid = int(key)
            start = entry.get("start")
            now = process_start_time(pid)
            if now is not None and now != start:
                continue  # the pid belongs to an unrelated process now
            # The leader may have exited while its group lives on: the group id is the old pid,
            # which the kernel does not hand out again while the group exists.
            if (now is not None or _group_exists(pid)) and kill_group(pid):
                reaped.append(pid)
        if reaped:
            log.warning("procs.reaped_leftovers", pids=reaped)
        self._entries = {}
        self._save()
        return reaped


def _group_exists(pgid: int) -> bool:
    """Whether some process still has process group ``pgid`` (and it is ours to signal)."""
    # A context manager: returning from inside a bare scandir() loop leaves the iterator (and
    # its directory fd) open until garbage collection, with a ResourceWarning.
    with os.scandir("/proc") as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    return True
            except (ProcessLookupError, PermissionError):
                continue
    return False
