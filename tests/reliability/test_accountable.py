"""Nothing the daemon did goes unaccounted, not even across a SIGKILL (issue 14, points 7 and 8).

* A call that was running and one that waited for approval when the daemon was SIGKILLed are in
  the audit after the next start, marked ``interrupted``.
* A server's helpers that leave its process group (``setsid``) or double-fork are stopped, and
  reaped, when the session closes: the daemon is a child subreaper. With several sessions, each
  double-forked helper goes with its own session (its environment names it), not the oldest.
* Two daemons that share a state directory by mistake never stop each other's children: each
  one's pid ledger names its owner.
* A child whose ledger entry cannot be written is stopped at once, not left running untracked.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from mework_client.aio import AsyncClient

from tests.reliability import figures
from tests.reliability.harness import (
    BOUND,
    FAKE,
    MARK_VAR,
    PY,
    DaemonProc,
    alive,
    begin,
    bound_name,
    call,
    daemon_dir,
    marked_pids,
    new_mark,
    server_entry,
    wait_marked_gone,
    wait_until,
)
from tests.turn_helpers import Harness, document, fake, mw_fixture  # noqa: F401

pytestmark = pytest.mark.anyio


async def _call_until_lost(client: AsyncClient, params: dict[str, Any]) -> None:
    """A call whose daemon is about to be SIGKILLed: its reply never comes."""
    try:
        await client.call("turns.callTool", params)
    except Exception:
        pass


async def test_sigkill_leaves_no_call_unaccounted(spawn_daemon: Callable[..., DaemonProc]) -> None:
    d = spawn_daemon()
    d.write_settings({"k": server_entry(FAKE, mark=new_mark(), timeout=60)})
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


# A stdio "server" whose helpers escape its process group before it becomes the kitchen: one
# calls setsid (still its child), one double-forks and calls setsid (re-parented at once).
ESCAPING = """
setsid sh -c 'echo $$ > "$0"; exec sleep 1000' "$1/setsid.pid" &
(setsid sh -c 'echo $$ > "$0"; exec sleep 1001' "$1/double.pid" &)
while [ ! -s "$1/setsid.pid" ] || [ ! -s "$1/double.pid" ]; do sleep 0.01; done
exec "$2" "$3"
"""


@pytest.fixture(scope="module")
def reaper() -> Iterator[DaemonProc]:
    """One daemon for the two helper tests (each adds a server of its own, with a directory of
    its own for the helpers' pid files); it must stop cleanly once both are done."""
    with daemon_dir() as root:
        d = DaemonProc(root)
        d.write_settings({})
        d.start()
        try:
            yield d
            assert d.stop() == 0, d.log_tail()
        finally:
            d.kill()


def _helper_server(d: DaemonProc, name: str, script: str, mark: str) -> tuple[Path, dict[str, Any]]:
    """A directory for the pid files and the servers.add params of ``script`` as ``name``."""
    pids = d.root / name
    pids.mkdir()
    entry = {
        "command": "/bin/sh",
        "args": ["-c", script, "sh", str(pids), PY, FAKE],
        "env": {MARK_VAR: mark},
        "timeoutSeconds": 10,
    }
    return pids, {"name": name, "server": entry}


async def test_helpers_that_leave_the_group_stop_with_their_session(reaper: DaemonProc) -> None:
    d = reaper
    mark = new_mark()
    pids, added = _helper_server(d, "escaping", ESCAPING, mark)
    async with d.connect() as client:
        await call(client, "servers.add", added)
        turn = await begin(client, ["escaping"])
        helpers = [int((pids / f"{n}.pid").read_text()) for n in ("setsid", "double")]
        assert all(alive(pid) for pid in helpers)
        assert set(helpers) <= set(marked_pids(mark))
        # The double-forked one is the daemon's now (a subreaper), not init's.
        assert _parent(helpers[1], d.pid) == d.pid
        await call(client, "conversations.delete", {"id": turn["conversationId"]})
        await wait_marked_gone(mark)

        def reaped() -> bool:  # no zombie left for the daemon to collect
            return not any(psutil.pid_exists(pid) for pid in helpers)

        await wait_until("the helpers are reaped", reaped)
        await call(client, "servers.remove", {"name": "escaping"})
    figures.record("trust", escaped_helpers_stopped=len(helpers))


def _parent(pid: int, daemon: int) -> int | tuple[int, list[str]]:
    """``pid``'s parent: the daemon's pid, or another pid with its command line for the report.

    Not a race: the outer shell waits for the subshell that forks the helper, so the helper is
    re-parented (to the nearest subreaper) before the server even starts.
    """
    ppid = psutil.Process(pid).ppid()
    if ppid == daemon:
        return ppid
    try:
        return ppid, psutil.Process(ppid).cmdline()
    except psutil.NoSuchProcess:
        return ppid, []


# A server that double-forks one helper and calls setsid in it (re-parented to the daemon at
# once); the helper's pid goes to a file named after the server's pid, one per session.
DOUBLE_FORKING = """
(setsid sh -c 'echo $$ > "$0"; exec sleep 1002' "$1/double.$$" &)
while [ ! -s "$1/double.$$" ]; do sleep 0.01; done
exec "$2" "$3"
"""


async def test_each_double_forked_helper_stops_with_its_own_session(reaper: DaemonProc) -> None:
    d = reaper
    pids, added = _helper_server(d, "forking", DOUBLE_FORKING, new_mark())
    async with d.connect() as client:
        await call(client, "servers.add", added)
        turns: list[dict[str, Any]] = []
        helpers: list[int] = []
        for _ in range(2):  # one after the other, so which helper is whose is known
            turns.append(await begin(client, ["forking"]))
            (pid,) = {int(f.read_text()) for f in pids.glob("double.*")} - set(helpers)
            helpers.append(pid)
        older, newer = helpers
        assert all(alive(pid) for pid in helpers)
        assert [_parent(pid, d.pid) for pid in helpers] == [d.pid, d.pid]
        # The newer session closes first: a start-time guess would leave its helper running.
        await call(client, "conversations.delete", {"id": turns[1]["conversationId"]})
        await wait_until("the newer session's helper is stopped", lambda: not alive(newer))
        await wait_until("... and reaped", lambda: not psutil.pid_exists(newer))
        assert alive(older)
        await call(client, "conversations.delete", {"id": turns[0]["conversationId"]})
        await wait_until("the older session's helper is stopped", lambda: not alive(older))
        await wait_until("... and reaped", lambda: not psutil.pid_exists(older))
        await call(client, "servers.remove", {"name": "forking"})


async def test_daemons_sharing_a_state_dir_never_stop_each_others_children(
    spawn_daemon: Callable[..., DaemonProc],
) -> None:
    a, b = spawn_daemon("a"), spawn_daemon("b")
    b.state_dir = a.state_dir  # the mistake: another socket, the same state directory
    mark = new_mark()
    a.write_settings({"k": server_entry(FAKE, mark=mark, timeout=60)})
    b.write_settings({})
    a.start()
    async with a.connect() as client:
        assert (await begin(client, ["k"]))["failures"] == []
    servers = marked_pids(mark)
    assert servers
    for _ in range(2):
        b.start()  # reaps its own leftovers at start-up: none of them is a's
        assert all(alive(pid) for pid in servers)
        assert b.stop() == 0  # and stops what it started: nothing of a's
        assert all(alive(pid) for pid in servers)
    assert a.stop() == 0
    await wait_marked_gone(mark)


async def test_a_child_the_ledger_cannot_record_is_stopped_at_once(mw: Harness) -> None:
    tag = uuid.uuid4().hex
    await mw.start(document({"k": fake("--name", tag)}))
    mw.d.ledger.path.with_suffix(".tmp").mkdir()  # the ledger's next write fails, even as root
    conv = await mw.conversation(["k"])
    turn = await mw.begin(conv)
    (failure,) = turn["failures"]
    assert failure["server"] == "k"
    assert "could not record the server's process, so it was stopped" in failure["reason"]

    def tagged() -> list[int]:
        return [
            p.pid
            for p in psutil.process_iter(["cmdline"])
            if tag in (p.info["cmdline"] or []) and alive(p.pid)
        ]

    await wait_until("the unrecorded server is stopped", lambda: not tagged())
