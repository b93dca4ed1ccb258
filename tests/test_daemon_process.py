"""The meworkd executable: XDG defaults and overrides, the files it creates and their modes, one
daemon per socket (exit 75), signals (SIGTERM/SIGINT stop cleanly, SIGHUP reloads), log formats."""

import json
import os
import signal
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mework_client import Client

from meworkd.settings import DEFAULT_DOCUMENT
from tests.common import START_BOUND
from tests.daemon_fixture import (
    MEWORKD,
    DaemonEnv,
    make_env,
    read_doc,
    start_process,
    stop_process,
    xdg_environ,
)

EXIT_ALREADY_RUNNING = 75


@contextmanager
def meworkd(
    env: DaemonEnv, *args: str, extra_env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """A daemon process that serves (tests.daemons.start_meworkd), never left behind."""
    proc = start_process(env, *args, extra_env=extra_env)
    try:
        yield proc
    finally:
        stop_process(proc)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def finish(proc: subprocess.Popen[bytes], timeout: float = 60) -> tuple[int, str]:
    _out, err = proc.communicate(timeout=timeout)
    return proc.returncode, err.decode()


def test_first_start_with_xdg_defaults_and_a_second_instance(short_tmp: Path) -> None:
    env = make_env(short_tmp)
    env.runtime_dir.chmod(0o755)
    assert not env.settings.exists()
    with meworkd(env) as first:
        # A minimal valid settings document, 0600, in a private directory.
        assert read_doc(env.settings) == DEFAULT_DOCUMENT
        assert mode(env.settings) == 0o600
        assert mode(env.settings.parent) == 0o700
        # Socket 0600 in a 0700 directory; the state directory is private too.
        assert stat.S_ISSOCK(env.socket.lstat().st_mode)
        assert mode(env.socket) == 0o600
        assert mode(env.socket.parent) == 0o700
        assert mode(env.state_dir) == 0o700
        with Client(env.socket, timeout=5) as client:
            status = client.call("daemon.status")
        assert status["pid"] == first.pid
        assert status["settingsPath"] == str(env.settings)
        assert status["socketPath"] == str(env.socket)
        assert status["stateDir"] == str(env.state_dir)

        socket_inode = env.socket.lstat().st_ino
        settings_before = env.settings.read_bytes()
        # A second start is refused at once (it never serves, so no starter waits for it).
        second = subprocess.run(
            [str(MEWORKD)],
            env=xdg_environ(env),
            capture_output=True,
            timeout=START_BOUND,
            check=False,
        )
        assert second.returncode == EXIT_ALREADY_RUNNING
        err = second.stderr.decode()
        assert f"another meworkd is already serving {env.socket}" in err
        assert "Traceback" not in err
        # The first is untouched and still answering.
        assert first.poll() is None
        assert env.socket.lstat().st_ino == socket_inode
        assert env.settings.read_bytes() == settings_before
        with Client(env.socket, timeout=5) as client:
            assert client.call("daemon.status")["pid"] == first.pid

        first.send_signal(signal.SIGTERM)
        code, err = finish(first)
    assert code == 0
    assert not env.socket.exists()
    # Default log format: one JSON object per line on stderr.
    records = [json.loads(line) for line in err.splitlines() if line.strip()]
    events = [r["event"] for r in records]
    assert "daemon.ready" in events
    assert "settings.created" in events
    assert events[-1] == "daemon.stopped"
    assert all("level" in r and "timestamp" in r for r in records)


def test_explicit_paths_sigint_and_console_logs(short_tmp: Path) -> None:
    env = make_env(short_tmp)
    settings = short_tmp / "elsewhere" / "my-settings.json"
    socket = short_tmp / "s" / "d.sock"
    state = short_tmp / "state"
    args = ("--settings", str(settings), "--socket", str(socket), "--state-dir", str(state))
    with meworkd(env, *args, "--log-format", "console") as proc:
        assert mode(settings) == 0o600
        assert read_doc(settings) == DEFAULT_DOCUMENT
        assert mode(socket) == 0o600
        assert mode(socket.parent) == 0o700
        assert state.is_dir()
        with Client(socket, timeout=5) as client:
            status = client.call("daemon.status")
        assert status["settingsPath"] == str(settings)
        assert status["socketPath"] == str(socket)
        assert status["stateDir"] == str(state)
        # The XDG defaults were not touched.
        assert not env.settings.exists()
        assert not env.socket.exists()
        proc.send_signal(signal.SIGINT)
        code, err = finish(proc)
    assert code == 0
    assert not socket.exists()
    assert "daemon.ready" in err
    first = next(line for line in err.splitlines() if line.strip())
    assert not first.lstrip().startswith("{")  # the console renderer, not JSON


def test_environment_overrides_sighup_and_log_level(short_tmp: Path) -> None:
    env = make_env(short_tmp)
    settings = short_tmp / "env-settings.json"
    socket = short_tmp / "env.sock"
    settings.write_text(json.dumps({"assets": {"mcpServers": {"a": {"command": "a"}}}}))
    settings.chmod(0o600)
    extra = {"MEWORK_SETTINGS": str(settings), "MEWORK_SOCKET": str(socket)}
    with meworkd(env, "--log-level", "warning", extra_env=extra) as proc:
        with Client(socket, timeout=5) as client:
            assert client.call("daemon.status")["settingsPath"] == str(settings)
            assert [s["name"] for s in client.call("servers.list")["servers"]] == ["a"]
            events = client.events(["settings.reloaded"])
            proc.send_signal(signal.SIGHUP)
            topic, data = next(events)  # bounded by the client's 5 s socket timeout
            assert topic == "settings.reloaded"
            assert data["source"] == "signal"
            assert data["added"] == []
        # SIGHUP applies an edit too (whichever of the watcher and the signal reads it first).
        with Client(socket, timeout=5) as client:
            events = client.events(["settings.reloaded"])
            settings.write_text(
                json.dumps(
                    {"assets": {"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}}}
                )
            )
            proc.send_signal(signal.SIGHUP)
            seen = []
            while not any("b" in d["added"] for d in seen):
                seen.append(next(events)[1])
            assert {d["source"] for d in seen} <= {"signal", "file"}
        assert proc.poll() is None  # SIGHUP does not stop it
        with Client(socket, timeout=5) as client:
            assert client.call("daemon.shutdown") == {"stopping": True}
        code, err = finish(proc)
    assert code == 0
    assert not socket.exists()
    levels = {json.loads(line)["level"] for line in err.splitlines() if line.strip()}
    assert "info" not in levels  # --log-level warning
    assert "daemon.ready" not in err


def test_a_crashed_daemon_leaves_nothing_that_blocks_a_restart(short_tmp: Path) -> None:
    env = make_env(short_tmp)
    with meworkd(env) as proc:
        proc.kill()  # no cleanup at all: the socket file stays behind
        proc.wait(timeout=10)
    assert env.socket.exists()
    with meworkd(env) as proc:
        with Client(env.socket, timeout=5) as client:
            assert client.call("daemon.status")["pid"] == proc.pid
        proc.send_signal(signal.SIGTERM)
        assert finish(proc)[0] == 0


def test_command_line_errors_and_version(short_tmp: Path) -> None:
    env = make_env(short_tmp)
    done = subprocess.run(
        [str(MEWORKD), "--log-format", "xml"],
        env=xdg_environ(env),
        capture_output=True,
        timeout=START_BOUND,
        check=False,
    )
    assert done.returncode == 2
    assert b"--log-format" in done.stderr
    assert not env.settings.exists()
    done = subprocess.run(
        [str(MEWORKD), "--version"],
        env=xdg_environ(env),
        capture_output=True,
        timeout=START_BOUND,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout.startswith(b"meworkd ")
    assert os.path.basename(MEWORKD) == "meworkd"
