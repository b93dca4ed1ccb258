"""The session pool and the processes behind it, against a real in-process daemon.

One session per (conversation, server), shared by clients and concurrent calls; idle close; a
call in flight keeps its session; a server that dies is reconnected; reloads close or keep
sessions as the change demands; closing leaves no process (grandchildren included); the pid
ledger reaps what a crashed daemon left, and only that; shutdown is bounded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mework_client.aio import AsyncClient, connect

from meworkd.mcp.ledger import PidLedger, process_start_time
from tests.common import fake
from tests.daemon_helpers import (
    FAKE,
    PY,
    alive,
    begin_turn,
    call_tool,
    drain_events,
    envdump,
    session_for,
    start_daemon,
    text_of,
    wait_event,
    wait_gone,
)

pytestmark = pytest.mark.anyio

SLEEPER = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(1000)\n"


def closed(server: str, conversation: str | None = None) -> Any:
    def pred(data: dict[str, Any]) -> bool:
        return (
            data["server"] == server
            and data["status"] == "closed"
            and (conversation is None or data["conversation"] == conversation)
        )

    return pred


async def start_call(
    tg: anyio.abc.TaskGroup,
    client: AsyncClient,
    turn: dict[str, Any],
    server: str,
    tool: str,
    arguments: dict[str, Any],
    call_id: str,
    results: dict[str, Any],
) -> None:
    """Start a tool call in ``tg``; wait until the server runs it (its first progress event)."""

    async def run() -> None:
        results[call_id] = await call_tool(client, turn, server, tool, arguments, call_id)

    tg.start_soon(run)
    await wait_event(client, "turn.progress", lambda d: d["callId"] == call_id)


# --- sharing -----------------------------------------------------------------------------------


async def test_one_session_per_conversation_and_server_shared_by_clients(short_tmp: Path) -> None:
    async with (
        start_daemon(short_tmp, {"k": fake(), "j": fake()}) as (daemon, sock),
        connect(sock) as c1,
        connect(sock) as c2,
    ):
        turn_a = await begin_turn(c1, ["k", "j"])
        conv_a = turn_a["conversationId"]
        k_a = session_for(daemon, conv_a, "k")
        j_a = session_for(daemon, conv_a, "j")
        assert k_a.pid != j_a.pid
        # A later turn, from a second client connection, reuses the same sessions.
        turn_a2 = await begin_turn(c2, [], conversation=conv_a)
        assert session_for(daemon, conv_a, "k") is k_a
        reply = await call_tool(c2, turn_a2, "k", "echo", {"text": "from c2"})
        assert text_of(reply) == "from c2"
        reply = await call_tool(c1, turn_a, "k", "echo", {"text": "from c1"})
        assert text_of(reply) == "from c1"
        assert session_for(daemon, conv_a, "k") is k_a
        assert k_a.pid is not None
        # Another conversation gets sessions of its own.
        turn_b = await begin_turn(c2, ["k"])
        k_b = session_for(daemon, turn_b["conversationId"], "k")
        assert k_b.pid not in (k_a.pid, j_a.pid)
        assert daemon.pool.count_for("k") == 2
        assert daemon.pool.count_for("j") == 1
        status = await c1.call("daemon.status")
        assert status["sessions"] == 3
        listed = {s["name"]: s for s in (await c1.call("servers.list"))["servers"]}
        assert listed["k"]["sessions"] == 2
        assert listed["k"]["status"] == "connected"


async def test_concurrent_calls_share_one_session(short_tmp: Path) -> None:
    async with start_daemon(short_tmp, {"k": fake()}) as (daemon, sock), connect(sock) as c:
        await c.subscribe(["turn.progress"])
        turn = await begin_turn(c, ["k"])
        session = session_for(daemon, turn["conversationId"], "k")
        results: dict[str, Any] = {}
        async with anyio.create_task_group() as tg:
            for i in range(4):
                await start_call(tg, c, turn, "k", "slow", {"seconds": 60}, f"c{i}", results)
            # All four run at the same time, on the one session.
            assert session.in_flight == 4
            assert daemon.pool.sessions == [session]
            reply = await call_tool(c, turn, "k", "echo", {"text": "meanwhile"})
            assert text_of(reply) == "meanwhile"
            cancelled = await c.call("turns.cancel", {"turnId": turn["turnId"]})
            assert cancelled == {"cancelled": 4}
        assert all(r["isError"] and "cancelled" in text_of(r) for r in results.values())
        assert session.alive
        assert session.in_flight == 0
        assert text_of(await call_tool(c, turn, "k", "echo", {"text": "after"})) == "after"
        assert session_for(daemon, turn["conversationId"], "k") is session


# --- idle close --------------------------------------------------------------------------------


async def test_idle_session_closes(short_tmp: Path) -> None:
    async with start_daemon(short_tmp, {"k": fake()}) as (daemon, sock), connect(sock) as c:
        await c.subscribe(["server.status"])
        await c.call("settings.setMcpOptions", {"session_idle_minutes": 0.002})
        turn = await begin_turn(c, ["k"])
        pid = session_for(daemon, turn["conversationId"], "k").pid
        await wait_event(c, "server.status", closed("k", turn["conversationId"]))
        assert session_for(daemon, turn["conversationId"], "k") is None
        await wait_gone([pid])
        # The next use opens a new session.
        assert text_of(await call_tool(c, turn, "k", "echo", {"text": "back"})) == "back"


async def test_call_in_flight_keeps_an_idle_session_open(short_tmp: Path) -> None:
    async with start_daemon(short_tmp, {"k": fake()}) as (daemon, sock), connect(sock) as c:
        await c.subscribe(["server.status", "turn.progress"])
        turn = await begin_turn(c, ["k"])
        conv = turn["conversationId"]
        session = session_for(daemon, conv, "k")
        results: dict[str, Any] = {}
        async with anyio.create_task_group() as tg:
            await start_call(tg, c, turn, "k", "slow", {"seconds": 1.5}, "slow", results)
            # Idle limit 0.12 s, far below the call's duration: the sweeper must skip it.
            await c.call("settings.setMcpOptions", {"session_idle_minutes": 0.002})
            assert session.in_flight == 1  # the new limit is in force while the call runs
        assert text_of(results["slow"]) == "slept"
        # Events and replies travel in order on one connection: no close came before it.
        assert [e for e in drain_events(c, "server.status") if e["status"] == "closed"] == []
        assert session.pid is not None
        assert alive(session.pid)
        # Once idle, it closes.
        await wait_event(c, "server.status", closed("k", conv))
        await wait_gone([session.pid])


# --- failures and reloads ----------------------------------------------------------------------


async def test_server_dying_mid_call_is_dropped_and_reconnected(short_tmp: Path) -> None:
    async with start_daemon(short_tmp, {"k": fake()}) as (daemon, sock), connect(sock) as c:
        await c.subscribe(["server.status"])
        turn = await begin_turn(c, ["k"])
        conv = turn["conversationId"]
        old = session_for(daemon, conv, "k").pid
        reply = await call_tool(c, turn, "k", "die")
        assert reply["isError"] is True
        assert "closed the connection during the call" in text_of(reply)
        await wait_event(c, "server.status", closed("k", conv))
        assert session_for(daemon, conv, "k") is None
        await wait_gone([old])
        logs = await c.call("servers.logs", {"name": "k"})
        assert "kitchen: dying" in [entry["line"] for entry in logs["lines"]]
        reply = await call_tool(c, turn, "k", "echo", {"text": "again"})
        assert text_of(reply) == "again"
        new = session_for(daemon, conv, "k").pid
        assert new is not None
        assert new != old


async def test_server_hanging_up_is_replaced_and_reported_in_order(short_tmp: Path) -> None:
    """The connection breaks but the process lingers (the owner then needs seconds to kill
    it): the next use opens a new session at once, and the events still say closed first."""
    async with start_daemon(short_tmp, {"e": envdump()}) as (daemon, sock), connect(sock) as c:
        await c.subscribe(["server.status"])
        turn = await begin_turn(c, ["e"])
        conv = turn["conversationId"]
        old = session_for(daemon, conv, "e")
        assert drain_events(c, "server.status") == [
            {"server": "e", "conversation": conv, "status": "connected"}
        ]
        reply = await call_tool(c, turn, "e", "hang_up")
        assert reply["isError"] is True
        assert "closed the connection during the call" in text_of(reply)
        proc = json.loads(text_of(await call_tool(c, turn, "e", "process")))
        assert proc["pid"] != old.pid
        assert alive(old.pid)  # still being stopped by its owner
        assert [e["status"] for e in drain_events(c, "server.status")] == ["closed", "connected"]
        await wait_gone([old.pid])
        assert [e["status"] for e in drain_events(c, "server.status")] == []


async def test_reload_of_connection_fields_closes_after_calls_finish(short_tmp: Path) -> None:
    async with start_daemon(short_tmp, {"k": fake()}) as (daemon, sock), connect(sock) as c:
        await c.subscribe(["server.status", "turn.progress"])
        turn = await begin_turn(c, ["k"])
        conv = turn["conversationId"]
        old = session_for(daemon, conv, "k")
        results: dict[str, Any] = {}
        async with anyio.create_task_group() as tg:
            await start_call(tg, c, turn, "k", "slow", {"seconds": 1.0}, "slow", results)
            await c.call("servers.update", {"name": "k", "patch": {"args": [FAKE, "--name", "k2"]}})
            await wait_event(c, "server.status", closed("k", conv))
            # Retired, not killed: the call in flight still runs on the old process.
            assert session_for(daemon, conv, "k") is None
            assert old.in_flight == 1
            assert alive(old.pid)
        assert text_of(results["slow"]) == "slept"
        await wait_gone([old.pid])
        turn = await begin_turn(c, [], conversation=conv)
        new = session_for(daemon, conv, "k")
        assert new is not old
        assert new.pid != old.pid
        assert new.server_info.name == "k2"


async def test_policy_only_change_keeps_the_session(short_tmp: Path) -> None:
    async with start_daemon(short_tmp, {"k": fake()}) as (daemon, sock), connect(sock) as c:
        await c.subscribe(["server.status", "settings.reloaded"])
        turn = await begin_turn(c, ["k"])
        conv = turn["conversationId"]
        session = session_for(daemon, conv, "k")
        patch = {"description": "Kitchen sink", "timeoutSeconds": 30, "disabledTools": ["add"]}
        await c.call("servers.update", {"name": "k", "patch": patch})
        assert daemon.store.settings.servers["k"].timeout == 30
        assert text_of(await call_tool(c, turn, "k", "echo", {"text": "same"})) == "same"
        assert session_for(daemon, conv, "k") is session
        assert session.alive
        assert [e for e in drain_events(c, "server.status") if e["status"] == "closed"] == []
        turn = await begin_turn(c, [], conversation=conv)
        assert all(b["tool"] != "add" for b in turn["bindings"].values())
        assert session_for(daemon, conv, "k") is session


async def test_disabling_or_removing_a_server_closes_its_sessions(short_tmp: Path) -> None:
    async with (
        start_daemon(short_tmp, {"a": fake(), "b": fake()}) as (daemon, sock),
        connect(sock) as c,
    ):
        await c.subscribe(["server.status"])
        turn = await begin_turn(c, ["a", "b"])
        conv = turn["conversationId"]
        pid_a = session_for(daemon, conv, "a").pid
        pid_b = session_for(daemon, conv, "b").pid
        await c.call("servers.update", {"name": "a", "patch": {"enabled": False}})
        await wait_event(c, "server.status", closed("a", conv))
        await wait_gone([pid_a])
        reply = await call_tool(c, turn, "a", "echo", {"text": "x"})
        assert reply["isError"] is True
        assert "no longer available" in text_of(reply)
        assert session_for(daemon, conv, "b").pid == pid_b
        await c.call("servers.remove", {"name": "b"})
        await wait_event(c, "server.status", closed("b", conv))
        await wait_gone([pid_b])
        assert daemon.pool.sessions == []


# --- processes ---------------------------------------------------------------------------------


async def test_closing_a_session_leaves_no_process_behind(short_tmp: Path) -> None:
    async with (
        start_daemon(short_tmp, {"k": fake("--grandchild")}) as (daemon, sock),
        connect(sock) as c,
    ):
        turn = await begin_turn(c, ["k"])
        conv = turn["conversationId"]
        leader = session_for(daemon, conv, "k").pid
        spawned = int(text_of(await call_tool(c, turn, "k", "spawn_grandchild")))
        logs = await c.call("servers.logs", {"name": "k"})
        at_start = [
            int(entry["line"].rsplit(" ", 1)[1])
            for entry in logs["lines"]
            if entry["line"].startswith("kitchen: grandchild pid ")
        ]
        pids = [leader, spawned, *at_start]
        assert len(pids) == 3
        assert all(alive(p) for p in pids)
        ledger = json.loads(daemon.ledger.path.read_text())
        assert ledger[str(leader)]["server"] == "k"
        result = await c.call("conversations.delete", {"id": conv})
        assert result["sessionsClosed"] == 1
        # The grandchildren ignore SIGTERM; the group kill reaches them anyway.
        await wait_gone(pids)
        # The ledger forgets the session once its owner has cleaned up.
        with anyio.fail_after(5):
            while str(leader) in json.loads(daemon.ledger.path.read_text()):
                await anyio.sleep(0.02)


def _owner(root: Path) -> str:
    """The ledger owner of start_daemon's daemon under ``root``: its socket path."""
    return str(root / "run" / "d.sock")


