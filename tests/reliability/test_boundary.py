"""The local boundary holds against another local user (issue 14, point 3).

The hostile user is simulated as root (these tests need it): directories and files owned by
uid 65534 (``nobody``) with ``os.chown``, and sockets served by a process that dropped to that
uid with ``os.setuid``. Each class: the socket directory the daemon serves from, the lock file,
what every client checks before it sends a byte, the settings file's permissions (ssh's
StrictModes), and the modes of the files meworkd creates.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import pwd
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mework_client import Client, DaemonNotRunning, RpcError
from mework_client.aio import connect

from tests.common import START_BOUND
from tests.reliability.harness import (
    BOUND,
    FAKE,
    MEWORKD,
    DaemonProc,
    begin,
    bound_name,
    call,
    daemon_dir,
    new_mark,
    server_entry,
)

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="simulating another user needs root")

NOBODY = 65534
EXIT_UNSAFE_PATH = 77
MEWORKCTL = MEWORKD.with_name("meworkctl")

# A socket planted by "another user": it counts the bytes its clients send, and on a PROBE line
# (sent by the test itself) prints that count and exits. With ``as`` = nobody it gives the
# socket file to nobody and becomes nobody before it listens, so the peer credentials a client
# reads are nobody's (it binds as root: nobody may not reach every directory of the test).
PLANTED = r"""
import os, socket, sys
path, who = sys.argv[1], sys.argv[2]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
os.chmod(path, 0o666)
if who == "nobody":
    os.chown(path, 65534, 65534)
    os.setgroups([]); os.setgid(65534); os.setuid(65534)
srv.listen(16)
print("ready", flush=True)
received = 0
while True:
    conn, _ = srv.accept()
    conn.settimeout(10)
    data = b""
    try:
        while not data.endswith(b"\n") and (chunk := conn.recv(65536)):
            data += chunk
    except OSError:
        pass
    conn.close()
    if data == b"PROBE\n":
        print(received, flush=True)
        break
    received += len(data)
