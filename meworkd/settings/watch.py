"""Watching the settings file for changes made by hand: watchfiles' ``RustNotify``, in one place.

``RustNotify`` is used directly rather than ``awatch`` so that readiness can be reported once the
inotify watch is in place (``awatch`` only starts it on first iteration, and an edit made in
between would be missed); watchfiles documents this direct use. It watches the directory, so an
editor's replace-by-rename is seen as well.
"""

import functools
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from anyio.abc import TaskStatus
from watchfiles._rust_notify import RustNotify

__all__ = ["WATCH_DEBOUNCE_MS", "WATCH_RUST_TIMEOUT_MS", "WATCH_STEP_MS", "watch_file"]

# watchfiles yields after STEP ms of quiet, at the latest after DEBOUNCE ms of continuous edits:
# an editor's save (often several writes) is applied once, well within a quarter second.
WATCH_STEP_MS = 30
WATCH_DEBOUNCE_MS = 300
WATCH_RUST_TIMEOUT_MS = 500  # bounds how long cancelling the watcher waits for its thread


async def watch_file(
    path: Path,
    on_change: Callable[[], Awaitable[object]],
    stop: anyio.Event,
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Await ``on_change`` after each burst of changes to ``path``, until ``stop`` is set or this
    is cancelled; ``stop`` is set on the way out. Started (``task_status``) once watching."""
    name = path.name
    with RustNotify(
        watch_paths=[str(path.parent)],
        debug=False,
        force_polling=False,
        poll_delay_ms=300,
        recursive=False,
        ignore_permission_denied=False,
    ) as watcher:
        wait = functools.partial(
            watcher.watch,
            debounce_ms=WATCH_DEBOUNCE_MS,
            step_ms=WATCH_STEP_MS,
            timeout_ms=WATCH_RUST_TIMEOUT_MS,
            stop_event=stop,
        )
        task_status.started()
        try:
            while True:
                raw = await anyio.to_thread.run_sync(wait)
                if raw == "stop":
                    return
                if isinstance(raw, str):  # "timeout" or "signal": nothing changed
                    continue
                if any(os.path.basename(changed) == name for _change, changed in raw):
                    await on_change()
        finally:
            stop.set()
