"""The daemon itself dies, and nothing is lost or left running (issue 8, part 2).

* SIGKILL of a ``meworkd`` subprocess with live stdio sessions whose servers survive their
  parent (they ignore SIGTERM and stdin EOF, one has a grandchild): a new daemon started on the
  same directories reaps them through the pid ledger, and the conversations and the settings are
  exactly as they were.
* A settings writer dies between the temp-file write and the rename (``before_rename`` hook), or
  is SIGKILLed at random points of a write loop: the file on disk is always a complete version
  (the old or the new one, never a mix, never empty), and the daemon starts on it (a daemon in
  the test's process: what it makes of the file is the subject, not its process).
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.reliability import figures
from tests.reliability.harness import (
    BOUND,
    FAKE,
    PY,
    RAW_BAD,
    DaemonProc,
    alive,
    bound_name,
    call,
    marked_pids,
    new_mark,
    poll_until,
    server_entry,
    text_of,
)

WRITER = str(Path(__file__).resolve().parent / "settings_writer.py")


def _config_view(servers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """servers.list without what depends on live sessions (``cost``: from the tools a server
    reported to this daemon, kept in memory)."""
    volatile = ("status", "sessions", "cost")
    return [{k: v for k, v in s.items() if k not in volatile} for s in servers]


def _settings_servers(path: Path) -> list[str]:
    return list(json.loads(path.read_bytes())["assets"]["mcpServers"])


@pytest.mark.anyio
async def test_sigkill_with_live_sessions_then_restart(
    spawn_daemon: Callable[..., DaemonProc],
) -> None:
    d = spawn_daemon()
    mark = new_mark()
    d.write_settings(
        {
            "stubborn": server_entry(FAKE, "--ignore-sigterm", mark=mark, timeout=20),
            "stubborn-gc": server_entry(
                FAKE, "--ignore-sigterm", "--grandchild", mark=mark, timeout=20
            ),
            "polite": server_entry(RAW_BAD, "--mode", "legacy", mark=mark, timeout=20),
        },
        extra={"x-hand-key": {"kept": [1, 2, 3]}},
    )
    await anyio.to_thread.run_sync(d.start)
    async with d.connect() as client:
        for conv_id, servers in (("a", ["stubborn", "stubborn-gc"]), ("b", ["polite", "stubborn"])):
            await call(
                client,
                "conversations.create",
                {"id": conv_id, "mcpServers": servers, "approvalLevel": "full_access"},
            )
            turn = await call(client, "turns.begin", {"conversationId": conv_id})
            assert turn["failures"] == [], turn
            for server in servers:
                tool = "t" if server == "polite" else "echo"
                name = bound_name(turn, server, tool)
                reply = await call(
                    client,
                    "turns.callTool",
                    {"turnId": turn["turnId"], "name": name, "arguments": {"text": "live"}},
                )
                assert not reply["isError"], reply
        await call(
            client, "servers.update", {"name": "polite", "patch": {"description": "acknowledged"}}
        )
        conversations = (await call(client, "conversations.list"))["conversations"]
        servers_before = (await call(client, "servers.list"))["servers"]
        status = await call(client, "daemon.status")
        assert status["sessions"] == 4, status
    ledger = d.ledger()
    assert len(ledger) == 4, ledger
    settings_bytes = d.settings.read_bytes()
    running = marked_pids(mark)
    assert len(running) == 5, running  # 4 servers and a grandchild

    d.kill()
    # The polite server exits on stdin EOF; the stubborn ones (and the grandchild) stay.
    poll_until("the polite server exits on stdin EOF", lambda: len(marked_pids(mark)) == 4)
    survivors = marked_pids(mark)
    assert all(alive(pid) for pid in survivors)

    await anyio.to_thread.run_sync(d.start)
    reap_seconds = poll_until("the leftovers are reaped", lambda: not any(map(alive, survivors)))
    assert marked_pids(mark) == []
    assert d.settings.read_bytes() == settings_bytes, "the settings changed across the crash"
    async with d.connect() as client:
        assert (await call(client, "conversations.list"))["conversations"] == conversations
        servers_after = (await call(client, "servers.list"))["servers"]
        assert _config_view(servers_after) == _config_view(servers_before)
        doc = (await call(client, "settings.get"))["document"]
        assert doc["x-hand-key"] == {"kept": [1, 2, 3]}
        assert doc["assets"]["mcpServers"]["polite"]["description"] == "acknowledged"
        # The conversations work again, on new processes.
        turn = await call(client, "turns.begin", {"conversationId": "a"})
        reply = await call(
            client,
            "turns.callTool",
            {
                "turnId": turn["turnId"],
                "name": bound_name(turn, "stubborn", "echo"),
                "arguments": {"text": "again"},
            },
        )
        assert text_of(reply) == "again"
        fresh = marked_pids(mark)
        assert fresh
        assert not set(fresh) & set(survivors)
    assert d.stop() == 0
    poll_until("the new sessions' processes are gone", lambda: not marked_pids(mark))
    figures.bump("daemon_faults", "scenarios_survived")
    figures.record(
        "daemon_faults",
        sigkill_leftovers_reaped=len(survivors),
        sigkill_reap_seconds=round(reap_seconds, 2),
    )


def _run_writer(path: Path, mode: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [PY, WRITER, str(path), mode], capture_output=True, timeout=BOUND, check=False
    )


def _temp_files(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f".{path.name}.*.tmp"))


@pytest.mark.anyio
async def test_crash_between_temp_write_and_rename(
    spawn_daemon: Callable[..., DaemonProc],
) -> None:
    d = spawn_daemon()
    # First trial: the file does not exist yet, the writer dies creating it.
    result = await anyio.to_thread.run_sync(_run_writer, d.settings, "crash-before-rename")
    assert result.returncode == 9, result.stderr.decode()[-2000:]
    assert not d.settings.exists(), "a half-created settings file was left"
    d.write_settings({"base": {"command": "true"}}, extra={"x-unknown": "kept"})
    for trial in range(1, figures.CRASH_BEFORE_RENAME_TRIALS):
        before = d.settings.read_bytes()
        result = await anyio.to_thread.run_sync(_run_writer, d.settings, "crash-before-rename")
        assert result.returncode == 9, result.stderr.decode()[-2000:]
        after = d.settings.read_bytes()
        assert after == before, f"trial {trial}: the file changed although the rename never ran"
        json.loads(after)
        if trial % 2 == 0:
            # The crashed writer's next attempt (another process) succeeds on top of it.
            d.write_settings(
                {
                    name: {"command": "true"}
                    for name in [*_settings_servers(d.settings), f"t{trial}"]
                },
                extra={"x-unknown": "kept"},
            )
    leftovers = _temp_files(d.settings)
    assert len(leftovers) == 1  # the last crash's (every writer's open() removes older ones)
    async with d.in_process(), d.connect() as client:
        assert _temp_files(d.settings) == [], "the crashed writers' temp files were not removed"
        names = [s["name"] for s in (await call(client, "servers.list"))["servers"]]
        assert names == _settings_servers(d.settings)
        await call(client, "servers.add", {"name": "after-crash", "server": {"command": "true"}})
        doc = (await call(client, "settings.get"))["document"]
        assert doc["x-unknown"] == "kept"
        assert "after-crash" in doc["assets"]["mcpServers"]
    figures.bump("daemon_faults", "scenarios_survived")
    figures.record(
        "daemon_faults",
        crash_before_rename_temp_files_left=len(leftovers),
    )


def _kill_during_writes(path: Path, after_acks: int) -> tuple[int, list[str]]:
    """Run the write loop, SIGKILL it once ``after_acks`` writes were acknowledged; return the
    number of writes it acknowledged in all and the servers in the file it left."""
    proc = subprocess.Popen(
        [PY, WRITER, str(path), "loop"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdout is not None
    acked = 0
    try:
        while acked < after_acks:
            line = proc.stdout.readline()
            assert line.startswith(b"ack "), line
            acked = int(line.split()[1])
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=BOUND)
        # The writer went on while we read and signalled: every ack it printed before it died
        # is in the pipe, and each of those writes was on disk when it printed it.
        for line in proc.stdout.read().splitlines():
            acked = max(acked, int(line.split()[1]))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    return acked, _settings_servers(path)


@pytest.mark.anyio
async def test_sigkill_during_settings_writes(spawn_daemon: Callable[..., DaemonProc]) -> None:
    rng = random.Random(figures.RACE["seed"])
    daemons = [spawn_daemon(f"w{i}") for i in range(figures.SIGKILL_WRITE_TRIALS)]
    outcomes: list[tuple[int, int]] = []

    async def trial(d: DaemonProc, after: int) -> None:
        d.write_settings({}, extra={"x-unknown": "kept"})
        acked, servers = await anyio.to_thread.run_sync(_kill_during_writes, d.settings, after)
        # Exactly a prefix w1..wk, with k the acknowledged count or one more (the write in
        # flight made it to the rename before the kill).
        expected = [f"w{i}" for i in range(1, len(servers) + 1)]
        assert servers == expected, servers
        assert len(servers) in (acked, acked + 1), (acked, servers)
        assert json.loads(d.settings.read_bytes())["x-unknown"] == "kept"
        outcomes.append((acked, len(servers)))

    limiter = anyio.CapacityLimiter(2)

    async def limited(d: DaemonProc, after: int) -> None:
        async with limiter:
            await trial(d, after)

    async with anyio.create_task_group() as tg:
        for d in daemons:
            tg.start_soon(limited, d, rng.randint(1, 40))
    # The daemon starts on every one of the files.
    for d in daemons[:3]:
        async with d.in_process(), d.connect() as client:
            status = await call(client, "daemon.status")
        assert status["settingsError"] is None, status
        assert status["servers"] == len(_settings_servers(d.settings))
    figures.record(
        "daemon_faults",
        sigkill_writes_in_flight_landed=sum(1 for a, n in outcomes if n == a + 1),
        sigkill_writes_trials=len(outcomes),
    )
    assert len(outcomes) == figures.SIGKILL_WRITE_TRIALS
    figures.bump("daemon_faults", "scenarios_survived")
