"""Helpers for the session, transport, probe and peer tests: a real in-process daemon and friends.

:func:`start_daemon` runs :class:`meworkd.daemon.Daemon` in a task group of the calling test (it
must be entered inside the async test: anyio primitives need the running loop), on a real Unix
socket under a short ``/tmp`` directory (the ``short_tmp`` fixture of ``conftest.py``). Clients
talk to it with :func:`mework_client.aio.connect`.

Waiting is done on events (``server.status``, ``turn.progress``, ...) under ``anyio.fail_after``;
the only polling is :func:`wait_gone`, for the death of external processes, which sends no event.
"""

from __future__ import annotations

import importlib
import warnings

with warnings.catch_warnings():
    # jsonrpcserver 5 calls importlib.resources.read_text at import time; the warning is
    # attributed to importlib, so pyproject's jsonrpcserver filter misses it and
    # filterwarnings=error would make importing meworkd.rpc fail.
    warnings.simplefilter("ignore", DeprecationWarning)
    importlib.import_module("jsonrpcserver")

import os
import socket
import subprocess
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import psutil
from anyio.abc import TaskGroup
from mework_client.aio import AsyncClient

from meworkd.app.daemon import Daemon
from meworkd.app.paths import Paths
from tests.common import (
    BOUND,
    ENVDUMP,
    FAKE,
    HTTP_SERVER,
    KITCHEN,
    MODERN_ONLY,
    PY,
    RAW_BAD,
    SERVERS,
    document,
    envdump,
    fake,
    kitchen,
    text_of,
    write_document,
)
from tests.daemons import STOP_BOUND, serve_daemon

__all__ = [
    "BOUND",
    "ENVDUMP",
    "FAKE",
    "HTTP_SERVER",
    "KITCHEN",
    "MODERN_ONLY",
    "PEERS",
    "PY",
    "RAW_BAD",
    "SERVERS",
    "Running",
    "alive",
    "begin_turn",
    "bound",
    "call_tool",
    "descendants",
    "drain_events",
    "envdump",
    "fake",
    "free_port",
    "http_fixture",
    "kitchen",
    "serving",
    "serving_for_module",
    "session_for",
    "start_call",
    "start_daemon",
    "text_of",
    "wait_event",
    "wait_gone",
    "wait_port",
    "write_settings",
]

PEERS = Path(__file__).resolve().parent.parent / ".peers" / "node_modules"


class Running(NamedTuple):
    daemon: Daemon
    socket: Path


def write_settings(
    path: Path, servers: Mapping[str, Any], mcp: Mapping[str, Any] | None = None
) -> None:
    write_document(path, document(servers, **({"mcp": dict(mcp)} if mcp else {})))


@asynccontextmanager
async def start_daemon(
    root: Path,
    servers: Mapping[str, Any] | None = None,
    *,
    mcp: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    stop_bound: float = STOP_BOUND,
) -> AsyncIterator[Running]:
    """Run a real daemon (settings, socket and state under ``root``) until the block ends.

    ``environ`` is the daemon's environment (default: this process's); ``stop_bound`` is how
    long stopping may take before the test fails.
    """
    paths = Paths(
        settings=root / "settings.json", socket=root / "run" / "d.sock", state_dir=root / "state"
    )
    if servers is not None or mcp is not None:
        write_settings(paths.settings, servers or {}, mcp)
    environ = os.environ if environ is None else environ
    async with serve_daemon(paths, environ, stop_bound=stop_bound) as daemon:
        yield Running(daemon, paths.socket)


# --- events and turns ------------------------------------------------------------------------


async def wait_event(
    client: AsyncClient,
    topic: str,
    pred: Callable[[dict[str, Any]], bool] = lambda _d: True,
    timeout: float = BOUND,
) -> dict[str, Any]:
    """The next event of ``topic`` whose data satisfies ``pred`` (others are skipped)."""
    with anyio.fail_after(timeout):
        while True:
            _topic, data = await client.next_event(topic)
            if pred(data):
                return dict(data)


def drain_events(client: AsyncClient, topic: str | None = None) -> list[dict[str, Any]]:
    """Every event already received (of ``topic``), without waiting."""
    out: list[dict[str, Any]] = []
    while True:
        try:
            event_topic, data = client.event_stream.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
            return out
        if topic is None or event_topic == topic:
            out.append(data)


