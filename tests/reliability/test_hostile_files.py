"""No settings file can crash or hang the daemon (issue 14, point 4).

The real ``meworkd`` in a subprocess. Its settings path is made a directory, a loop of symbolic
links, a dangling link, a FIFO, unreadable (mode 000; run as root, the daemon is started
without the capabilities that let root read anything), 50 MB large, or invalid UTF-8, both while
it runs and before it starts.
In every state the daemon keeps serving on the last good settings, reports why
(``settings.invalid``, ``settings.get`` ``unreadable``), uses next to no CPU while it waits, takes
the file back once it is good again, and stops on SIGTERM within the issue's 5 s.

Also: a write through a dangling link is a clear error; a symbolic link stays one after meworkd
writes, and edits of its target are applied; a corrupt state database is moved aside at start-up
and replaced; and a daemon out of file descriptors refuses new connections with a clear error,
logging a bounded number of lines, and serves again once descriptors are free.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from mework_client import RpcError
from mework_client.aio import AsyncClient

from tests.reliability import figures
from tests.reliability.harness import BOUND, DaemonProc, call

pytestmark = pytest.mark.anyio

STOP_BOUND = 5.0  # seconds, the bound for SIGTERM in every state
# The daemon's CPU time over a quiet interval must stay a small share of it: a retry loop or a
# blocked reader spinning would use all of it. (The settings watcher has no time-out: idle, it
# wakes only inside watchfiles' thread, every WATCH_STEP_MS, to check its stop event.)
QUIET_SECONDS = 1.0
QUIET_CPU_SHARE = 0.1
TOPICS = ["settings.invalid", "settings.reloaded"]


def _entry(command: str) -> dict[str, Any]:
    return {"type": "stdio", "command": command}


GOOD = {"a": _entry("a")}
FIXED = {"a": _entry("a"), "b": _entry("b")}


def _document(servers: dict[str, Any]) -> bytes:
    return json.dumps({"assets": {"mcpServers": servers}}, indent=2).encode()


def _clear(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


def _replace(path: Path, data: bytes) -> None:
    """Put ``data`` at ``path`` by rename, as an editor does (the daemon sees it whole)."""
    tmp = path.with_name(".edit.tmp")
    tmp.write_bytes(data)
    tmp.chmod(0o600)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    os.replace(tmp, path)


@dataclass(frozen=True)
class State:
    """A way the settings path can stop being a usable file, and what the daemon says then."""

    name: str
    make: Callable[[Path], None]
    reason: str  # a phrase of the reported error
    needs_dac: bool = False  # root must lose its right to read any file for this one


_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


def _without_dac_override() -> None:
    """Run in the daemon's child before exec: root without these two capabilities is refused
    a mode-000 file like anyone else (dropped from the bounding set, exec loses them)."""
    if os.getuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            os._exit(97)


def _directory(path: Path) -> None:
    _clear(path)
    path.mkdir()


def _loop(path: Path) -> None:
    _clear(path)
    other = path.with_name("other.json")
    _clear(other)
    other.symlink_to(path.name)
    path.symlink_to(other.name)


def _dangling(path: Path) -> None:
    _clear(path)
    path.symlink_to("nowhere/settings.json")


def _fifo(path: Path) -> None:
    _clear(path)
    os.mkfifo(path, 0o600)


def _unreadable(path: Path) -> None:
    path.chmod(0)


def _huge(path: Path) -> None:
    pad = b"x" * (50 * 1000 * 1000)
    _replace(path, b'{"assets": {"mcpServers": {}}, "pad": "' + pad + b'"}')


def _invalid_utf8(path: Path) -> None:
    _replace(path, b'{"assets": {"mcpServers": {"a": {"command": "\xff\xfe\xc3"}}}}')


STATES = [
    State("directory", _directory, "is a directory"),
    State("symlink_loop", _loop, "loop of symbolic links"),
    State("dangling_symlink", _dangling, "which does not exist"),
    State("fifo", _fifo, "is a FIFO"),
    State("mode_000", _unreadable, "permission denied", needs_dac=True),
    State("50_mb", _huge, "over the 4 MiB limit"),
    State("invalid_utf8", _invalid_utf8, "not UTF-8"),
]


async def _next(client: AsyncClient, topic: str) -> dict[str, Any]:
    with anyio.fail_after(BOUND):
        _topic, data = await client.next_event(topic)
    return dict(data)


async def _quiet_cpu(d: DaemonProc) -> float:
    """The daemon's CPU seconds (all threads) over a quiet interval."""
    proc = psutil.Process(d.pid)
    before = proc.cpu_times()
    await anyio.sleep(QUIET_SECONDS)  # the measurement interval itself, not a wait
    after = proc.cpu_times()
    return float((after.user + after.system) - (before.user + before.system))