def _ledger_path(root: Path) -> Path:
    """Where that daemon keeps its ledger."""
    return PidLedger(root / "state" / "children.json", owner=_owner(root)).path


def _spawn_sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [PY, "-I", "-S", "-c", SLEEPER],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


async def test_pid_ledger_reaps_leftovers_of_a_crashed_daemon(short_tmp: Path) -> None:
    stubborn = _spawn_sleeper()  # a server a crashed daemon left behind
    unrelated = _spawn_sleeper()  # its pid "reused" by someone else: start time differs
    try:
        stubborn_start = process_start_time(stubborn.pid)
        unrelated_start = process_start_time(unrelated.pid)
        assert stubborn_start is not None
        assert unrelated_start is not None
        state = short_tmp / "state"
        state.mkdir(mode=0o700)
        ledger = {
            str(stubborn.pid): {"server": "x", "start": stubborn_start, "owner": _owner(short_tmp)},
            str(unrelated.pid): {
                "server": "y",
                "start": unrelated_start - 1,
                "owner": _owner(short_tmp),
            },
        }
        _ledger_path(short_tmp).write_text(json.dumps(ledger))
        async with start_daemon(short_tmp, {}) as (daemon, _sock):
            # Reaped at start-up, before the daemon answered anything.
            code = await anyio.to_thread.run_sync(stubborn.wait, 10)
            assert code == -signal.SIGKILL
            assert unrelated.poll() is None
            assert alive(unrelated.pid)
            assert json.loads(daemon.ledger.path.read_text()) == {}
    finally:
        for proc in (stubborn, unrelated):
            if proc.poll() is None:
                proc.kill()
            proc.wait()


