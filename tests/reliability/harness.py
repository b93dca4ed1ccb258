"""The reliability suite's harness: a real ``meworkd`` subprocess, raw sockets and process scans.

Everything here talks to real processes. :class:`DaemonProc` runs the ``meworkd`` console script
(so RSS, fds and children measured through ``/proc`` are the daemon's alone) through the one
process starter, :func:`tests.daemons.start_meworkd`, which waits for its ``READY=1`` datagram
on a ``NOTIFY_SOCKET`` instead of polling the control socket. Every server
entry the suite writes carries ``MW_REL_MARK=<token>`` in its ``env``; the environment is
inherited by every descendant (grandchildren included), so :func:`marked_pids` finds whatever a
fixture server left behind by scanning ``/proc/*/environ``.

Polling is used only where the kernel sends no event: the death of an external process and
file-descriptor counts (:func:`poll_until`, always bounded).
"""

from __future__ import annotations

import importlib
import warnings

with warnings.catch_warnings():
    # jsonrpcserver 5 reads its schema with the legacy importlib.resources API at import time;
    # the DeprecationWarning is attributed to importlib, so pyproject's filter misses it.
    warnings.simplefilter("ignore", DeprecationWarning)
    importlib.import_module("jsonrpcserver")

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import psutil
from mework_client import Client
from mework_client.aio import AsyncClient, connect

from meworkd.app.daemon import Daemon
from meworkd.app.paths import Paths
from meworkd.mcp.ledger import PidLedger
from tests.common import (
    BOUND,
    ENVDUMP,
    FAKE,
    HTTP_SERVER,
    KITCHEN,
    PY,
    RAW_BAD,
    SERVERS,
    document,
    text_of,
    write_document,
)
from tests.daemons import MEWORKD, serve_daemon, start_meworkd

__all__ = [
    "BOUND",
    "ENVDUMP",
    "FAKE",
    "HTTP_SERVER",
    "KITCHEN",
    "LOCAL_SERVERS",
    "MARK_VAR",
    "MEWORKD",
    "PY",
    "RAW_BAD",
    "SERVERS",
    "DaemonProc",
    "HttpFixture",
    "alive",
    "begin",
    "bound_name",
    "call",
    "daemon_dir",
    "group_members",
    "marked_pids",
    "new_mark",
    "poll_until",
    "process_groups",
    "server_entry",
    "text_of",
    "wait_marked_gone",
    "wait_until",
]

LOCAL_SERVERS = Path(__file__).resolve().parent / "servers"
MARK_VAR = "MW_REL_MARK"


def new_mark() -> str:
    return uuid.uuid4().hex[:12]


def server_entry(
    script: str, *args: str, mark: str, timeout: int = 2, env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A stdio entry running ``script`` with this interpreter, tagged with ``mark``."""
    return {
        "type": "stdio",
        "command": PY,
        "args": [script, *args],
        "env": {MARK_VAR: mark, **dict(env or {})},
        "timeoutSeconds": timeout,
    }


# --- the daemon as a subprocess ----------------------------------------------------------------


class DaemonProc:
    """``meworkd`` in a subprocess with its settings, socket and state under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.settings = root / "settings.json"
        self.socket = root / "run" / "d.sock"
        self.state_dir = root / "state"
        self.log_path = root / "daemon.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    # -- lifecycle --

    def write_settings(
        self, servers: Mapping[str, Any], extra: Mapping[str, Any] | None = None
    ) -> None:
        write_document(self.settings, document(servers, **dict(extra or {})))

    def start(
        self,
        extra_env: Mapping[str, str] | None = None,
        log_level: str = "info",
        preexec: Callable[[], None] | None = None,
    ) -> None:
        """Start and wait for ``READY=1`` (sd_notify), bounded; raise if it exits first.

        ``preexec`` runs in the child just before ``meworkd`` is executed (e.g. to drop a
        capability).
        """
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.starts += 1
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("XDG_", "MEWORK_", "LISTEN_", "NOTIFY_", "WATCHDOG_"))
        }
        env.update(extra_env or {})
        argv = ["--settings", str(self.settings), "--socket", str(self.socket)]
        argv += ["--state-dir", str(self.state_dir), "--log-level", log_level]
        with self.log_path.open("ab") as log:
            try:
                self.proc, notices = start_meworkd(
                    *argv,
                    env=env,
                    notify=self.root / f"notify{self.starts}.sock",
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    preexec_fn=preexec,
                )
            except AssertionError as failed:
                raise AssertionError(f"{failed}\n{self.log_tail()}") from None
        notices.close()

    @asynccontextmanager
    async def in_process(self) -> AsyncIterator[Daemon]:
        """The daemon on these same files, run in the test's event loop until the block ends:
        for a check of what it makes of its settings and state, not of its process (a process
        start costs a second of CPU, most of it imports)."""
        paths = Paths(settings=self.settings, socket=self.socket, state_dir=self.state_dir)
        async with serve_daemon(paths, {"PATH": os.environ.get("PATH", "")}) as daemon:
            yield daemon

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def kill(self) -> None:
        """SIGKILL: no cleanup at all, the way a crash or the OOM killer ends it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=BOUND)

    def stop(self) -> int:
        """A clean stop (SIGTERM); returns the exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=BOUND)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("meworkd did not stop within the bound") from None
        return int(self.proc.returncode)

    # -- observation --

    def rss(self) -> int:
        return int(psutil.Process(self.pid).memory_info().rss)

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def children(self) -> list[psutil.Process]:
        out = []
        for child in psutil.Process(self.pid).children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                if child.status() != psutil.STATUS_ZOMBIE:
                    out.append(child)
        return out

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def ledger(self) -> dict[str, Any]:
        try:
            path = PidLedger(self.state_dir / "children.json", owner=str(self.socket)).path
            return dict(json.loads(path.read_text()))
        except FileNotFoundError:
            return {}

    def client(self, timeout: float = BOUND) -> Client:
        return Client(self.socket, timeout=timeout)

    def status(self) -> dict[str, Any]:
        with self.client() as c:
            return dict(c.call("daemon.status"))

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[AsyncClient]:
        async with connect(self.socket) as client:
            yield client