def _stop_seconds(d: DaemonProc) -> float:
    """SIGTERM, then how long the daemon took to exit (killed and failed past the bound)."""
    assert d.proc is not None
    started = time.monotonic()
    d.proc.send_signal(signal.SIGTERM)
    try:
        d.proc.wait(timeout=STOP_BOUND)
    except Exception:
        d.kill()
        raise AssertionError(f"meworkd did not stop within {STOP_BOUND} s") from None
    took = time.monotonic() - started
    assert d.proc.returncode == 0, d.log_tail()
    return took


async def _assert_unusable(client: AsyncClient, state: State) -> str:
    """The daemon serves the last good settings and says why the file is not used."""
    got = await call(client, "settings.get")
    assert got["unreadable"] is not None
    assert state.reason in got["unreadable"], got["unreadable"]
    assert list(got["document"]["assets"]["mcpServers"]) == list(GOOD)
    names = [s["name"] for s in (await call(client, "servers.list"))["servers"]]
    assert names == list(GOOD)
    assert (await call(client, "daemon.status"))["settingsError"] == got["unreadable"]
    return str(got["unreadable"])


@pytest.mark.parametrize("state", STATES, ids=[s.name for s in STATES])
async def test_the_settings_path_stops_being_a_file(
    spawn_daemon: Callable[..., DaemonProc], state: State
) -> None:
    d = spawn_daemon()
    d.write_settings(GOOD)
    preexec = _without_dac_override if state.needs_dac else None
    d.start(preexec=preexec)
    async with d.connect() as client:
        await call(client, "events.subscribe", {"topics": TOPICS})
        state.make(d.settings)
        event = await _next(client, "settings.invalid")
        assert state.reason in event["error"], event
        assert event["source"] == "file"
        reported = await _assert_unusable(client, state)
        cpu = await _quiet_cpu(d)
        assert cpu < QUIET_SECONDS * QUIET_CPU_SHARE, f"{cpu:.2f} s of CPU while waiting"
        assert await _assert_unusable(client, state) == reported  # told once, still true

        # Made good again: applied (even were the bytes those last in force).
        _replace(d.settings, _document(FIXED))
        event = await _next(client, "settings.reloaded")
        assert event["added"] == ["b"], event
        assert (await call(client, "settings.get"))["unreadable"] is None

        state.make(d.settings)
        await _next(client, "settings.invalid")
    running_stop = _stop_seconds(d)

    # Started in that state: it serves the defaults, says why, and stops as promptly.
    d.start(preexec=preexec)
    async with d.connect() as client:
        got = await call(client, "settings.get")
        assert got["unreadable"] is not None
        assert state.reason in got["unreadable"], got["unreadable"]
        assert (await call(client, "servers.list"))["servers"] == []
    start_stop = _stop_seconds(d)
    assert "Traceback" not in d.log_text()
    figures.record(
        "hostile_files",
        **{
            f"{state.name}_stop_seconds": round(max(running_stop, start_stop), 2),
            f"{state.name}_quiet_cpu_seconds": round(cpu, 3),
        },
    )


