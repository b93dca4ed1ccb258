"""Shared machinery of the benchmarks: a meworkd subprocess in a private XDG tree, process
bookkeeping (nothing started here outlives the run), interleaving and statistics.

Imported by ``bench/bench.py`` (run with the main venv's Python); not part of the test suite.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import psutil

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
VENV_BIN = REPO / ".venv" / "bin"
MEWORKD = VENV_BIN / "meworkd"
MEWORKCTL = VENV_BIN / "meworkctl"
PYTHON = str(VENV_BIN / "python")  # servers run on the main venv (mcp 2.3), whoever spawns them
MINIMAL = str(BENCH / "servers" / "minimal.py")

# --- process bookkeeping --------------------------------------------------------------------

_started: list[subprocess.Popen[bytes]] = []
_known_pids: set[int] = set()  # every process seen under us, also grandchildren in own sessions


def remember_tree() -> None:
    """Note every live descendant (servers run in their own sessions: once their parent dies
    they are re-parented away, so they must be known by pid before that)."""
    try:
        for child in psutil.Process().children(recursive=True):
            _known_pids.add(child.pid)
    except psutil.Error:
        pass


def popen(args: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(list(args), **kwargs)
    _started.append(proc)
    _known_pids.add(proc.pid)
    return proc


def kill_everything() -> list[int]:
    """Kill whatever we started that is still alive; returns the pids that had to be killed."""
    remember_tree()
    killed: list[int] = []
    for pid in sorted(_known_pids):
        try:
            p = psutil.Process(pid)
            if p.status() == psutil.STATUS_ZOMBIE:
                continue
            p.kill()
            killed.append(pid)
        except psutil.Error:
            pass
    for proc in _started:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    return killed


def leftovers() -> list[int]:
    remember_tree()
    alive = []
    for pid in sorted(_known_pids):
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.Error:
            pass
    return alive


def _on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def install_cleanup() -> None:
    atexit.register(kill_everything)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)


# --- a meworkd subprocess -------------------------------------------------------------------


def short_tmpdir(prefix: str) -> Path:
    """A private directory with a short path (AF_UNIX socket paths must stay under 108 bytes)."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))


class DaemonProc:
    """``meworkd`` started as a subprocess of its own, in a temporary XDG tree under ``root``."""

    def __init__(self, root: Path, src: Path | None = None) -> None:
        self.root = root
        self.src = src  # what-if runs: import meworkd from this tree (PYTHONPATH) instead
        self.proc: subprocess.Popen[bytes] | None = None
        (root / "run").mkdir(mode=0o700, parents=True, exist_ok=True)
        (root / "home").mkdir(exist_ok=True)

    @property
    def socket(self) -> Path:
        return self.root / "run" / "mework" / "meworkd.sock"

    @property
    def settings(self) -> Path:
        return self.root / "cfg" / "mework" / "settings.json"

    @property
    def log_path(self) -> Path:
        return self.root / "meworkd.log"

    def environ(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("XDG_", "MEWORK_", "LISTEN_", "NOTIFY_", "WATCHDOG_"))
        }
        env.update(
            XDG_CONFIG_HOME=str(self.root / "cfg"),
            XDG_RUNTIME_DIR=str(self.root / "run"),
            XDG_STATE_HOME=str(self.root / "st"),
            HOME=str(self.root / "home"),
        )
        if self.src is not None:
            env["PYTHONPATH"] = str(self.src)
        return env

    def start(self, bound: float = 30.0) -> float:
        """Start the daemon; return the seconds until it answered ``daemon.status``."""
        log = self.log_path.open("ab")
        t0 = time.perf_counter()
        self.proc = popen(
            [str(MEWORKD), "--log-level", "warning"],
            env=self.environ(),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
        log.close()
        deadline = t0 + bound
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"meworkd exited with {self.proc.returncode}: {self.log_tail()}")
            if _answers(self.socket):
                return time.perf_counter() - t0
            time.sleep(0.002)
        raise RuntimeError(f"meworkd did not answer within {bound} s: {self.log_tail()}")

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def rss(self) -> int:
        return int(psutil.Process(self.pid).memory_info().rss)

    def children(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.pid).children(recursive=True)
        except psutil.Error:
            return []

    def stop(self, bound: float = 15.0) -> None:
        """Graceful stop (SIGTERM: the daemon closes every session), then kill what is left."""
        if self.proc is None:
            return
        kids = self.children()
        for k in kids:
            _known_pids.add(k.pid)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=bound)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        _gone, alive = psutil.wait_procs(kids, timeout=5)
        for p in alive:
            try:
                p.kill()
            except psutil.Error:
                pass

    def log_tail(self, n: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def _answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(2)
        try:
            s.connect(str(path))
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"daemon.status"}\n')
            return b'"result"' in s.makefile("rb").readline()
        except OSError:
            return False


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


# --- statistics and interleaving ------------------------------------------------------------


def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs)) if xs else float("nan")


def pct(xs: Sequence[float], p: float) -> float:
    s = sorted(xs)
    return float(s[min(len(s) - 1, int(len(s) * p))]) if s else float("nan")


async def interleave(
    rounds: int, runners: Sequence[Callable[[int], Awaitable[list[float]]]]
) -> list[list[float]]:
    """Run each runner once per round (A B C, then B C A, ...): samples per runner.

    Rotating the order keeps "who runs first after a pause" from favouring one side.
    """
    out: list[list[float]] = [[] for _ in runners]
    k = len(runners)
    for r in range(rounds):
        for j in range(k):
            i = (j + r) % k
            out[i] += await runners[i](r)
    return out


def dump_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