"""


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


# --- 1. the daemon serves only from a private socket directory ------------------------------


def _unsafe_socket_dir(root: Path, case: str) -> Path:
    """A socket directory under ``root`` made unsafe the way ``case`` says; returns it."""
    directory = root / "run"
    if case == "symlink":
        (root / "elsewhere").mkdir(mode=0o700)
        directory.symlink_to(root / "elsewhere")
    elif case == "other-owner":
        directory.mkdir(mode=0o700)
        os.chown(directory, NOBODY, NOBODY)
    elif case == "open-mode":
        directory.mkdir()
        directory.chmod(0o755)
    return directory


def run_meworkd(
    root: Path, socket_path: Path | None, **popen: Any
) -> subprocess.CompletedProcess[str]:
    """``meworkd`` expected to exit by itself, within the one start-up bound (``START_BOUND``:
    its refusal comes at start-up, after the imports); ``socket_path`` None: the default."""
    argv = [str(MEWORKD), *(["--socket", str(socket_path)] if socket_path else [])]
    argv += [
        "--settings",
        str(root / "cfg" / "settings.json"),
        "--state-dir",
        str(root / "state"),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOTIFY_", "LISTEN_"))}
    env |= popen.pop("env", {})
    return subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=START_BOUND, check=False, **popen
    )


@pytest.mark.parametrize("case", ["symlink", "other-owner", "open-mode"])
def test_the_daemon_refuses_a_socket_directory_that_is_not_private(case: str) -> None:
    with daemon_dir() as root:
        directory = _unsafe_socket_dir(root, case)
        done = run_meworkd(root, directory / "d.sock")
        assert done.returncode == EXIT_UNSAFE_PATH, done.stderr
        assert f"the socket directory {directory} " in done.stderr, done.stderr
        assert "0700" in done.stderr, done.stderr
        # Nothing was created in it, and nothing else was touched.
        assert not (directory / "d.sock").exists()
        assert not (directory / "d.sock.lock").exists()
        assert not (root / "state").exists()


def test_the_tmp_fallback_planted_by_another_user_is_refused() -> None:
    """``/tmp/mework-$UID`` (used without XDG_RUNTIME_DIR) made in advance by another user, with
    that user's socket in it: the daemon refuses it, and meworkctl never connects.

    The daemon and meworkctl run as a uid of no account on this machine, claimed for this test
    alone (see :func:`_claimed_fallback`): they compute the real fallback path from their own uid,
    while another suite on this machine, or another worker, claims a different one."""
    with daemon_dir() as root, _claimed_fallback() as (uid, fallback):
        os.chown(root, uid, uid)
        # Without XDG_* and MEWORK_*: the default socket path is the /tmp fallback.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MEWORK_"))}
        env |= {"HOME": str(root)}  # root's own is closed to that uid
        as_uid: dict[str, Any] = {"preexec_fn": lambda: _become(uid)}
        _skip_unless_capabilities_can_be_kept(as_uid)
        with _planted_fallback(fallback) as received:
            done = run_meworkd(root, None, env=env, **as_uid)
            ctl = subprocess.run(
                [str(MEWORKCTL), "status"],
                env=env,
                capture_output=True,
                text=True,
                timeout=BOUND,
                check=False,
                **as_uid,
            )
            assert received() == 0
    assert done.returncode == EXIT_UNSAFE_PATH, done.stderr
    problem = f"{fallback} belongs to uid {NOBODY}, not to uid {uid}"
    assert problem in done.stderr, done.stderr
    assert ctl.returncode == 1, ctl.stderr
    assert f"refusing to talk to {fallback}/meworkd.sock: its directory" in ctl.stderr, ctl.stderr
    assert problem in ctl.stderr, ctl.stderr


_PR_SET_KEEPCAPS, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_RAISE = 8, 47, 2
_CAP_DAC_READ_SEARCH = 2
_CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _become(uid: int) -> None:
    """Run in the child before exec: become ``uid`` (its own group, no others), keeping only
    the right to read and search any directory, so that the interpreter is reachable wherever
    it is installed (under /root, say). The checks under test compare owners with the uid,
    which that right does not change."""
    libc = ctypes.CDLL(None, use_errno=True)

    def check(result: int, what: str) -> None:
        if result != 0:  # the parent's subprocess call raises, naming preexec_fn
            raise OSError(ctypes.get_errno(), what)

    check(libc.prctl(_PR_SET_KEEPCAPS, 1, 0, 0, 0), "PR_SET_KEEPCAPS")
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    keep = 1 << _CAP_DAC_READ_SEARCH
    header = _CapHeader(_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)(_CapData(keep, keep, keep), _CapData(0, 0, 0))
    check(libc.capset(ctypes.byref(header), data), "capset")
    # exec keeps only ambient capabilities for a uid other than 0
    check(libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_RAISE, _CAP_DAC_READ_SEARCH, 0, 0), "ambient")


def _skip_unless_capabilities_can_be_kept(as_uid: dict[str, Any]) -> None:
    """Skip (saying why) where this root may not keep a capability past setuid, as in a
    container started without CAP_DAC_READ_SEARCH or CAP_SETPCAP."""
    try:
        subprocess.run([sys.executable, "-c", "pass"], check=True, timeout=BOUND, **as_uid)
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"cannot run a process as another uid with CAP_DAC_READ_SEARCH here: {exc}")


# Uids tried for the fallback test, far above any account a system makes (65534 is nobody).
_SPARE_UIDS = range(3_000_000, 3_000_000 + 4096)


@contextlib.contextmanager
def _claimed_fallback() -> Iterator[tuple[int, Path]]:
    """A uid with no account here whose ``/tmp/mework-<uid>`` this call made, so that nothing
    else uses it; starts from this process's id, as concurrent runs have different ones.
    The directory is removed afterwards (it must be empty by then)."""
    start = os.getpid() % len(_SPARE_UIDS)
    for i in range(len(_SPARE_UIDS)):
        uid = _SPARE_UIDS[(start + i) % len(_SPARE_UIDS)]
        try:
            pwd.getpwuid(uid)
            continue  # a real account: its fallback directory is not ours to plant
        except KeyError:
            pass
        fallback = Path(f"/tmp/mework-{uid}")
        try:
            fallback.mkdir(mode=0o755)  # atomic: whoever makes it owns it for this test
        except FileExistsError:
            continue
        try:
            yield uid, fallback
        finally:
            fallback.rmdir()
        return
    pytest.fail(f"every /tmp/mework-<uid> for uids {_SPARE_UIDS} exists already")


@contextlib.contextmanager
def _planted_fallback(fallback: Path) -> Iterator[Any]:
    """Another user's directory at the fallback path, open to all, with its socket in it."""
    try:
        fallback.chmod(0o755)
        os.chown(fallback, NOBODY, NOBODY)
        with _serve_planted(fallback / "meworkd.sock", "nobody") as received:
            yield received
    finally:
        for child in fallback.iterdir():
            child.unlink()


