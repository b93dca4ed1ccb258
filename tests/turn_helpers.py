"""Helpers for the turn, approval, audit and conversation tests: the real daemon, in-process.

The ``mw`` fixture gives a :class:`Harness` bound to a task group of the running test; the test
writes its settings and calls :meth:`Harness.start`, which runs a daemon on
``Paths(settings=..., socket=..., state_dir=...)`` with this environment through
:func:`tests.daemons.serve_daemon`, in a task of the test's task group. :meth:`Harness.restart`
stops that daemon and starts a new one on the same directories. Clients are the real async
client on the real socket; MCP servers are real processes (``tests/servers/kitchen.py``,
``counting.py``).
"""

from __future__ import annotations

import importlib
import warnings

with warnings.catch_warnings():
    # jsonrpcserver 5 warns (DeprecationWarning, attributed to importlib) when imported, and
    # pyproject turns warnings into errors: import it once here with the warning silenced.
    warnings.simplefilter("ignore", DeprecationWarning)
    importlib.import_module("jsonrpcserver")

import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import TaskGroup, TaskStatus
from mework_client import RpcError
from mework_client.aio import AsyncClient, connect

from meworkd.app.daemon import Daemon
from meworkd.app.paths import Paths
from meworkd.core.catalog import NAME_PATTERN, tool_name
from tests.common import (
    COUNTING,
    EVENT_TIMEOUT,
    FAKE,
    KITCHEN,
    SERVERS,
    counting,
    document,
    fake,
    kitchen,
    text_of,
)
from tests.daemon_fixture import replace_atomically
from tests.daemons import serve_daemon

__all__ = [
    "COUNTING",
    "EVENT_TIMEOUT",
    "FAKE",
    "HOOK_TIMEOUT",
    "KITCHEN",
    "KITCHEN_TOOLS",
    "PEERS",
    "SERVERS",
    "Harness",
    "PendingCall",
    "approval_for",
    "bound",
    "counting",
    "document",
    "fake",
    "hook_runs",
    "hook_socket",
    "kitchen",
    "mw_fixture",
    "permission_hooks",
    "rpc_error",
    "start_call",
    "text_of",
    "wait_event",
    "write_hook",
]

PEERS = Path(__file__).resolve().parent.parent / ".peers" / "node_modules"
# The kitchen's own tools (``--tools N`` adds t0..tN-1).
KITCHEN_TOOLS = frozenset(
    {
        "echo",
        "add",
        "bad_output",
        "slow",
        "progress",
        "die",
        "big",
        "flood_stderr",
        "error",
        "rpc_error",
        "interactive_true",
        "interactive_false",
        "interactive_string",
        "interactive_number",
        "interactive_object",
        "add_tool",
        "spawn_grandchild",
    }
)


def bound(turn: dict[str, Any], server: str) -> dict[str, str]:
    """{original tool name: model-facing name} of one server's bindings in a turns.begin reply."""
    out = {b["tool"]: n for n, b in turn["bindings"].items() if b["server"] == server}
    for tool, name in out.items():
        assert NAME_PATTERN.fullmatch(name), name
        assert name == tool_name(server, tool)
    return out


async def rpc_error(awaitable: Any) -> RpcError:
    """Await ``awaitable``, which must fail with an RPC error; return it."""
    with pytest.raises(RpcError) as info:
        await awaitable
    return info.value


async def wait_event(
    client: AsyncClient,
    topic: str,
    predicate: Callable[[dict[str, Any]], bool] = lambda _d: True,
    timeout: float = EVENT_TIMEOUT,
) -> dict[str, Any]:
    """The next ``topic`` event whose data satisfies ``predicate`` (others are skipped)."""
    with anyio.fail_after(timeout):
        while True:
            got, data = await client.event_stream.receive()
            if got == topic and predicate(data):
                return data  # type: ignore[no-any-return]


# --- PermissionRequest hooks --------------------------------------------------------------------

