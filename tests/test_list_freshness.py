"""What 2026-07-28 gives a long-lived client (issue 30.3): a ``tools/list`` that says how long it
stays fresh (``ttlMs``) is reused by the next turns of that session, so a warm turn start asks
no server again; a change the server announces on its ``subscriptions/listen`` stream drops it
at once, so the next turn lists afresh and sees the new tool.

The servers are kitchen.py behind the 2026-07-28-only relay, with ``--ttl-ms``: each tools/list
they answer is a stderr line, which ``servers.logs`` counts.
"""

import sys
from typing import Any

import anyio
import pytest

from meworkd.mcp.listcache import ListingCache
from meworkd.mcp.listfollow import listed_changes
from tests.daemon_helpers import MODERN_ONLY
from tests.servers.kitchen import FLOOD_LINE
from tests.turn_helpers import (
    Harness,
    bound,
    document,
    mw_fixture,  # noqa: F401  (the mw fixture)
    start_call,
    wait_event,
)

pytestmark = pytest.mark.anyio

SERVERS = ("f1", "f2")
MARK = FLOOD_LINE.decode()[:9]


def fresh_for(ttl_ms: int) -> dict[str, Any]:
    return {"command": sys.executable, "args": [MODERN_ONLY, "--ttl-ms", str(ttl_ms)]}


async def lists_asked(mw: Harness, events: Any, turn: dict[str, Any], server: str) -> int:
    """How many tools/list the server answered so far. Its stderr is read apart from its
    replies, so a marker line is written after them and waited for first."""
    flood = bound(turn, server)["flood_stderr"]
    params = {"turnId": turn["turnId"], "name": flood, "arguments": {"bytes": 10}}
    await mw.call("turns.callTool", params)
    await wait_event(events, "server.log", lambda d: d["server"] == server and MARK in d["line"])
    logs = await mw.call("servers.logs", {"name": server})
    return sum(line["line"] == "kitchen: tools/list" for line in logs["lines"])


async def test_a_warm_turn_start_asks_no_server_while_the_lists_are_fresh(mw: Harness) -> None:
    await mw.start(document({name: fresh_for(600_000) for name in SERVERS}))
    events = await mw.connect(["server.changed", "server.log"])
    conversation = await mw.conversation(list(SERVERS))
    first = await mw.begin(conversation)
    for _ in range(3):  # warm starts
        again = await mw.begin(conversation)
        assert again["tools"] == first["tools"]
    assert [await lists_asked(mw, events, first, s) for s in SERVERS] == [1, 1]

    # f1 adds a tool and says so on its listen stream: its list is asked again, once.
    async with anyio.create_task_group() as tg:
        add = bound(first, "f1")["add_tool"]
        params = {"turnId": first["turnId"], "name": add, "arguments": {"name": "fresh"}}
        call = start_call(tg, mw.c, "turns.callTool", params)
        changed = await wait_event(events, "server.changed")
        assert (await call.wait())["isError"] is False
    assert (changed["server"], changed["list"]) == ("f1", "tools")
    after = await mw.begin(conversation)
    assert "fresh" in bound(after, "f1")
    await mw.begin(conversation)
    # f1: the turn's first list, the re-list on the change (servers.tools follows it), no more.
    assert [await lists_asked(mw, events, after, s) for s in SERVERS] == [2, 1]


async def test_a_list_with_no_freshness_is_asked_at_every_turn(mw: Harness) -> None:
    await mw.start(document({"f0": fresh_for(0)}))
    events = await mw.connect(["server.log"])
    conversation = await mw.conversation(["f0"])
    turns = [await mw.begin(conversation) for _ in range(3)]
    assert await lists_asked(mw, events, turns[-1], "f0") == 3


def test_the_listing_cache_keeps_a_list_its_time_and_drops_it_on_a_change() -> None:
    now = [100.0]
    cache = ListingCache(clock=lambda: now[0])
    token = cache.generation("tools")
    cache.keep("tools", ["a"], ttl_ms=2_000, generation=token)
    assert cache.get("tools") == ["a"]
    now[0] += 2.0
    assert cache.get("tools") is None  # stale at its time
    cache.keep("tools", ["a"], ttl_ms=0, generation=token)
    assert cache.get("tools") is None  # 0: immediately stale, never kept
    # A change announced while a listing was under way: that listing is not kept.
    token = cache.generation("tools")
    cache.forget("tools")
    cache.keep("tools", ["old"], ttl_ms=60_000, generation=token)
    assert cache.get("tools") is None
    cache.keep("tools", ["new"], ttl_ms=60_000, generation=cache.generation("tools"))
    assert cache.get("tools") == ["new"]
    cache.forget("tools")
    assert cache.get("tools") is None


def test_a_stream_is_opened_only_for_the_lists_a_server_announces() -> None:
    import mcp_types as types

    capabilities = types.ServerCapabilities(
        tools=types.ToolsCapability(list_changed=True),
        prompts=types.PromptsCapability(list_changed=False),
    )
    assert listed_changes(capabilities) == {"tools": True, "prompts": False}
    assert listed_changes(None) == {}
