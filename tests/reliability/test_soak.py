"""The soak: the normal run's faults, many times over, with the daemon's memory watched.

Skipped unless ``MEWORKD_SOAK=1`` (it takes several minutes). With the flag, the other modules
also run longer: five times the hypothesis examples, a 3000-step settings race and a 60 s load.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from tests.reliability import figures
from tests.reliability.harness import (
    FAKE,
    bound_name,
    call,
    new_mark,
    server_entry,
    text_of,
    wait_marked_gone,
)

pytestmark = pytest.mark.skipif(
    not figures.SOAK, reason="soak: set MEWORKD_SOAK=1 (several minutes)"
)
ROUNDS = 20
WARMUP_ROUNDS = 3
RSS_GROWTH_BOUND = 48 * 1024 * 1024


@pytest.mark.anyio
@pytest.mark.timeout(900)
async def test_repeated_faults_keep_memory_flat(spawn_daemon: Any) -> None:
    d = spawn_daemon()
    mark = new_mark()
    d.write_settings({"k": server_entry(FAKE, mark=mark, timeout=20)})
    await anyio.to_thread.run_sync(d.start)
    samples: list[int] = []
    started = time.monotonic()
    async with d.connect() as client:
        for round_ in range(ROUNDS):
            conv = await call(
                client,
                "conversations.create",
                {"mcpServers": ["k"], "approvalLevel": "full_access"},
            )
            turn = await call(client, "turns.begin", {"conversationId": conv["id"]})

            async def tool(name: str, args: dict[str, Any], turn: dict[str, Any] = turn) -> Any:
                return await call(
                    client,
                    "turns.callTool",
                    {
                        "turnId": turn["turnId"],
                        "name": bound_name(turn, "k", name),
                        "arguments": args,
                    },
                )

            await tool("flood_stderr", {"bytes": figures.FLOOD_BYTES})
            big = await tool("big", {"bytes": figures.BIG_REPLY_BYTES})
            assert big["isError"], big
            died = await tool("die", {})
            assert died["isError"], died
            echo = await tool("echo", {"text": f"round {round_}"})
            assert text_of(echo) == f"round {round_}"
            await call(client, "conversations.delete", {"id": conv["id"]})
            await wait_marked_gone(mark)
            samples.append(d.rss())
    growth = max(samples[WARMUP_ROUNDS:]) - samples[WARMUP_ROUNDS - 1]
    figures.record(
        "soak",
        rounds=ROUNDS,
        seconds=round(time.monotonic() - started, 1),
        rss_mib=[round(s / 2**20, 1) for s in samples],
        rss_growth_after_warmup_mib=round(growth / 2**20, 1),
    )
    assert growth < RSS_GROWTH_BOUND, [s >> 20 for s in samples]
    assert d.stop() == 0