# One real hook script; what it does is chosen by the call's own ``hook`` argument, so a single
# settings entry covers every behaviour. Each run appends the request it got to ``log.jsonl``.
# Run as ``hook.py sleeper`` (a second hook with a short timeout) it only acts in the ``sleep``
# mode: it allows, then sleeps past its timeout. So only that one case waits for a timeout, and
# the main hook's generous timeout keeps a slow machine from turning answers into no decision.
HOOK_SOURCE = """\
#!{python} -I
import json, os, signal, sys, time

request = json.load(sys.stdin)
mode = (request.get("tool_input") or {{}}).get("hook")


def decision(behavior, **extra):
    out = {{"hookEventName": "PermissionRequest", "decision": {{"behavior": behavior, **extra}}}}
    return json.dumps({{"hookSpecificOutput": out}})


if sys.argv[1:] == ["sleeper"]:
    if mode == "sleep":  # an allow, then past this hook's timeout
        print(decision("allow"), flush=True)
        time.sleep(60)
    sys.exit(0)

with open({log!r}, "a") as f:
    f.write(json.dumps(request) + "\\n")
if mode == "allow":
    print(decision("allow"))
elif mode == "deny":
    print(decision("deny", message="the hook says no"))
elif mode == "exit2":
    sys.stderr.write("blocked by exit code 2\\n")
    sys.exit(2)
elif mode == "fail":  # an allow, then a failing exit code
    print(decision("allow"))
    sys.exit(1)
elif mode == "crash":  # an allow, then killed by a signal
    print(decision("allow"), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
elif mode == "garbage":
    print("this is not JSON {{")
elif mode == "two":
    print(decision("allow"))
    print(decision("allow"))
elif mode == "signal":  # tell the test it runs (on its socket), then hang
    import socket

    peer = socket.socket(socket.AF_UNIX)
    peer.connect({sock!r})
    peer.sendall(b"running\\n")
    time.sleep(60)
# "empty", "sleep" and anything else: no output, exit 0 (no decision)
"""
HOOK_TIMEOUT = 10.0
SLEEPER_TIMEOUT = 0.5


def write_hook(directory: Path) -> Path:
    """Write the hook script (executable) into ``directory``; return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "hook.py"
    script.write_text(
        HOOK_SOURCE.format(
            python=sys.executable,
            log=str(directory / "log.jsonl"),
            sock=str(hook_socket(directory)),
        )
    )
    script.chmod(0o755)
    return script


def hook_socket(directory: Path) -> Path:
    """Where the hook's ``signal`` mode connects to say it is running."""
    return directory / "hook.sock"


def hook_runs(directory: Path) -> list[dict[str, Any]]:
    """The requests the hook in ``directory`` has received, oldest first."""
    log = directory / "log.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def permission_hooks(matcher: str, script: Path) -> dict[str, Any]:
    """The settings ``hooks`` section: one matcher group running ``script`` (and its sleeper)."""
    return {
        "PermissionRequest": [
            {
                "matcher": matcher,
                "hooks": [
                    {"type": "command", "command": str(script), "timeout": HOOK_TIMEOUT},
                    {
                        "type": "command",
                        "command": f"{script} sleeper",
                        "timeout": SLEEPER_TIMEOUT,
                    },
                ],
            }
        ]
    }


async def approval_for(
    client: AsyncClient, turn: dict[str, Any], name: str | None = None
) -> dict[str, Any]:
    """The next approval.requested event for ``turn`` (and the model-facing ``name``)."""
    return await wait_event(
        client,
        "approval.requested",
        lambda d: d["turnId"] == turn["turnId"] and (name is None or d["name"] == name),
    )


@dataclass
class PendingCall:
    """An RPC call running in the background; :meth:`wait` gives its result (or raises)."""

    done: anyio.Event = field(default_factory=anyio.Event)
    result: Any = None
    error: BaseException | None = None

    async def wait(self, timeout: float = EVENT_TIMEOUT) -> Any:
        with anyio.fail_after(timeout):
            await self.done.wait()
        if self.error is not None:
            raise self.error
        return self.result


def start_call(
    tg: TaskGroup, client: AsyncClient, method: str, params: dict[str, Any]
) -> PendingCall:
    pending = PendingCall()

    async def run() -> None:
        try:
            pending.result = await client.call(method, params)
        except (RpcError, ConnectionError) as exc:
            pending.error = exc
        finally:
            pending.done.set()

    tg.start_soon(run)
    return pending


