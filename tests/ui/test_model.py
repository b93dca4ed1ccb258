"""The UI's own logic without a daemon: coalesced re-reads."""

import anyio
import pytest

pytest.importorskip("textual")

from mework_ui.model import Coalescer

pytestmark = pytest.mark.anyio


async def test_a_burst_costs_one_reread_and_late_marks_one_more() -> None:
    stale, reads = Coalescer(), []
    entered, release = anyio.Event(), anyio.Event()

    async def reread(parts: set[str]) -> None:
        reads.append(parts)
        entered.set()
        if len(reads) == 1:
            await release.wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stale.run, reread)
        for _ in range(50):
            stale.mark("servers")
        stale.mark("settings")
        with anyio.fail_after(5):
            await entered.wait()
        for _ in range(20):  # while the first read runs: kept for exactly one more
            stale.mark("servers")
        release.set()
        with anyio.fail_after(5):
            while stale.rounds < 2:
                await anyio.lowlevel.checkpoint()
        tg.cancel_scope.cancel()
    assert reads == [{"servers", "settings"}, {"servers"}]
