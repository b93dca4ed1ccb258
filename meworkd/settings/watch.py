"""Watching the settings file for changes made by hand: watchfiles' ``awatch``, in one place.

It watches the directory, not the file, so an editor's replace-by-rename is seen as well. When
the path is a symbolic link, the directory of its target is watched too (edits happen there);
when that directory does not exist yet, its nearest existing ancestor is watched for the next
missing component. The watch follows the link when it is pointed elsewhere or its target's
directory appears.

Idle, the watcher has no time-out: watchfiles' thread waits in Rust until a change or the stop
event, so nothing wakes the event loop while the file is left alone (the Rust loop itself still
checks the stop event every ``WATCH_STEP_MS``, which bounds how long stopping takes). Cancelling
sets the stop event first, since cancelling waits for that thread.

``awatch`` arms inotify when it is first iterated: an edit made before that (after the store's
first read) is not among the changes inotify reports. The Rust loop asks the stop event whether
to stop before anything else, so its first question proves the watch armed, and ``on_change``
runs once then regardless (the store ignores a read whose bytes it already has). Only after
that does the watch report itself started, so no read of the file is still to come once the
daemon says it is ready.
"""

import contextlib
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import cast

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.abc import TaskStatus
from watchfiles import Change, awatch

__all__ = ["WATCH_DEBOUNCE_MS", "WATCH_STEP_MS", "watch_file"]

# watchfiles yields after STEP ms of quiet, at the latest after DEBOUNCE ms of continuous edits:
# an editor's save (often several writes) is applied once, well within a quarter second.
WATCH_STEP_MS = 30
WATCH_DEBOUNCE_MS = 300
_NO_TIMEOUT = 0  # watchfiles' rust_timeout: wait for a change (or the stop event) however long

_Watched = frozenset[tuple[str, str]]  # (directory, name) pairs whose changes concern the file


def _nearest_existing(target: Path) -> tuple[str, str] | None:
    """(directory, name) of ``target`` if its directory exists, else of the first missing
    ancestor in the nearest existing directory, whose creation must be seen."""
    child = target
    for parent in target.parents:
        if parent.is_dir():
            return str(parent), child.name
        child = parent
    return None


def _watched(path: Path) -> _Watched:
    """The path's own entry and, for a symbolic link, its target's (or, while the target's
    directory is missing, where that directory will appear)."""
    wanted = {(str(path.parent), path.name)}
    if os.path.islink(path):
        target = Path(os.path.realpath(path))  # not strict: a loop or a missing end is fine
        if (entry := _nearest_existing(target)) is not None:
            wanted.add(entry)
    return frozenset(wanted)


class _ArmedProbe:
    """The stop event as watchfiles' thread sees it: it passes ``stop`` through, and the
    thread's first question (asked once inotify is armed) sets ``armed`` in the event loop."""

    def __init__(self, stop: anyio.Event, armed: anyio.Event) -> None:
        self._stop = stop
        self._armed = armed
        self._token = anyio.lowlevel.current_token()
        self._asked = False

    def is_set(self) -> bool:
        if not self._asked:
            self._asked = True
            anyio.from_thread.run_sync(self._armed.set, token=self._token)
        return self._stop.is_set()

    def set(self) -> None:  # awatch sets its stop event when it is cancelled
        self._stop.set()


async def watch_file(
    path: Path,
    on_change: Callable[[], Awaitable[object]],
    stop: anyio.Event,
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Await ``on_change`` after each burst of changes to ``path``, until ``stop`` is set or this
    is cancelled; ``stop`` is set on the way out.

    Started once the first watch is armed and an edit made before it is applied: from then on
    no read of the file is still to come, so a daemon that says it is ready is quiet (a read
    after READY raced with the accept loop's reserve descriptor when out of descriptors).
    """
    ready = _Once(task_status.started)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_stop_when_cancelled, stop)
            while not stop.is_set():
                await _watch_until_relinked(path, on_change, stop, ready)
    finally:
        stop.set()
        ready()  # (a watch that ended before it was armed: its starter hears the cause)


class _Once:
    """Call ``action`` the first time this is called, never again."""

    def __init__(self, action: Callable[[], object]) -> None:
        self._action: Callable[[], object] | None = action

    def __call__(self) -> None:
        if self._action is not None:
            action, self._action = self._action, None
            action()


async def _stop_when_cancelled(stop: anyio.Event) -> None:
    """Set ``stop`` when the watch is cancelled: the thread then returns within a step."""
    try:
        await stop.wait()
    finally:
        stop.set()


async def _watch_until_relinked(
    path: Path, on_change: Callable[[], Awaitable[object]], stop: anyio.Event, ready: _Once
) -> None:
    """One ``awatch`` of what ``path`` resolves to now, until ``stop`` or a change of that."""
    wanted = _watched(path)

    def concerns_the_file(_change: Change, changed: str) -> bool:
        return (os.path.dirname(changed), os.path.basename(changed)) in wanted

    armed = anyio.Event()
    changes = awatch(
        *sorted({directory for directory, _name in wanted}),
        watch_filter=concerns_the_file,
        debounce=WATCH_DEBOUNCE_MS,
        step=WATCH_STEP_MS,
        rust_timeout=_NO_TIMEOUT,
        # awatch calls only is_set() and set() on it; its annotation names the event classes.
        stop_event=cast(anyio.Event, _ArmedProbe(stop, armed)),
        recursive=False,
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(_catch_up_once_armed, armed, on_change, stop, ready)
        async with contextlib.aclosing(changes):
            async for _batch in changes:
                await on_change()
                if _watched(path) != wanted:
                    break  # the link was made, removed or re-pointed: watch anew


async def _catch_up_once_armed(
    armed: anyio.Event, on_change: Callable[[], Awaitable[object]], stop: anyio.Event, ready: _Once
) -> None:
    """Apply an edit made before the watch was armed (its change was not reported)."""
    try:
        await armed.wait()
        if not stop.is_set():
            await on_change()
        ready()
    except BaseException:
        stop.set()  # a failure ends the watch, and only a set stop lets its thread return
        raise