async def test_pid_ledger_reaps_a_group_whose_leader_exited(short_tmp: Path) -> None:
    """The leader is gone but its grandchild lives on in the group: the group is reaped."""
    leader = subprocess.Popen(
        [
            PY,
            "-I",
            "-S",
            "-c",
            "import subprocess, sys\n"
            f"p = subprocess.Popen([sys.executable, '-I', '-S', '-c', {SLEEPER!r}])\n"
            "print(p.pid, flush=True)\n"
            "sys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert leader.stdin is not None
    assert leader.stdout is not None
    grandchild = int(leader.stdout.readline())
    try:
        state = short_tmp / "state"
        state.mkdir(mode=0o700)
        entry = {"server": "x", "start": process_start_time(leader.pid), "owner": _owner(short_tmp)}
        _ledger_path(short_tmp).write_text(json.dumps({str(leader.pid): entry}))
        leader.stdin.close()
        await anyio.to_thread.run_sync(leader.wait, 10)
        assert alive(grandchild)
        async with start_daemon(short_tmp, {}):
            await wait_gone([grandchild])
    finally:
        leader.stdout.close()
        if alive(grandchild):
            signal_group(leader.pid)


def signal_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


async def test_shutdown_is_bounded_when_servers_ignore_sigterm(short_tmp: Path) -> None:
    servers = {name: fake("--ignore-sigterm") for name in ("s1", "s2", "s3")}
    # start_daemon fails the test if the daemon does not stop within stop_bound.
    async with (
        start_daemon(short_tmp, servers, stop_bound=8) as (daemon, sock),
        connect(sock) as c,
    ):
        turn = await begin_turn(c, list(servers))
        assert turn["failures"] == []
        pids = [s.pid for s in daemon.pool.sessions if s.pid is not None]
        assert len(pids) == 3
        assert all(alive(p) for p in pids)
    # The daemon has returned: nothing may be left, not even for a moment.
    assert [p for p in pids if alive(p)] == []
