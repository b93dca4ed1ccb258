"""The real daemon under systemd's protocols, without systemd: a listening socket handed over as
fd 3 (LISTEN_FDS/LISTEN_PID) and readiness messages on a NOTIFY_SOCKET datagram socket."""

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mework_client import Client

MEWORKD = str(Path(sys.executable).with_name("meworkd"))


def receive(sock: socket.socket) -> list[str]:
    data = sock.recv(4096).decode()
    return data.split("\n")


def messages_until(sock: socket.socket, wanted: str) -> list[str]:
    seen: list[str] = []
    while wanted not in seen:
        seen += receive(sock)  # bounded by the socket timeout
    return seen


@pytest.fixture
def activated(short_tmp: Path) -> Iterator[tuple[subprocess.Popen[bytes], socket.socket, Path]]:
    listen_path = short_tmp / "act.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(listen_path))
    listener.listen()
    notify_path = short_tmp / "notify"
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(notify_path))
    notify.settimeout(60)  # a start-up bound, not a timing claim: a busy machine is slow
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(short_tmp / "config"),
        "XDG_STATE_HOME": str(short_tmp / "state"),
        "NOTIFY_SOCKET": str(notify_path),
        "LISTEN_FDS": "1",
    }
    fd = listener.fileno()
    log = (short_tmp / "meworkd.log").open("wb")
    # The launcher puts the socket on fd 3 and execs meworkd in its own pid, as systemd does.
    launcher = (
        "import os, sys; os.dup2(int(sys.argv[1]), 3); "
        "os.environ['LISTEN_PID'] = str(os.getpid()); os.execv(sys.argv[2], sys.argv[2:])"
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            launcher,
            str(fd),
            MEWORKD,
            "--socket",
            str(short_tmp / "unused" / "d.sock"),
        ],
        env=env,
        pass_fds=(fd,),
        stderr=log,
    )
    listener.close()
    try:
        yield proc, notify, listen_path
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        log.close()
        print((short_tmp / "meworkd.log").read_text())  # shown by pytest when the test fails
        notify.close()


def test_socket_activation_and_readiness_protocol(
    activated: tuple[subprocess.Popen[bytes], socket.socket, Path],
) -> None:
    proc, notify, listen_path = activated
    startup = messages_until(notify, "READY=1")
    status_lines = [m for m in startup if m.startswith("STATUS=")]
    # READY=1 is sent only once the handed-over socket serves and settings are loaded.
    with Client(listen_path, timeout=10) as client:
        status = client.call("daemon.status")
    assert status["pid"] == proc.pid
    assert status["settingsError"] is None
    assert any("servers" in line and "sessions" in line for line in status_lines)

    proc.send_signal(signal.SIGHUP)
    reload = messages_until(notify, "READY=1")
    assert "RELOADING=1" in reload
    assert any(m.startswith("MONOTONIC_USEC=") for m in reload)

    proc.send_signal(signal.SIGTERM)
    assert "STOPPING=1" in messages_until(notify, "STOPPING=1")
    assert proc.wait(15) == 0
    # systemd owns an activated socket: the daemon must not remove it.
    assert listen_path.exists()
    assert not (listen_path.parent / "unused" / "d.sock").exists()
