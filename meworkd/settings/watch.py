"""Watching the settings file for changes made by hand: watchfiles' ``awatch``, in one place.

It watches the directory, not the file, so an editor's replace-by-rename is seen as well. When
the path is a symbolic link, the directory of its target is watched too (edits happen there),
and the watch follows the link when it is pointed elsewhere. ``awatch`` arms inotify on its
first iteration, after this has reported itself started: an edit made in that window is not
among the changes inotify reports. So the first batch, or the first quiet timeout, proves the
watch armed, and ``on_change`` runs once then regardless; the store ignores a read whose bytes
it already has.
"""

import contextlib
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from anyio.abc import TaskStatus
from watchfiles import Change, awatch

__all__ = ["WATCH_DEBOUNCE_MS", "WATCH_RUST_TIMEOUT_MS", "WATCH_STEP_MS", "watch_file"]

# watchfiles yields after STEP ms of quiet, at the latest after DEBOUNCE ms of continuous edits:
# an editor's save (often several writes) is applied once, well within a quarter second.
WATCH_STEP_MS = 30
WATCH_DEBOUNCE_MS = 300
# How often the watcher's thread wakes up when nothing changes: bounds how long cancelling it
# waits for that thread, and how late an edit made before the watch was armed is applied.
WATCH_RUST_TIMEOUT_MS = 500

_Watched = frozenset[tuple[str, str]]  # (directory, name) pairs whose changes concern the file


def _watched(path: Path) -> _Watched:
    """The path's own entry and, for a symbolic link, its target's (while that directory
    exists; a dangling link's target is watched so that creating it is seen)."""
    wanted = {(str(path.parent), path.name)}
    if os.path.islink(path):
        target = Path(os.path.realpath(path))  # not strict: a loop or a missing end is fine
        if target.parent.is_dir():
            wanted.add((str(target.parent), target.name))
    return frozenset(wanted)


async def watch_file(
    path: Path,
    on_change: Callable[[], Awaitable[object]],
    stop: anyio.Event,
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Await ``on_change`` after each burst of changes to ``path``, until ``stop`` is set or this
    is cancelled; ``stop`` is set on the way out."""
    started = False
    try:
        while not stop.is_set():
            wanted = _watched(path)

            def concerns_the_file(_change: Change, changed: str, wanted: _Watched = wanted) -> bool:
                return (os.path.dirname(changed), os.path.basename(changed)) in wanted

            changes = awatch(
                *sorted({directory for directory, _name in wanted}),
                watch_filter=concerns_the_file,
                debounce=WATCH_DEBOUNCE_MS,
                step=WATCH_STEP_MS,
                rust_timeout=WATCH_RUST_TIMEOUT_MS,
                yield_on_timeout=True,
                stop_event=stop,
                recursive=False,
            )
            if not started:
                task_status.started()
                started = True
            armed = False
            async with contextlib.aclosing(changes):
                async for batch in changes:
                    if batch or not armed:
                        armed = True
                        await on_change()
                    if _watched(path) != wanted:
                        break  # the link was made, removed or pointed elsewhere: watch anew
    finally:
        stop.set()