async def begin_turn(
    client: AsyncClient, servers: Iterable[str], conversation: str | None = None
) -> dict[str, Any]:
    """Create a full_access conversation (unless ``conversation`` exists) and begin a turn."""
    if conversation is None:
        conv = await client.call(
            "conversations.create",
            {"mcpServers": list(servers), "approvalLevel": "full_access"},
        )
        conversation = conv["id"]
    turn: dict[str, Any] = await client.call("turns.begin", {"conversationId": conversation})
    turn["conversationId"] = conversation
    return turn


def bound(turn: Mapping[str, Any], server: str, tool: str) -> str:
    """The model-facing name under which ``tool`` of ``server`` is bound in ``turn``."""
    for name, binding in turn["bindings"].items():
        if binding["server"] == server and binding["tool"] == tool:
            return str(name)
    raise AssertionError(f"{server}/{tool} is not bound: {sorted(turn['bindings'])}")


async def call_tool(
    client: AsyncClient,
    turn: Mapping[str, Any],
    server: str,
    tool: str,
    arguments: Mapping[str, Any] | None = None,
    call_id: str | None = None,
) -> dict[str, Any]:
    params: dict[str, Any] = {
        "turnId": turn["turnId"],
        "name": bound(turn, server, tool),
        "arguments": dict(arguments or {}),
    }
    if call_id is not None:
        params["callId"] = call_id
    result: dict[str, Any] = await client.call("turns.callTool", params)
    return result


def start_call(
    tg: TaskGroup,
    client: AsyncClient,
    turn: Mapping[str, Any],
    server: str,
    tool: str,
    arguments: Mapping[str, Any] | None = None,
    call_id: str | None = None,
) -> list[dict[str, Any]]:
    """:func:`call_tool` started in ``tg`` (the test meanwhile answers or cancels it): the list
    returned gets its reply when it comes."""
    replies: list[dict[str, Any]] = []

    async def run() -> None:
        replies.append(await call_tool(client, turn, server, tool, arguments, call_id))

    tg.start_soon(run)
    return replies


def session_for(daemon: Daemon, conversation: str, server: str) -> Any:
    """The pooled session of (conversation, server), or None."""
    for s in daemon.pool.sessions:
        if s.conversation == conversation and s.server == server:
            return s
    return None


# --- processes -------------------------------------------------------------------------------


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its parent counts as gone)."""
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


async def wait_gone(pids: Iterable[int], timeout: float = BOUND) -> None:
    """Poll (bounded) until none of ``pids`` runs: process death sends us no event."""
    pids = list(pids)
    with anyio.fail_after(timeout):
        while any(alive(p) for p in pids):
            await anyio.sleep(0.02)


def descendants() -> set[int]:
    """Live (non-zombie) descendants of this test process."""
    out: set[int] = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                out.add(child.pid)
        except psutil.NoSuchProcess:
            continue
    return out


# --- HTTP servers ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """Start-up of an external server: poll (bounded) until it accepts TCP connections."""
    with anyio.fail_after(timeout):
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"the server exited with {proc.returncode} before listening")
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.05)
                continue
            await stream.aclose()
            return


def _spawn_ready(script: str, args: tuple[str, ...]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [PY, script, "--port", "0", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _base_url(ready: bytes) -> str:
    assert ready.startswith(b"READY "), ready
    return f"http://127.0.0.1:{int(ready.split()[1])}"


def _stop_ready(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


@asynccontextmanager
async def serving(script: str, *args: str) -> AsyncIterator[str]:
    """Run a fixture HTTP server that prints ``READY <port>``; yield ``http://127.0.0.1:<port>``."""
    proc = _spawn_ready(script, args)
    try:
        assert proc.stdout is not None
        with anyio.fail_after(30):
            line = await anyio.to_thread.run_sync(proc.stdout.readline)
        yield _base_url(line)
    finally:
        await anyio.to_thread.run_sync(_stop_ready, proc)


@contextmanager
def serving_for_module(script: str, *args: str) -> Iterator[str]:
    """:func:`serving` outside an event loop, for a module-scoped fixture (its server is ready
    before the module's first test, which waits on it)."""
    proc = _spawn_ready(script, args)
    try:
        assert proc.stdout is not None
        yield _base_url(proc.stdout.readline())
    finally:
        _stop_ready(proc)


@asynccontextmanager
async def http_fixture(mode: str = "normal") -> AsyncIterator[str]:
    """Run ``tests/servers/http_server.py --mode MODE``; yield its MCP URL."""
    async with serving(str(HTTP_SERVER), "--mode", mode) as base:
        yield f"{base}/mcp"