async def test_a_write_through_a_dangling_link_is_a_clear_error(
    spawn_daemon: Callable[..., DaemonProc],
) -> None:
    d = spawn_daemon()
    d.write_settings(GOOD)
    d.start()
    async with d.connect() as client:
        await call(client, "events.subscribe", {"topics": TOPICS})
        _dangling(d.settings)
        await _next(client, "settings.invalid")
        with pytest.raises(RpcError) as caught:
            await call(client, "servers.add", {"name": "b", "server": _entry("b")})
        assert caught.value.kind == "settings_unreadable"
        assert "which does not exist" in caught.value.message
        assert d.settings.is_symlink()
        assert not (d.settings.parent / "nowhere").exists()  # nothing created through it
        cpu = await _quiet_cpu(d)
        assert cpu < QUIET_SECONDS * QUIET_CPU_SHARE, f"{cpu:.2f} s of CPU after the refusal"
    assert _stop_seconds(d) < STOP_BOUND


async def test_a_symlinked_settings_file_stays_a_link_and_its_target_is_watched(
    spawn_daemon: Callable[..., DaemonProc],
) -> None:
    d = spawn_daemon()
    target = d.root / "dotfiles" / "mework.json"
    target.parent.mkdir()
    target.write_bytes(_document(GOOD))
    target.chmod(0o600)
    d.settings.symlink_to(target)
    d.start()
    async with d.connect() as client:
        await call(client, "events.subscribe", {"topics": TOPICS})
        # An edit of the target, in place, in a directory other than the link's.
        target.write_bytes(_document(FIXED))
        assert (await _next(client, "settings.reloaded"))["added"] == ["b"]
        # meworkd writes through the link, atomically, next to the target.
        await call(client, "servers.add", {"name": "c", "server": _entry("c")})
        event = await _next(client, "settings.reloaded")
        assert (event["source"], event["added"]) == ("write", ["c"])
        assert d.settings.is_symlink()
        assert d.settings.readlink() == target
        assert list(json.loads(target.read_bytes())["assets"]["mcpServers"]) == ["a", "b", "c"]
        assert oct(target.stat().st_mode & 0o777) == oct(0o600)
        assert sorted(p.name for p in target.parent.iterdir()) == ["mework.json"]
        # An editor's atomic replace of the target is seen too.
        doc = json.loads(target.read_bytes())
        del doc["assets"]["mcpServers"]["a"]
        _replace(target, json.dumps(doc).encode())
        assert (await _next(client, "settings.reloaded"))["removed"] == ["a"]
        # Pointed elsewhere: the new target is read and watched.
        other = d.root / "elsewhere" / "other.json"
        other.parent.mkdir()
        other.write_bytes(_document({"z": _entry("z")}))
        tmp_link = d.settings.with_name("link.tmp")
        tmp_link.symlink_to(other)
        os.replace(tmp_link, d.settings)
        event = await _next(client, "settings.reloaded")
        assert event["added"] == ["z"], event
        other.write_bytes(_document({"z": _entry("z"), "y": _entry("y")}))
        assert (await _next(client, "settings.reloaded"))["added"] == ["y"]
    assert _stop_seconds(d) < STOP_BOUND


async def _not_a_database(d: DaemonProc, database: Path) -> None:
    database.write_bytes(b"this is not an SQLite database\n" * 512)


async def _malformed(d: DaemonProc, database: Path) -> None:
    """A real database whose conversations table (its first, page 2) is overwritten. It is
    made by the daemon in the test's process: making it is not what is tested."""
    async with d.in_process(), d.connect() as client:
        await call(client, "conversations.create", {"mcpServers": ["a"]})
    # The daemon stopped: closing checkpointed the WAL into the file.
    with database.open("r+b") as f:
        f.seek(4096)
        f.write(b"\xa5" * 4096)


