"""meworkd.rpc.handoff: the reader's lines reach idle workers in order, and closing ends them.

The behaviour that matters through the socket (requests of one connection run concurrently,
every line is answered once) is in tests/test_rpc.py; these pin the hand-off's own rules.
"""

import anyio
import pytest

from meworkd.rpc.handoff import Handoff

pytestmark = pytest.mark.anyio

WAIT = 5.0


async def test_lines_go_to_the_worker_idle_longest_then_none_is_idle() -> None:
    jobs = Handoff()
    assert not jobs.give(b"nobody waits")
    got: list[tuple[int, bytes | None]] = []
    waiting = [anyio.Event(), anyio.Event()]

    async def worker(number: int) -> None:
        waiting[number].set()  # (just before it takes: idle once the test sees this)
        got.append((number, await jobs.take()))

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker, 0)
            await waiting[0].wait()
            tg.start_soon(worker, 1)
            await waiting[1].wait()
            assert jobs.give(b"first")
            assert jobs.give(b"second")
            assert not jobs.give(b"third")
    assert got == [(0, b"first"), (1, b"second")]


async def test_close_ends_idle_workers_and_later_takes() -> None:
    jobs = Handoff()
    got: list[bytes | None] = []
    idle = anyio.Event()

    async def worker() -> None:
        idle.set()
        got.append(await jobs.take())

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker)
            await idle.wait()  # (set just before the worker takes: it is idle now)
            jobs.close()
    assert got == [None]
    assert await jobs.take() is None
    assert not jobs.give(b"after close")


async def test_a_cancelled_idle_worker_gets_no_line() -> None:
    jobs = Handoff()
    with anyio.move_on_after(0):
        await jobs.take()
    # Nobody is idle any more: the reader must start a worker for the next line.
    assert not jobs.give(b"line")
