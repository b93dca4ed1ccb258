"""A server failing at a turn's discovery or at a call's reconnect (issue 18, point 7, G1).

``server.status`` ``failed`` (kind, sentence, redacted stderr tail) is published once per
failure wherever it is met, and ``servers.list`` keeps it as the server's ``lastError`` until
a later connection of it succeeds. One daemon for the module's one test.
"""

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mework_client.aio import AsyncClient

from tests.turn_helpers import (
    COUNTING,
    EVENT_TIMEOUT,
    Harness,
    bound,
    counting,
    document,
    mw_fixture,  # noqa: F401  (the mw fixture)
    text_of,
    wait_event,
)

pytestmark = pytest.mark.anyio

TOKEN = "tok-9f8e7d6c5b4a3210"
# Twelve lines of stderr, the last one quoting the server's own secret, then exit 3.
BROKEN = (
    "import os, sys\n"
    "for i in range(11): print(f'broken: line {i}', file=sys.stderr)\n"
    "print('broken: token=' + os.environ['API_TOKEN'], file=sys.stderr)\n"
    "sys.exit(3)\n"
)


def _flaky(flag: Path) -> dict[str, Any]:
    """The counting server, unless ``flag`` exists: then it says so and exits 4 at start-up."""
    script = (
        f'if [ -e "{flag}" ]; then echo "flaky: gone for good" >&2; exit 4; fi; '
        f'exec "{sys.executable}" "{COUNTING}"'
    )
    return {"command": "/bin/sh", "args": ["-c", script]}


async def _statuses_until(client: AsyncClient, server: str, status: str) -> list[dict[str, Any]]:
    """Every server.status event up to the first ``status`` of ``server``."""
    seen: list[dict[str, Any]] = []
    with anyio.fail_after(EVENT_TIMEOUT):
        while not seen or (seen[-1]["server"], seen[-1]["status"]) != (server, status):
            topic, data = await client.event_stream.receive()
            if topic == "server.status":
                seen.append(data)
    return seen


async def _last_errors(mw: Harness) -> dict[str, Any]:
    listed = (await mw.call("servers.list"))["servers"]
    return {entry["name"]: entry["lastError"] for entry in listed}


async def test_failures_are_published_once_and_kept_until_the_server_connects(
    mw: Harness,
) -> None:
    flag = mw.root / "flaky-down"
    broken = {"command": sys.executable, "args": ["-c", BROKEN], "env": {"API_TOKEN": TOKEN}}
    await mw.start(document({"broken": broken, "flaky": _flaky(flag)}))
    events = await mw.connect(["server.status"])
    conversation = await mw.conversation(["broken", "flaky"])
    assert await _last_errors(mw) == {"broken": None, "flaky": None}

    # At a turn's discovery: one failed event, the turn's failure with the same kind.
    turn = await mw.begin(conversation)
    (failure,) = turn["failures"]
    assert (failure["server"], failure["kind"]) == ("broken", "exited")
    await mw.call("servers.closeSessions", {"name": "flaky"})  # a marker: its closed event
    seen = await _statuses_until(events, "flaky", "closed")
    (failed,) = [e for e in seen if e["status"] == "failed"]
    tail = [f"broken: line {i}" for i in range(2, 11)] + ["broken: token=[redacted]"]
    assert failed == {
        "server": "broken",
        "conversation": conversation,
        "status": "failed",
        "kind": "exited",
        "error": failure["reason"],
        "stderrTail": tail,  # the last ten lines, the secret redacted
    }
    assert TOKEN not in json.dumps(seen)
    last = await _last_errors(mw)
    assert last["flaky"] is None
    assert {k: v for k, v in last["broken"].items() if k != "time"} == {
        "kind": "exited",
        "error": failure["reason"],
        "stderrTail": tail,
        "conversation": conversation,
    }
    assert last["broken"]["time"].endswith("Z")
    got = await mw.call("servers.get", {"name": "broken"})
    assert got["lastError"] == last["broken"]

    # At conversations.prepare: the same shape.
    alone = await mw.conversation(["broken"])
    await mw.call("conversations.prepare", {"conversationId": alone})
    prepared = await wait_event(events, "server.status", lambda d: d["status"] == "failed")
    assert prepared == {**failed, "conversation": alone}

    # At a call whose session must open again: the server died, and now fails to start.
    n = bound(turn, "flaky")
    assert text_of(await mw.tool(turn, n["echo"], {"text": "up"})) == "up"
    await _statuses_until(events, "flaky", "connected")  # (reconnected after the marker)
    flag.touch()
    os.kill(mw.pid(conversation, "flaky"), signal.SIGKILL)
    await _statuses_until(events, "flaky", "closed")
    reply = await mw.tool(turn, n["echo"], {"text": "again"})
    assert reply["isError"] is True
    assert (await _last_errors(mw))["flaky"]["stderrTail"] == ["flaky: gone for good"]

    # Fixed, and connected again: its last error is cleared.
    flag.unlink()
    assert text_of(await mw.tool(turn, n["echo"], {"text": "back"})) == "back"
    seen = await _statuses_until(events, "flaky", "connected")
    (down,) = [e for e in seen if e["status"] == "failed"]
    assert down == {
        "server": "flaky",
        "conversation": conversation,
        "status": "failed",
        "kind": "exited",
        "error": "the server exited with code 4 during start-up",
        "stderrTail": ["flaky: gone for good"],
    }
    await mw.call("servers.update", {"name": "broken", "patch": {"args": counting()["args"]}})
    assert (await mw.begin(conversation))["failures"] == []
    assert await _last_errors(mw) == {"broken": None, "flaky": None}
