"""systemd integration: the unit files, sd_notify datagrams and socket activation."""

from __future__ import annotations

import functools
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from mework_protocol.address import default_socket_path

from meworkd.app import systemd

REPO = Path(__file__).resolve().parent.parent
SERVICE_FILE = REPO / "systemd" / "meworkd.service"
SOCKET_FILE = REPO / "systemd" / "meworkd.socket"


# -- systemd-analyze verify (also used by test_service_install) ---------------------------------


@pytest.fixture(autouse=True)
def _close_module_notifier() -> Iterator[None]:
    yield
    systemd.notifier.close()  # notify() caches a socket in the process-wide notifier


def _run_verify(units: list[Path], runtime_dir: Path) -> subprocess.CompletedProcess[str]:
    """``systemd-analyze --user verify``: a user manager needs ``XDG_RUNTIME_DIR`` (as root with
    no user session it is unset, and verify then fails with "Failed to initialize manager")."""
    analyze = shutil.which("systemd-analyze")
    assert analyze is not None
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime_dir), "SYSTEMD_LOG_COLOR": "0"}
    return subprocess.run(
        [analyze, "--user", "verify", *map(str, units)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@functools.cache
def _verify_unavailable() -> str | None:
    """Why systemd-analyze cannot verify anything here, or None if it can (probed once)."""
    if shutil.which("systemd-analyze") is None:
        return "systemd-analyze is not installed (Debian: apt-get install systemd)"
    with tempfile.TemporaryDirectory(prefix="mw-probe-") as d:
        root = Path(d)
        runtime = root / "run"
        runtime.mkdir(mode=0o700)
        probe = root / "mw-probe.service"
        probe.write_text("[Service]\nType=oneshot\nExecStart=/bin/true\n")
        done = _run_verify([probe], runtime)
    if done.returncode != 0:
        return f"systemd-analyze cannot verify even a trivial unit here: {done.stderr.strip()}"
    return None


def verify_units(*units: Path) -> None:
    """Assert that ``systemd-analyze --user verify`` accepts ``units`` without a complaint."""
    reason = _verify_unavailable()
    if reason is not None:
        print(f"SKIP: {reason}")
        pytest.skip(reason)
    with tempfile.TemporaryDirectory(prefix="mw-run-") as d:
        runtime = Path(d)
        runtime.chmod(0o700)
        done = _run_verify(list(units), runtime)
    assert done.returncode == 0, done.stderr
    # Unknown keys and bad values are warnings with exit status 0: none may concern our units.
    names = {unit.stem for unit in units}
    complaints = [line for line in done.stderr.splitlines() if any(n in line for n in names)]
    assert complaints == [], done.stderr


def parse_unit(text: str) -> dict[str, dict[str, list[str]]]:
    """A unit file as {section: {key: [values...]}} (comments dropped, no continuation lines)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None, f"key outside a section: {line}"
        assert not line.endswith("\\"), f"continuation lines are not expected: {line}"
        key, sep, value = line.partition("=")
        assert sep, f"not a key=value line: {line}"
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


@pytest.fixture
def units_copy(short_tmp: Path) -> tuple[Path, Path]:
    """The repository's units, with ExecStart= pointing at an existing executable."""
    default = "ExecStart=%h/.local/bin/meworkd "
    text = SERVICE_FILE.read_text()
    assert text.count(default) == 1
    service = short_tmp / "meworkd.service"
    service.write_text(text.replace(default, "ExecStart=/bin/true "))
    sock = short_tmp / "meworkd.socket"
    sock.write_text(SOCKET_FILE.read_text())
    return service, sock


def test_unit_files_verify(units_copy: tuple[Path, Path]) -> None:
    verify_units(*units_copy)


def test_verify_catches_a_broken_unit(units_copy: tuple[Path, Path]) -> None:
    # The check above is only worth something if verify fails on a bad unit.
    service, sock = units_copy
    service.write_text(service.read_text().replace("ExecStart=/bin/true ", "ExecStart=/no/such "))
    with pytest.raises(AssertionError):
        verify_units(service, sock)
    service.write_text(service.read_text().replace("Type=notify\n", "Type=notify\nBogus=1\n"))
    with pytest.raises(AssertionError):
        verify_units(service, sock)


def test_service_unit_keys() -> None:
    unit = parse_unit(SERVICE_FILE.read_text())
    assert unit["Unit"]["Description"]
    assert unit["Unit"]["Documentation"]
    assert unit["Unit"]["Requires"] == ["meworkd.socket"]
    assert unit["Unit"]["After"] == ["meworkd.socket"]
    service = unit["Service"]
    expected = {
        "Type": ["notify"],
        "NotifyAccess": ["main"],
        "ExecStart": ["%h/.local/bin/meworkd --log-format json"],
        "ExecReload": ["/bin/kill -HUP $MAINPID"],
        "Restart": ["on-failure"],
        "RestartSec": ["2"],
        "RestartPreventExitStatus": ["75 77"],
        "TimeoutStopSec": ["20"],
        "KillMode": ["mixed"],
        "OOMPolicy": ["continue"],
        "NoNewPrivileges": ["yes"],
    }
    assert {key: service.get(key) for key in expected} == expected
    # Sandboxing that would break MCP servers working on the user's files, or JITs.
    forbidden = {
        "ProtectHome",
        "PrivateTmp",
        "ProtectSystem",
        "PrivateUsers",
        "MemoryDenyWriteExecute",
        "RestrictNamespaces",
        "UMask",
    }
    assert forbidden.isdisjoint(service)
    assert unit["Install"] == {"WantedBy": ["default.target"], "Also": ["meworkd.socket"]}


def test_socket_unit_keys() -> None:
    unit = parse_unit(SOCKET_FILE.read_text())
    assert unit["Unit"]["Description"]
    assert unit["Socket"] == {
        "ListenStream": ["%t/mework/meworkd.sock"],
        "SocketMode": ["0600"],
        "DirectoryMode": ["0700"],
        "RemoveOnStop": ["yes"],
    }
    assert unit["Install"] == {"WantedBy": ["sockets.target"]}


def test_socket_unit_matches_the_default_socket_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # %t is $XDG_RUNTIME_DIR for a user manager: the same place clients look by default.
    monkeypatch.delenv("MEWORK_SOCKET", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1000")
    (listen,) = parse_unit(SOCKET_FILE.read_text())["Socket"]["ListenStream"]
    assert Path(listen.replace("%t", "/run/user/1000")) == default_socket_path()


# -- sd_notify ----------------------------------------------------------------------------------


@pytest.fixture
def receiver(short_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    """A datagram socket standing in for the service manager, named by NOTIFY_SOCKET."""
    path = short_tmp / "notify"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(path))
        sock.settimeout(5)
        monkeypatch.setenv("NOTIFY_SOCKET", str(path))
        yield sock


def test_notify_without_notify_socket_is_a_noop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert systemd.notify("READY=1") is False
    assert systemd.Notifier().ready() is False
    monkeypatch.setenv("NOTIFY_SOCKET", "")
    assert systemd.notify("READY=1") is False


def test_notify_sends_one_datagram(receiver: socket.socket) -> None:
    assert systemd.notify("READY=1", "STATUS=serving 3 sessions") is True
    assert receiver.recv(4096) == b"READY=1\nSTATUS=serving 3 sessions"
    assert systemd.notify("STATUS=ünïcode") is True
    assert receiver.recv(4096) == "STATUS=ünïcode".encode()
    assert systemd.notify() is False  # nothing to send


def test_notifier_helpers(receiver: socket.socket) -> None:
    notifier = systemd.Notifier()
    try:
        assert notifier.ready()
        assert receiver.recv(4096) == b"READY=1"
        assert notifier.ready("listening")
        assert receiver.recv(4096) == b"READY=1\nSTATUS=listening"
        assert notifier.status("two\nlines")
        assert receiver.recv(4096) == b"STATUS=two lines"
        assert notifier.stopping("bye")
        assert receiver.recv(4096) == b"STOPPING=1\nSTATUS=bye"

        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        assert notifier.reloading("reloading settings")
        after = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        reloading, usec, status = receiver.recv(4096).decode().split("\n")
        assert reloading == "RELOADING=1"
        assert usec.startswith("MONOTONIC_USEC=")
        assert before <= int(usec.removeprefix("MONOTONIC_USEC=")) <= after
        assert status == "STATUS=reloading settings"
    finally:
        notifier.close()


def test_notifier_keeps_one_socket(receiver: socket.socket) -> None:
    notifier = systemd.Notifier()
    try:
        assert notifier.notify("A=1")
        first = notifier._sock
        assert first is not None
        assert notifier.notify("A=2")
        assert notifier._sock is first
        assert [receiver.recv(64), receiver.recv(64)] == [b"A=1", b"A=2"]
    finally:
        notifier.close()
    assert first.fileno() == -1


def test_notify_abstract_address(monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"mework-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(5)
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        assert systemd.notify("READY=1", "STATUS=abstract") is True
        assert sock.recv(4096) == b"READY=1\nSTATUS=abstract"


@pytest.mark.parametrize("value", ["relative/notify", "@", "vsock:2:1234"])
def test_notify_unsupported_address(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", value)
    assert systemd.notify("READY=1") is False


def test_notify_failures_never_raise(short_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", str(short_tmp / "missing"))
    assert systemd.notify("READY=1") is False
    gone = short_tmp / "gone"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(gone))
    monkeypatch.setenv("NOTIFY_SOCKET", str(gone))  # the file exists, nobody listens
    assert systemd.notify("READY=1") is False
    monkeypatch.setenv("NOTIFY_SOCKET", "/" + "x" * 200)  # longer than sun_path
    assert systemd.notify("READY=1") is False


def test_notify_does_not_hang_on_a_full_queue(receiver: socket.socket) -> None:
    # The receiver never reads: once its queue is full a send gives up after about a second.
    notifier = systemd.Notifier()
    try:
        start = time.monotonic()
        results = []
        for i in range(5000):
            results.append(notifier.notify(f"STATUS={i}"))
            if not results[-1]:
                break
        assert results[-1] is False
        assert results[0] is True
        assert time.monotonic() - start < 10
    finally:
        notifier.close()


# -- socket activation --------------------------------------------------------------------------

# Runs ``code`` the way systemd would: the given fds at 3, 4, ... and LISTEN_PID set to the pid
# that execs the code (exec keeps the pid). ``code`` prints one JSON line.
_LAUNCHER = textwrap.dedent(
    """
    import fcntl, json, os, sys
    spec = json.loads(sys.argv[1])
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in spec["fds"]]
    for fd in spec["fds"]:
        os.close(fd)
    for i, fd in enumerate(high):
        os.dup2(fd, 3 + i)  # inheritable, like the fds systemd passes
        os.close(fd)
    pid = spec["listen_pid"]
    os.environ["LISTEN_PID"] = str(os.getpid() if pid == "self" else pid)
    os.environ.update(spec["env"])
    os.execv(sys.executable, [sys.executable, "-c", spec["code"]])
    """
)

_REPORT_FDS = textwrap.dedent(
    """
    import json, os
    from meworkd.app.systemd import listen_fds
    socks = listen_fds()
    print(json.dumps({
        "fds": [s.fileno() for s in socks],
        "families": [s.family.name for s in socks],
        "types": [s.type.name for s in socks],
        "inheritable": [os.get_inheritable(s.fileno()) for s in socks],
        "names": [s.getsockname() for s in socks],
        "env": {k: os.environ.get(k) for k in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES")},
        "again": len(listen_fds()),
        "fd3_open": os.path.exists("/proc/self/fd/3"),
    }))
    """
)

_REPORT_UNIX = textwrap.dedent(
    """
    import json
    from meworkd.app.systemd import listen_unix_socket
    try:
        sock = listen_unix_socket()
    except ValueError as exc:
        print(json.dumps({"error": str(exc)}))
    else:
        if sock is None:
            print(json.dumps({"sock": None}))
        else:
            sock.settimeout(5)
            conn, _ = sock.accept()
            print(json.dumps({"fd": sock.fileno(), "name": sock.getsockname(),
                              "got": conn.recv(64).decode()}))
    """
)


def run_activated(
    code: str, fds: list[int], *, listen_pid: str | int = "self", env: dict[str, str] | None = None
) -> dict[str, object]:
    spec = {"fds": fds, "listen_pid": listen_pid, "env": env or {}, "code": code}
    base = {k: v for k, v in os.environ.items() if not k.startswith("LISTEN_")}
    done = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, json.dumps(spec)],
        pass_fds=fds,
        env=base,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.fixture
def listener(short_tmp: Path) -> Iterator[socket.socket]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(short_tmp / "meworkd.sock"))
        sock.listen()
        yield sock


def test_listen_fds_in_an_activated_process(listener: socket.socket) -> None:
    env = {"LISTEN_FDS": "1", "LISTEN_FDNAMES": "meworkd.socket"}
    got = run_activated(_REPORT_FDS, [listener.fileno()], env=env)
    assert got == {
        "fds": [3],
        "families": ["AF_UNIX"],
        "types": ["SOCK_STREAM"],
        "inheritable": [False],
        "names": [listener.getsockname()],
        "env": {"LISTEN_PID": None, "LISTEN_FDS": None, "LISTEN_FDNAMES": None},
        "again": 0,
        "fd3_open": True,
    }


def test_listen_fds_pid_mismatch(listener: socket.socket) -> None:
    env = {"LISTEN_FDS": "1", "LISTEN_FDNAMES": "meworkd.socket"}
    got = run_activated(_REPORT_FDS, [listener.fileno()], listen_pid=1, env=env)
    assert got["fds"] == []
    assert got["env"] == {"LISTEN_PID": None, "LISTEN_FDS": None, "LISTEN_FDNAMES": None}
    assert got["fd3_open"] is True  # not ours to close


@pytest.mark.parametrize("count", ["0", "-1", "many", ""])
def test_listen_fds_bad_count(listener: socket.socket, count: str) -> None:
    got = run_activated(_REPORT_FDS, [listener.fileno()], env={"LISTEN_FDS": count})
    assert got["fds"] == []
    assert got["env"] == {"LISTEN_PID": None, "LISTEN_FDS": None, "LISTEN_FDNAMES": None}


def test_listen_fds_in_process_without_activation(monkeypatch: pytest.MonkeyPatch) -> None:
    # Safe in the test process: no fd is looked at unless LISTEN_PID is this process.
    monkeypatch.delenv("LISTEN_PID", raising=False)
    monkeypatch.delenv("LISTEN_FDS", raising=False)
    assert systemd.listen_fds() == []
    assert systemd.listen_unix_socket() is None
    monkeypatch.setenv("LISTEN_PID", str(os.getpid() + 1))
    monkeypatch.setenv("LISTEN_FDS", "1")
    monkeypatch.setenv("LISTEN_FDNAMES", "x")
    assert systemd.listen_fds() == []
    assert not {"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"} & set(os.environ)


def test_listen_unix_socket_accepts(listener: socket.socket) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.connect(listener.getsockname())  # queued in the backlog for the child to accept
        client.sendall(b"ping")
        got = run_activated(_REPORT_UNIX, [listener.fileno()], env={"LISTEN_FDS": "1"})
    assert got == {"fd": 3, "name": listener.getsockname(), "got": "ping"}


def test_listen_unix_socket_picks_the_stream_listener(listener: socket.socket) -> None:
    with (
        socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as dgram,
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client,
    ):
        client.connect(listener.getsockname())
        client.sendall(b"second")
        fds = [dgram.fileno(), listener.fileno()]
        got = run_activated(_REPORT_UNIX, fds, env={"LISTEN_FDS": "2"})
    assert got == {"fd": 4, "name": listener.getsockname(), "got": "second"}


def test_listen_unix_socket_rejects_other_sockets(short_tmp: Path) -> None:
    a, b = socket.socketpair()
    with a, b, socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
        tcp.bind(("127.0.0.1", 0))
        tcp.listen()
        got = run_activated(_REPORT_UNIX, [a.fileno(), tcp.fileno()], env={"LISTEN_FDS": "2"})
    error = got["error"]
    assert isinstance(error, str)
    assert "no listening AF_UNIX SOCK_STREAM socket" in error
    assert "fd 3: AF_UNIX/SOCK_STREAM;" in error  # connected, not listening
    assert "fd 4: AF_INET/SOCK_STREAM listening" in error


def test_listen_fds_rejects_a_non_socket() -> None:
    r, w = os.pipe()
    try:
        code = textwrap.dedent(
            """
            import json
            from meworkd.app.systemd import listen_fds
            try:
                listen_fds()
            except ValueError as exc:
                print(json.dumps({"e": str(exc)}))
            """
        )
        got = run_activated(code, [r], env={"LISTEN_FDS": "1"})
    finally:
        os.close(r)
        os.close(w)
    assert got == {"e": "LISTEN_FDS=1, but fd 3 is not a socket"}


def test_child_environ_strips_systemd_variables() -> None:
    env = {"PATH": "/bin", "NOTIFY_SOCKET": "/run/x", "LISTEN_FDS": "1", "WATCHDOG_USEC": "5"}
    assert systemd.child_environ(env) == {"PATH": "/bin"}
    assert "NOTIFY_SOCKET" not in systemd.child_environ()