@pytest.mark.parametrize("damage", [_not_a_database, _malformed], ids=["not_a_db", "malformed"])
async def test_a_corrupt_state_database_is_moved_aside_at_start(
    spawn_daemon: Callable[..., DaemonProc],
    damage: Callable[[DaemonProc, Path], Awaitable[None]],
) -> None:
    d = spawn_daemon()
    d.write_settings(GOOD)
    d.state_dir.mkdir(mode=0o700)
    database = d.state_dir / "meworkd.sqlite3"
    await damage(d, database)
    damaged = database.read_bytes()
    log_before = len(d.log_text().splitlines())
    d.start()
    async with d.connect() as client:
        conv = await call(client, "conversations.create", {"mcpServers": ["a"]})
        listed = (await call(client, "conversations.list"))["conversations"]
        assert [c["id"] for c in listed] == [conv["id"]]
    kept = sorted(p.name for p in d.state_dir.glob("meworkd.sqlite3.corrupt-*"))
    assert len(kept) == 1, kept
    assert kept[0].endswith("Z"), kept  # named with the UTC time
    assert (d.state_dir / kept[0]).read_bytes() == damaged
    lines = d.log_text().splitlines()[log_before:]
    records = [json.loads(line) for line in lines if line.startswith("{")]
    moved = [r for r in records if r["event"] == "state.database_corrupt"]
    assert len(moved) == 1, moved
    assert moved[0]["moved_to"] == str(d.state_dir / kept[0])
    assert _stop_seconds(d) < STOP_BOUND
    # The fresh database is used from now on: a restart moves nothing and keeps the conversation.
    d.start()
    async with d.connect() as client:
        listed = (await call(client, "conversations.list"))["conversations"]
        assert [c["id"] for c in listed] == [conv["id"]]
    assert sorted(p.name for p in d.state_dir.glob("meworkd.sqlite3.corrupt-*")) == kept
    d.stop()


def _request(sock: socket.socket) -> None:
    sock.sendall(b'{"jsonrpc":"2.0","id":1,"method":"daemon.status"}\n')


async def _reply(sock: socket.socket) -> dict[str, Any]:
    """The first line the daemon sends on ``sock`` (bounded)."""
    data = b""
    with anyio.fail_after(BOUND):
        while not data.endswith(b"\n"):
            await anyio.wait_readable(sock)
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    return dict(json.loads(data))


async def test_out_of_file_descriptors_refuses_clearly_and_logs_little(
    spawn_daemon: Callable[..., DaemonProc],
) -> None:
    d = spawn_daemon()
    d.write_settings(GOOD)
    d.start()
    daemon = psutil.Process(d.pid)
    # A handful of descriptors above what it uses now; 60 connections need far more.
    limit = d.fds() + 8
    soft, hard = daemon.rlimit(psutil.RLIMIT_NOFILE)
    daemon.rlimit(psutil.RLIMIT_NOFILE, (limit, hard))
    log_before = len(d.log_text().splitlines())
    socks: list[socket.socket] = []
    try:
        for _ in range(60):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(str(d.socket))
            sock.setblocking(False)
            socks.append(sock)
            _request(sock)
        answered = refused = 0
        for sock in socks:
            reply = await _reply(sock)
            if "result" in reply:
                answered += 1  # served, and kept open: its descriptor stays taken
                continue
            assert reply["error"]["data"]["kind"] == "resource_exhausted", reply
            assert "file descriptors" in reply["error"]["data"]["detail"]
            refused += 1
            sock.close()  # as a client does on an error; the daemon turns the next one away
        assert answered >= 1, (answered, refused)
        assert refused >= 40, (answered, refused)
        # The shortage ends while the served connections stay open and the daemon waits for
        # the next one: that one is served, not turned away on the reserve descriptor.
        daemon.rlimit(psutil.RLIMIT_NOFILE, (soft, hard))
        async with d.connect() as client:
            assert (await call(client, "daemon.status"))["pid"] == d.pid
    finally:
        daemon.rlimit(psutil.RLIMIT_NOFILE, (soft, hard))
        for sock in socks:
            sock.close()
    lines = d.log_text().splitlines()[log_before:]
    about_accept = [line for line in lines if "accept" in line or "file_descriptors" in line]
    assert 1 <= len(about_accept) <= 2, about_accept
    assert any("rpc.out_of_file_descriptors" in line for line in about_accept)
    assert "Traceback" not in d.log_text()
    figures.record("hostile_files", fd_refused=refused, fd_log_lines=len(about_accept))
    assert _stop_seconds(d) < STOP_BOUND