def test_the_lock_file_is_not_followed() -> None:
    with daemon_dir() as root:
        directory = root / "run"
        directory.mkdir(mode=0o700)
        victim = root / "precious.txt"
        victim.write_text("precious\n")
        (directory / "d.sock.lock").symlink_to(victim)
        done = run_meworkd(root, directory / "d.sock")
        assert done.returncode == EXIT_UNSAFE_PATH, done.stderr
        assert "lock file" in done.stderr, done.stderr
        assert "symbolic link" in done.stderr, done.stderr
        assert victim.read_text() == "precious\n"
        assert not (directory / "d.sock").exists()


# --- 2. every client checks the directory and the peer before it sends a byte ----------------


@contextlib.contextmanager
def _serve_planted(path: Path, who: str) -> Iterator[Any]:
    proc = subprocess.Popen(
        [sys.executable, "-c", PLANTED, str(path), who],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    try:
        assert proc.stdout.readline() == "ready\n"

        def received() -> int:
            """The bytes clients sent before this probe (ends the planted server)."""
            with socket.socket(socket.AF_UNIX) as probe:
                probe.connect(str(path))
                probe.sendall(b"PROBE\n")
            assert proc.stdout is not None
            count = int(proc.stdout.readline())
            proc.wait(timeout=BOUND)
            return count

        yield received
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=BOUND)
        proc.stdout.close()


@dataclass
class Planted:
    path: Path  # where the client is told the daemon listens
    problem: str  # what its refusal must name
    received: Any  # () -> bytes the planted server got from clients


PLANTED_CASES = ["foreign-peer", "symlink-dir", "other-owner-dir", "open-dir"]


@contextlib.contextmanager
def planted(case: str) -> Iterator[Planted]:
    """A socket another user planted, in one of the ways ``case`` names."""
    with daemon_dir() as root:
        directory = root / "run"
        target = directory
        who = "root"
        if case == "foreign-peer":  # a private directory of ours; the listener is nobody's
            directory.mkdir(mode=0o700)
            who, problem = "nobody", f"served by a process of uid {NOBODY}"
        elif case == "symlink-dir":
            target = root / "elsewhere"
            target.mkdir(mode=0o700)
            directory.symlink_to(target)
            problem = f"its directory {directory} is a symbolic link"
        elif case == "other-owner-dir":
            directory.mkdir(mode=0o700)
            os.chown(directory, NOBODY, NOBODY)
            who, problem = "nobody", f"its directory {directory} belongs to uid {NOBODY}"
        else:
            directory.mkdir()
            directory.chmod(0o755)
            problem = f"its directory {directory} is open to other users (mode 0755"
        with _serve_planted(target / "d.sock", who) as received:
            yield Planted(directory / "d.sock", problem, received)


@pytest.mark.parametrize("case", PLANTED_CASES)
def test_the_sync_client_sends_nothing_to_a_planted_socket(case: str) -> None:
    with planted(case) as p:
        with pytest.raises(DaemonNotRunning) as caught, Client(p.path, timeout=BOUND) as client:
            client.call("daemon.status")
        assert p.received() == 0
    assert f"refusing to talk to {p.path}" in str(caught.value)
    assert p.problem in str(caught.value)


