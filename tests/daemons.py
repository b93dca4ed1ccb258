"""The two ways a test runs a daemon: in its own event loop (:func:`serve_daemon`) or, when the
test is about the process (signals, a crash, readiness, its RSS and descriptors, systemd's
protocols, another program's loop), as a ``meworkd`` process (:func:`start_meworkd`).

Both wait for the same thing with the same bound: the daemon serving its socket, within
``START_BOUND``. In-process that is ``task_status.started()``; a process says it with
``READY=1`` on a ``NOTIFY_SOCKET`` of the test's, sent once the socket serves and the signal
handlers are in place, so nothing polls the socket.

The helpers with older names build on these: ``daemon_helpers.start_daemon`` (settings, socket
and state under one short directory), ``daemon_fixture.running_daemon`` (an XDG tree) and
``turn_helpers.Harness`` (which also restarts) run in-process; ``daemon_fixture.start_process``
(an XDG tree), ``tests.reliability.harness.DaemonProc`` (explicit paths, a log file) and the
fixtures of ``test_ctl.py``, ``test_activation.py`` and ``tests/ui`` start processes.

Tests that share one daemon do not interfere when each uses conversation ids and server names
of its own (``tests/ui`` and ``test_ctl.py`` share one per module that way).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from meworkd.app.daemon import Daemon
from meworkd.app.paths import Paths
from tests.common import BOUND, START_BOUND

__all__ = ["MEWORKD", "STOP_BOUND", "Notices", "serve_daemon", "start_meworkd", "stop_meworkd"]

STOP_BOUND = 15.0  # seconds stopping may take before the test fails (a bound, not a timing)
# The console script of the environment running the tests (the project's venv).
MEWORKD = Path(sys.executable).parent / "meworkd"


@asynccontextmanager
async def serve_daemon(
    paths: Paths, environ: Mapping[str, str], *, stop_bound: float = STOP_BOUND
) -> AsyncIterator[Daemon]:
    """Run a daemon in a task group of the current test (enter it inside the async test:
    anyio primitives need the running loop) until the block ends; fail if it does not start
    within START_BOUND or stop within ``stop_bound``."""
    daemon = Daemon(paths, environ=dict(environ))
    with anyio.CancelScope() as stopping:
        async with anyio.create_task_group() as tg:
            with anyio.fail_after(START_BOUND):
                await tg.start(daemon.run)
            try:
                yield daemon
            finally:
                daemon.request_shutdown()
                stopping.deadline = anyio.current_time() + stop_bound
    if stopping.cancelled_caught:
        raise TimeoutError(f"the daemon did not stop within {stop_bound} s")


class Notices:
    """A ``NOTIFY_SOCKET`` of the test's: what a daemon tells its service manager (sd_notify)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.startup: list[str] = []  # the messages up to and including READY=1
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        path.unlink(missing_ok=True)  # an earlier start's, in a test that starts again
        self._sock.bind(str(path))
        self._sock.settimeout(0.2)  # how often a wait looks whether the process is still alive

    def until(
        self, wanted: str, proc: subprocess.Popen[bytes], bound: float = START_BOUND
    ) -> list[str]:
        """The messages up to the one that has the line ``wanted``; fail if the process exits
        first or nothing such comes within ``bound``."""
        seen: list[str] = []
        deadline = time.monotonic() + bound
        while wanted not in seen:
            if time.monotonic() > deadline:
                raise AssertionError(f"meworkd sent no {wanted} within {bound} s")
            try:
                seen += self._sock.recv(4096).decode().split("\n")
            except TimeoutError:
                if proc.poll() is not None:
                    raise AssertionError(
                        f"meworkd exited with {proc.returncode} before {wanted}"
                    ) from None
        return seen

    def close(self) -> None:
        """Stop listening (the daemon's later messages are refused, which it ignores)."""
        self._sock.close()


def start_meworkd(
    *args: str,
    env: Mapping[str, str],
    notify: Path,
    launcher: Sequence[str] = (),
    **popen: Any,
) -> tuple[subprocess.Popen[bytes], Notices]:
    """Start ``meworkd ARGS`` with ``env`` and wait until it serves (``READY=1`` on a
    ``NOTIFY_SOCKET`` bound at ``notify``), within ``START_BOUND``; on failure kill it and say why
    (with its stderr when that is a pipe). ``launcher``: an argv that execs the rest in its own
    pid (socket activation); ``popen``: anything else for :class:`subprocess.Popen` (stdout,
    stderr, pass_fds, preexec_fn...). Read more of the notices or close them."""
    notices = Notices(notify)
    popen.setdefault("stdin", subprocess.DEVNULL)
    proc = subprocess.Popen(
        [*launcher, str(MEWORKD), *args], env={**env, "NOTIFY_SOCKET": str(notify)}, **popen
    )
    try:
        notices.startup = notices.until("READY=1", proc)
    except AssertionError as failed:
        notices.close()
        stop_meworkd(proc)
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        raise AssertionError(f"{failed}\n{err}") from None
    return proc, notices


def stop_meworkd(proc: subprocess.Popen[bytes], bound: float = BOUND) -> int:
    """Cleanup for a test done or failed half-way: SIGTERM, then SIGKILL past ``bound``; never
    leave a daemon behind. Returns the exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(bound)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(bound)
    return int(proc.returncode)
