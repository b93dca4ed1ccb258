"""Issue 14, points 7 and 8: nothing the daemon did goes unaccounted, not even across a SIGKILL.

* A call that was running and one that waited for approval when the daemon was SIGKILLed are in
  the audit after the next start, marked ``interrupted``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest
from mework_client.aio import AsyncClient

from tests.reliability import figures
from tests.reliability.harness import (
    BOUND,
    KITCHEN,
    DaemonProc,
    begin,
    bound_name,
    call,
    new_mark,
    server_entry,
)
from tests.turn_helpers import Harness, document, kitchen, mw_fixture  # noqa: F401

pytestmark = pytest.mark.anyio


async def _call_until_lost(client: AsyncClient, params: dict[str, Any]) -> None:
    """A call whose daemon is about to be SIGKILLed: its reply never comes."""
    try:
        await client.call("turns.callTool", params)
    except Exception:
        pass


async def test_sigkill_leaves_no_call_unaccounted(spawn_daemon: Callable[..., DaemonProc]) -> None:
    d = spawn_daemon()
    d.write_settings({"k": server_entry(KITCHEN, mark=new_mark(), timeout=60)})
    d.start()
    async with d.connect() as client:
        await client.subscribe(["approval.requested", "turn.progress"])
        running = await begin(client, ["k"], "full_access")
        asking = await begin(client, ["k"], "request_approval")
        async with anyio.create_task_group() as tg:
            slow = bound_name(running, "k", "slow")
            echo = bound_name(asking, "k", "echo")
            tg.start_soon(
                _call_until_lost,
                client,
                {"turnId": running["turnId"], "name": slow, "arguments": {"seconds": 60}}
                | {"callId": "running"},
            )
            tg.start_soon(
                _call_until_lost,
                client,
                {"turnId": asking["turnId"], "name": echo, "arguments": {"text": "x"}}
                | {"callId": "asking"},
            )
            # The server is running the one (it reports progress), the user is asked the other.
            seen: set[str] = set()
            with anyio.fail_after(BOUND):
                while seen != {"approval.requested", "turn.progress"}:
                    topic, _data = await client.event_stream.receive()
                    seen.add(topic)
            d.kill()
    d.start()
    async with d.connect() as client:
        entries = (await call(client, "audit.list", {}))["entries"]
    by_call = {e["callId"]: e for e in entries}
    assert set(by_call) == {"running", "asking"}, entries
    for entry in by_call.values():
        assert (entry["decision"], entry["decidedBy"]) == ("interrupted", "interrupted"), entry
        assert "meworkd stopped" in entry["reason"]
    figures.record("trust", sigkill_calls_marked_interrupted=len(by_call))
