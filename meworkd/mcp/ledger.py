"""The pid ledger: which server process groups this daemon started, so a daemon that starts
after a crash of the previous one can kill what it left behind.

Each entry records the process's start time (from ``/proc``) so a pid that the kernel has since
given to an unrelated process is never killed.
"""

import json
import os
from pathlib import Path

from meworkd.base.log import get_logger
from meworkd.base.private import write_private
from meworkd.base.procgroup import kill_group

__all__ = ["PidLedger", "process_start_time"]

log = get_logger("meworkd.procs")


def process_start_time(pid: int) -> int | None:
    """The start time of ``pid`` in clock ticks since boot, or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name may contain spaces and parentheses: fields start after the last ")".
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[19])


class PidLedger:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: dict[int, dict[str, object]] = {}

    def add(self, pid: int, server: str) -> None:
        self._entries[pid] = {"server": server, "start": process_start_time(pid)}
        self._save()

    def remove(self, pid: int) -> None:
        if self._entries.pop(pid, None) is not None:
            self._save()

    def _save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        write_private(tmp, json.dumps({str(k): v for k, v in self._entries.items()}).encode())
        os.replace(tmp, self.path)

    def reap_leftovers(self) -> list[int]:
        """Kill the process groups a previous daemon recorded and that still run. Synchronous."""
        try:
            stale = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return []
        reaped: list[int] = []
        for key, entry in stale.items():
            pid = int(key)
            start = entry.get("start") if isinstance(entry, dict) else None
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