class Harness:
    """One test's daemon(s): settings path, socket and state dir under a short /tmp directory."""

    def __init__(self, root: Path, tg: TaskGroup) -> None:
        self.root = root
        self.tg = tg
        self.paths = Paths(
            settings=root / "cfg" / "settings.json",
            socket=root / "run" / "meworkd.sock",
            state_dir=root / "state",
        )
        self.daemon: Daemon | None = None
        self.client: AsyncClient | None = None
        self._stop: anyio.Event | None = None
        self._stopped: anyio.Event | None = None
        self._close_clients = anyio.Event()
        self._clients_closed: list[anyio.Event] = []

    # --- settings --------------------------------------------------------------------------

    def write_settings(self, doc: dict[str, Any]) -> None:
        """Replace the file atomically, as most editors do."""
        self.paths.settings.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        replace_atomically(self.paths.settings, json.dumps(doc, indent=2))

    def read_settings(self) -> dict[str, Any]:
        return json.loads(self.paths.settings.read_text())  # type: ignore[no-any-return]

    async def edit_settings(self, edit: Callable[[dict[str, Any]], None]) -> Any:
        """Hand-edit the file (atomic replace) and make the daemon apply it now."""
        doc = self.read_settings()
        edit(doc)
        self.write_settings(doc)
        return await self.call("settings.reload")

    # --- lifecycle -------------------------------------------------------------------------

    async def start(self, doc: dict[str, Any] | None = None) -> AsyncClient:
        """Write ``doc`` (if given), start a daemon, connect a client to it."""
        assert self.daemon is None, "already running"
        if doc is not None:
            self.write_settings(doc)
        self._stop = anyio.Event()
        self._stopped = anyio.Event()
        self.daemon = await self.tg.start(self._serve, self._stop, self._stopped)
        self._close_clients = anyio.Event()
        self.client = await self.connect()
        return self.client

    async def _serve(
        self, stop: anyio.Event, stopped: anyio.Event, *, task_status: TaskStatus[Daemon]
    ) -> None:
        try:
            async with serve_daemon(self.paths, os.environ) as daemon:  # bounded start and stop
                task_status.started(daemon)
                await stop.wait()
        finally:
            stopped.set()

    async def connect(self, topics: list[str] | None = None) -> AsyncClient:
        """Another frontend: a new connection, subscribed to ``topics`` if given.

        The connection lives in a task of the harness's task group (its cancel scopes must not
        straddle the test body and the fixture's teardown) until the daemon is stopped.
        """
        closed = anyio.Event()
        self._clients_closed.append(closed)
        with anyio.fail_after(EVENT_TIMEOUT):
            client: AsyncClient = await self.tg.start(self._hold, self._close_clients, closed)
            if topics is not None:
                await client.subscribe(topics)
        return client

    async def _hold(
        self, close: anyio.Event, closed: anyio.Event, *, task_status: TaskStatus[AsyncClient]
    ) -> None:
        try:
            async with connect(self.paths.socket) as client:
                task_status.started(client)
                await close.wait()
        finally:
            closed.set()

    async def stop(self) -> None:
        """Close the clients, shut the daemon down and wait until it has released everything."""
        self._close_clients.set()
        with anyio.fail_after(EVENT_TIMEOUT):
            for closed in self._clients_closed:
                await closed.wait()
        self._clients_closed.clear()
        self.client = None
        if self.daemon is not None:
            assert self._stop is not None
            assert self._stopped is not None
            # Asked here, at once, as before serve_daemon ran it: a call that waits is cut off by
            # the stop (its outcome says so), not by the hang-up of the clients just closed.
            self.daemon.request_shutdown()
            self._stop.set()
            await self._stopped.wait()  # serve_daemon bounds the stop
            self.daemon = None

    async def restart(self) -> AsyncClient:
        await self.stop()
        return await self.start()

    # --- shortcuts -------------------------------------------------------------------------

    @property
    def d(self) -> Daemon:
        assert self.daemon is not None
        return self.daemon

    @property
    def c(self) -> AsyncClient:
        assert self.client is not None
        return self.client

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        with anyio.fail_after(EVENT_TIMEOUT):
            return await self.c.call(method, params)

    async def conversation(self, servers: list[str], level: str = "full_access") -> str:
        conv = await self.call(
            "conversations.create", {"mcpServers": servers, "approvalLevel": level}
        )
        return str(conv["id"])

    async def begin(self, conversation: str, **extra: Any) -> dict[str, Any]:
        return await self.call("turns.begin", {"conversationId": conversation, **extra})  # type: ignore[no-any-return]

    async def tool(
        self, turn: dict[str, Any], name: str, arguments: dict[str, Any] | None = None, **extra: Any
    ) -> dict[str, Any]:
        return await self.call(  # type: ignore[no-any-return]
            "turns.callTool",
            {"turnId": turn["turnId"], "name": name, "arguments": arguments or {}, **extra},
        )

    def sessions(self, conversation: str, server: str | None = None) -> list[Any]:
        return [
            s
            for s in self.d.pool.sessions
            if s.conversation == conversation and (server is None or s.server == server)
        ]

    def pid(self, conversation: str, server: str) -> int:
        (session,) = self.sessions(conversation, server)
        assert session.pid is not None
        return int(session.pid)


@pytest.fixture(name="mw")
async def mw_fixture(short_tmp: Path) -> AsyncIterator[Harness]:
    """A harness whose daemon runs in this test's task group (start it with ``mw.start``)."""
    async with anyio.create_task_group() as tg:
        harness = Harness(short_tmp, tg)
        try:
            yield harness
        finally:
            with anyio.CancelScope(shield=True):
                await harness.stop()
