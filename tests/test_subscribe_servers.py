"""events.subscribe filtered by server, and servers.closeSessions (what the terminal UI uses)."""

from pathlib import Path
from typing import Any

import anyio
import pytest
from mework_client import RpcError
from mework_client.aio import AsyncClient, connect

from tests.common import fake
from tests.daemon_helpers import BOUND, start_daemon

pytestmark = pytest.mark.anyio


async def events_until(client: AsyncClient, last: str) -> list[tuple[str, Any]]:
    """Every event up to and including the first of topic ``last`` (events arrive in order)."""
    seen: list[tuple[str, Any]] = []
    with anyio.fail_after(BOUND):
        while not seen or seen[-1][0] != last:
            seen.append(await client.next_event())
    return seen


async def test_one_servers_events_and_closing_its_sessions(short_tmp: Path) -> None:
    async with (
        start_daemon(short_tmp, {"a": fake(), "b": fake(), "c": fake()}) as run,
        connect(run.socket) as only_a,
        connect(run.socket) as control,
    ):
        reply = await only_a.call(
            "events.subscribe", {"topics": ["server.status", "settings.reloaded"], "servers": ["a"]}
        )
        assert reply == {"topics": ["server.status", "settings.reloaded"], "servers": ["a"]}
        await control.call("conversations.create", {"id": "c1", "mcpServers": ["a", "b"]})
        await control.call("turns.begin", {"conversationId": "c1"})
        closed = await control.call("servers.closeSessions", {"name": "b"})
        assert closed == {"name": "b", "sessionsClosed": 1}
        closed = await control.call("servers.closeSessions", {"name": "a"})
        assert closed == {"name": "a", "sessionsClosed": 1}
        # An event about no server still arrives, after everything published before it.
        await control.call("servers.update", {"name": "c", "patch": {"description": "x"}})
        seen = await events_until(only_a, "settings.reloaded")
        statuses = [(d["server"], d["status"]) for t, d in seen if t == "server.status"]
        assert statuses == [("a", "connected"), ("a", "closed")]
        listed = {s["name"]: s["sessions"] for s in (await control.call("servers.list"))["servers"]}
        assert listed == {"a": 0, "b": 0, "c": 0}
        assert (await control.call("servers.closeSessions", {"name": "c"}))["sessionsClosed"] == 0
        with pytest.raises(RpcError) as missing:
            await control.call("servers.closeSessions", {"name": "nope"})
        assert missing.value.kind == "server_not_found"
        with pytest.raises(RpcError) as bad:
            await control.call("events.subscribe", {"servers": "a"})
        assert bad.value.kind == "invalid_params"