@contextlib.contextmanager
def daemon_dir(prefix: str = "mwr-") -> Iterator[Path]:
    """A short directory under /tmp (AF_UNIX paths must stay under 108 bytes)."""
    with tempfile.TemporaryDirectory(prefix=prefix, dir="/tmp") as d:
        yield Path(d)


# --- RPC helpers -------------------------------------------------------------------------------


async def call(client: AsyncClient, method: str, params: dict[str, Any] | None = None) -> Any:
    with anyio.fail_after(BOUND):
        return await client.call(method, params)


async def begin(
    client: AsyncClient, servers: list[str], level: str = "full_access"
) -> dict[str, Any]:
    """A new conversation over ``servers`` at ``level`` and its first turn."""
    conv = await call(
        client, "conversations.create", {"mcpServers": servers, "approvalLevel": level}
    )
    turn: dict[str, Any] = await call(client, "turns.begin", {"conversationId": conv["id"]})
    turn["conversationId"] = conv["id"]
    return turn


def bound_name(turn: Mapping[str, Any], server: str, tool: str) -> str:
    for name, binding in turn["bindings"].items():
        if binding["server"] == server and binding["tool"] == tool:
            return str(name)
    raise AssertionError(f"{server}/{tool} is not bound: {turn['bindings']} {turn['failures']}")


# --- processes ---------------------------------------------------------------------------------


def alive(pid: int) -> bool:
    """Whether ``pid`` runs; a zombie (dead, waiting to be reaped by its parent) is gone."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def marked_pids(mark: str) -> list[int]:
    """Live processes whose environment carries ``MW_REL_MARK=<mark>`` (all descendants do)."""
    needle = f"{MARK_VAR}={mark}".encode()
    found = []
    with os.scandir("/proc") as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                environ = Path(f"/proc/{entry.name}/environ").read_bytes()
            except OSError:
                continue
            if needle in environ.split(b"\0") and alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def process_groups(pids: list[int]) -> set[int]:
    groups = set()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            groups.add(os.getpgid(pid))
    return groups


def group_members(groups: set[int]) -> list[int]:
    """Live processes in any of the process groups ``groups`` (a ``/proc/*/stat`` scan)."""
    found = []
    with os.scandir("/proc") as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry.name}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] != "Z" and int(fields[2]) in groups:
                found.append(int(entry.name))
    return found


def poll_until(what: str, predicate: Callable[[], bool], bound: float = BOUND) -> float:
    """Bounded poll for things the kernel sends no event about; returns the seconds it took."""
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > bound:
            raise AssertionError(f"{what}: not true within {bound} s")
        time.sleep(0.02)
    return time.monotonic() - started


async def wait_marked_gone(mark: str, bound: float = BOUND) -> None:
    """Every process tagged ``mark`` has exited (bounded poll: process death sends no event).

    A process that is exiting shows an empty environ before it is a zombie, so every pid once
    seen with the mark is also followed until it is gone.
    """
    seen: set[int] = set()

    def gone() -> bool:
        seen.update(marked_pids(mark))
        return not any(alive(pid) for pid in seen)

    await wait_until(f"the processes marked {mark} are gone", gone, bound)


async def wait_until(what: str, predicate: Callable[[], bool], bound: float = BOUND) -> None:
    """Async bounded poll, for what the kernel sends no event about (process death, fds)."""
    try:
        with anyio.fail_after(bound):
            while not predicate():
                await anyio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"{what}: not true within {bound} s") from None


# --- HTTP fixture servers ----------------------------------------------------------------------


class HttpFixture:
    """``tests/servers/http_server.py --mode MODE`` (or a local script) on a free port."""

    def __init__(self, mode: str = "normal", script: str = HTTP_SERVER, *args: str) -> None:
        self.mode = mode
        self.script = script
        self.args = args
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self) -> str:
        self.spawn()
        return self.ready()

    def spawn(self) -> None:
        """Start the process without waiting: several fixtures then start side by side."""
        argv = [PY, self.script, "--port", "0", *self.args]
        if self.script == HTTP_SERVER:
            argv += ["--mode", self.mode]
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def ready(self) -> str:
        """Wait until the spawned server listens; return its MCP URL."""
        assert self.proc is not None
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # blocks until READY (or EOF if it died)
        assert line.startswith(b"READY "), line
        self.url = f"http://127.0.0.1:{int(line.split()[1])}/mcp"
        return self.url

    def stop(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=BOUND)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
