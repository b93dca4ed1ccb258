"""The settings watcher on real files and inotify: it catches up once armed, follows edits,
a symbolic link's target (also one whose directory appears later), and stops at once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from meworkd.settings.watch import watch_file

pytestmark = pytest.mark.anyio

BOUND = 10.0  # seconds; a watcher that misses a change fails here instead of hanging


class Changes:
    """What ``on_change`` saw: how many calls, and a way to wait for the next one."""

    def __init__(self) -> None:
        self.calls = 0
        self._next = anyio.Event()

    async def on_change(self) -> None:
        self.calls += 1
        self._next.set()
        self._next = anyio.Event()

    async def after(self, seen: int) -> None:
        """Wait until more than ``seen`` calls were made."""
        with anyio.fail_after(BOUND):
            while self.calls <= seen:
                await self._next.wait()


@asynccontextmanager
async def watching(path: Path) -> AsyncIterator[tuple[Changes, anyio.Event]]:
    changes, stop = Changes(), anyio.Event()
    async with anyio.create_task_group() as tg:
        await tg.start(watch_file, path, changes.on_change, stop)
        yield changes, stop
        stop.set()


async def test_an_edit_made_while_the_watch_arms_is_applied(short_tmp: Path) -> None:
    path = short_tmp / "settings.json"
    path.write_text("{}")
    async with watching(path) as (changes, _stop):
        path.write_text('{"a": 1}')  # perhaps before inotify was armed: the catch-up covers it
        await changes.after(0)
        seen = changes.calls
        path.write_text('{"a": 2}')  # the watch is armed now: this is a reported change
        await changes.after(seen)


async def test_a_link_is_followed_into_a_directory_made_later(short_tmp: Path) -> None:
    path = short_tmp / "settings.json"
    path.symlink_to("later/settings.json")
    async with watching(path) as (changes, _stop):
        await changes.after(0)  # armed
        seen = changes.calls
        (short_tmp / "later").mkdir()
        await changes.after(seen)  # the directory appeared: the watch now covers it
        seen = changes.calls
        (short_tmp / "later" / "settings.json").write_text("{}")
        await changes.after(seen)


async def test_cancelling_the_watch_returns_and_sets_stop(short_tmp: Path) -> None:
    path = short_tmp / "settings.json"
    path.write_text("{}")
    changes, stop = Changes(), anyio.Event()
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            await tg.start(watch_file, path, changes.on_change, stop)
            await changes.after(0)  # the thread is waiting in watchfiles, without a time-out
            tg.cancel_scope.cancel()
    assert stop.is_set()


async def test_a_failing_catch_up_ends_the_watch_with_its_error(short_tmp: Path) -> None:
    path = short_tmp / "settings.json"
    path.write_text("{}")

    async def broken() -> None:
        raise LookupError("on_change failed")

    stop = anyio.Event()
    with anyio.fail_after(BOUND), pytest.RaisesGroup(LookupError, flatten_subgroups=True):
        await watch_file(path, broken, stop)
    assert stop.is_set()
