"""mework_client.aio against the real daemon: replies split over many reads, and events that
nobody reads never stop the replies."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mework_client.aio import connect

from tests.daemon_helpers import PY, start_daemon

pytestmark = pytest.mark.anyio


async def test_a_reply_larger_than_many_reads_arrives_whole(short_tmp: Path) -> None:
    note = "n" * (3 * 1024 * 1024 + 7)  # kept as an unknown key; several 256 KiB reads
    async with start_daemon(short_tmp, {}) as (_d, sock), connect(sock) as c:
        await c.call("servers.add", {"name": "s", "server": {"command": PY, "x-note": note}})
        got = await c.call("servers.get", {"name": "s"})
        assert got["server"]["x-note"] == note
        assert (await c.call("daemon.status"))["pid"] > 0


async def test_events_nobody_reads_do_not_stop_replies(short_tmp: Path) -> None:
    async with start_daemon(short_tmp, {}) as (_d, sock), connect(sock) as c:
        await c.subscribe()
        c.event_stream.close()  # the frontend stopped listening but keeps calling
        with anyio.fail_after(20):
            for i in range(20):  # each write publishes settings events nobody takes
                await c.call("servers.add", {"name": f"s{i}", "server": {"command": PY}})
            listed = await c.call("servers.list")
        assert len(listed["servers"]) == 20
        assert not c.closed.is_set()
