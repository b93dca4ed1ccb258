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

from tests.daemons import Notices, start_meworkd, stop_meworkd


@pytest.fixture
def activated(short_tmp: Path) -> Iterator[tuple[subprocess.Popen[bytes], Notices, Path]]:
    """meworkd started as systemd starts it, serving once its READY=1 came (tests.daemons)."""
    listen_path = short_tmp / "act.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(listen_path))
    listener.listen()
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(short_tmp / "config"),
        "XDG_STATE_HOME": str(short_tmp / "state"),
        "LISTEN_FDS": "1",
    }
    fd = listener.fileno()
    log = (short_tmp / "meworkd.log").open("wb")
    # The launcher puts the socket on fd 3 and execs meworkd in its own pid, as systemd does.
    launcher = (
        "import os, sys; os.dup2(int(sys.argv[1]), 3); "
        "os.environ['LISTEN_PID'] = str(os.getpid()); os.execv(sys.argv[2], sys.argv[2:])"
    )
    try:
        proc, notices = start_meworkd(
            "--socket",
            str(short_tmp / "unused" / "d.sock"),
            env=env,
            notify=short_tmp / "notify",
            launcher=[sys.executable, "-c", launcher, str(fd)],
            pass_fds=(fd,),
            stderr=log,
        )
    finally:
        listener.close()
    try:
        yield proc, notices, listen_path
    finally:
        stop_meworkd(proc)
        log.close()
        print((short_tmp / "meworkd.log").read_text())  # shown by pytest when the test fails
        notices.close()


def test_socket_activation_and_readiness_protocol(
    activated: tuple[subprocess.Popen[bytes], Notices, Path],
) -> None:
    proc, notices, listen_path = activated
    status_lines = [m for m in notices.startup if m.startswith("STATUS=")]
    # READY=1 is sent only once the handed-over socket serves and settings are loaded.
    with Client(listen_path, timeout=10) as client:
        status = client.call("daemon.status")
    assert status["pid"] == proc.pid
    assert status["settingsError"] is None
    assert any("servers" in line and "sessions" in line for line in status_lines)

    proc.send_signal(signal.SIGHUP)
    reload = notices.until("READY=1", proc)
    assert "RELOADING=1" in reload
    assert any(m.startswith("MONOTONIC_USEC=") for m in reload)

    proc.send_signal(signal.SIGTERM)
    assert "STOPPING=1" in notices.until("STOPPING=1", proc)
    assert proc.wait(15) == 0
    # systemd owns an activated socket: the daemon must not remove it.
    assert listen_path.exists()
    assert not (listen_path.parent / "unused" / "d.sock").exists()