@pytest.mark.parametrize("case", PLANTED_CASES)
@pytest.mark.anyio
async def test_the_async_client_sends_nothing_to_a_planted_socket(case: str) -> None:
    with planted(case) as p:
        with pytest.raises(DaemonNotRunning) as caught, anyio.fail_after(BOUND):
            async with connect(p.path) as client:
                await client.call("daemon.status")
        assert await anyio.to_thread.run_sync(p.received) == 0
    assert p.problem in str(caught.value)


@pytest.mark.parametrize("case", PLANTED_CASES)
def test_meworkctl_sends_nothing_to_a_planted_socket(case: str) -> None:
    with planted(case) as p:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MEWORK_"))}
        done = subprocess.run(
            [str(MEWORKCTL), "status"],
            env=env | {"MEWORK_SOCKET": str(p.path)},
            capture_output=True,
            text=True,
            timeout=BOUND,
            check=False,
        )
        assert p.received() == 0
    assert done.returncode == 1, done.stderr
    assert f"refusing to talk to {p.path}" in done.stderr, done.stderr
    assert p.problem in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


# --- 3. a settings file others can write is refused (StrictModes), one they can read warned --


def _loosen(d: DaemonProc, case: str) -> None:
    directory = d.settings.parent
    if case == "world-writable-file":
        d.settings.chmod(0o666)
    elif case == "group-writable-file":
        d.settings.chmod(0o620)
    elif case == "file-of-another-user":
        os.chown(d.settings, NOBODY, NOBODY)
    elif case == "world-writable-dir":
        directory.chmod(0o777)
    elif case == "dir-of-another-user":
        os.chown(directory, NOBODY, NOBODY)


def _settings_daemon(root: Path, servers: dict[str, Any], hooks: bool = True) -> DaemonProc:
    d = DaemonProc(root)
    d.settings = root / "cfg" / "settings.json"
    extra = {"hooks": {"PermissionRequest": [_allow_everything()]}} if hooks else None
    d.write_settings(servers, extra)
    d.settings.parent.chmod(0o700)
    return d


def _allow_everything() -> dict[str, Any]:
    allow = (
        'echo \'{"hookSpecificOutput":{"hookEventName":"PermissionRequest",'
        '"decision":{"behavior":"allow"}}}\''
    )
    return {"matcher": ".*", "hooks": [{"type": "command", "command": allow}]}


STRICT_CASES = [
    "world-writable-file",
    "group-writable-file",
    "file-of-another-user",
    "world-writable-dir",
    "dir-of-another-user",
]


@pytest.mark.parametrize("case", STRICT_CASES)
def test_a_settings_file_others_can_write_is_not_used(case: str) -> None:
    with daemon_dir() as root:
        d = _settings_daemon(root, {"planted": server_entry(FAKE, mark=new_mark())})
        _loosen(d, case)
        d.start()
        try:
            with d.client() as c:
                status = c.call("daemon.status")
                servers = c.call("servers.list")["servers"]
                document = c.call("settings.get")["document"]
                with pytest.raises(RpcError) as write:
                    c.call("servers.add", {"name": "x", "server": {"command": "true"}})
            ctl = subprocess.run(
                [str(MEWORKCTL), "status"],
                env=os.environ | {"MEWORK_SOCKET": str(d.socket)},
                capture_output=True,
                text=True,
                timeout=BOUND,
                check=False,
            )
        finally:
            d.stop()
        log = d.log_text()
    error = status["settingsError"]
    assert error is not None, status
    assert "meworkd uses nothing from the file (no servers, no hooks)" in error
    assert servers == []
    assert document["hooks"] == {"PermissionRequest": []}, document
    assert write.value.kind == "settings_unreadable"
    assert "meworkd uses nothing from the file" in ctl.stdout, ctl.stdout
    assert '"settings.unreadable"' in log


@pytest.mark.anyio
async def test_a_settings_file_made_writable_while_running_is_not_reloaded() -> None:
    mark = new_mark()
    with daemon_dir() as root:
        d = _settings_daemon(root, {"good": server_entry(FAKE, mark=mark)}, hooks=False)
        d.start()
        try:
            async with d.connect() as client:
                await call(
                    client,
                    "events.subscribe",
                    {"topics": ["settings.invalid", "settings.reloaded"]},
                )
                d.settings.chmod(0o666)  # the user slips; another user then writes to it
                planted = {
                    "assets": {"mcpServers": {"good": server_entry(FAKE, mark=mark)}},
                    "hooks": {"PermissionRequest": [_allow_everything()]},
                }
                planted["assets"]["mcpServers"]["evil"] = server_entry(FAKE, mark=mark)
                d.settings.write_text(json.dumps(planted))
                with anyio.fail_after(BOUND):
                    _topic, data = await client.next_event("settings.invalid")
                assert "is writable by group or others (mode 0666)" in data["error"], data
                listed = (await call(client, "servers.list"))["servers"]
                assert [s["name"] for s in listed] == ["good"]
                document = (await call(client, "settings.get"))["document"]
                assert "PermissionRequest" not in document.get("hooks", {}), document
                # Fixing the mode alone is enough: the file is read again and applied.
                d.settings.chmod(0o600)
                with anyio.fail_after(BOUND):
                    _topic, reloaded = await client.next_event("settings.reloaded")
                assert reloaded["added"] == ["evil"], reloaded
                assert (await call(client, "daemon.status"))["settingsError"] is None
        finally:
            d.stop()


def test_a_settings_file_others_can_read_is_used_with_a_warning() -> None:
    with daemon_dir() as root:
        d = _settings_daemon(root, {"mine": server_entry(FAKE, mark=new_mark())}, False)
        d.settings.chmod(0o644)
        d.start()
        try:
            with d.client() as c:
                status = c.call("daemon.status")
                servers = c.call("servers.list")["servers"]
                got = c.call("settings.get")
        finally:
            d.stop()
        log = d.log_text()
    assert [s["name"] for s in servers] == ["mine"]
    assert status["settingsError"] is None
    warning = f"the settings file {d.settings} is readable by group or others (mode 0644)"
    assert [w.startswith(warning) for w in status["settingsWarnings"]] == [True], status
    assert [w.startswith(warning) for w in got["warnings"]] == [True], got
    assert '"settings.exposed"' in log


# --- 4. files meworkd creates are 0600, its directories 0700 -----------------------------------


@pytest.mark.anyio
async def test_every_file_meworkd_creates_is_private_whatever_the_umask() -> None:
    with daemon_dir() as root:
        d = DaemonProc(root)
        d.settings = root / "cfg" / "mework" / "settings.json"  # meworkd makes this one too
        old = os.umask(0o022)  # the usual umask: what meworkd creates must not follow it
        try:
            d.start()
        finally:
            os.umask(old)
        try:
            async with d.connect() as client:
                await call(client, "servers.add", {"name": "k", "server": _kitchen()})
                turn = await begin(client, ["k"])
                name = bound_name(turn, "k", "echo")
                params = {"turnId": turn["turnId"], "name": name, "arguments": {"text": "x"}}
                assert not (await call(client, "turns.callTool", params))["isError"]
                await call(client, "turns.end", {"turnId": turn["turnId"]})
            listing = _listing(d)
        finally:
            d.stop()
    names = {path.name for path in listing}
    assert {"meworkd.sqlite3-wal", "meworkd.sqlite3-shm"} <= names, names
    assert any(n.startswith("children-") and n.endswith(".json") for n in names), names  # ledger
    wrong = {str(p): f"{m:04o}" for p, (m, expected) in listing.items() if m != expected}
    assert wrong == {}, wrong


def _kitchen() -> dict[str, Any]:
    return server_entry(FAKE, mark=new_mark(), timeout=20)  # a busy machine starts slowly


def _listing(d: DaemonProc) -> dict[Path, tuple[int, int]]:
    """Every directory and file meworkd made (socket, settings and state): its mode, and the
    mode it should have (0700 for a directory, 0600 for anything else)."""
    found: dict[Path, tuple[int, int]] = {}
    for top in (d.socket.parent, d.settings.parent, d.state_dir):
        for path in (top, *top.rglob("*")):
            found[path] = (mode_of(path), 0o700 if path.is_dir() else 0o600)
    return found
