"""Helpers shared by the daemon tests: a real daemon on a real socket in a temporary XDG tree.

In-process: :func:`running_daemon` runs :class:`meworkd.daemon.Daemon` in the caller's task
group (it must be entered inside the async test, because anyio primitives need a running loop).
Out of process: :func:`start_process` starts the ``meworkd`` console script with its own XDG
environment once it serves (both through :mod:`tests.daemons`).
"""

from __future__ import annotations

import importlib
import warnings

with warnings.catch_warnings():
    # jsonrpcserver 5 calls importlib.resources.read_text at import time. pyproject's filter
    # ignores DeprecationWarnings from jsonrpcserver.*, but this one is attributed to
    # importlib.resources._legacy, so under filterwarnings=error importing meworkd.rpc fails.
    warnings.simplefilter("ignore", DeprecationWarning)
    importlib.import_module("jsonrpcserver")

import json
import os
import re
import subprocess
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream
from hypothesis import strategies as st
from mework_client.aio import AsyncClient, connect

from meworkd.app.daemon import Daemon
from meworkd.app.paths import Paths
from meworkd.base.lines import DEFAULT_MAX_LINE, LineSplitter, Oversized
from tests.common import BOUND
from tests.daemons import MEWORKD, serve_daemon, start_meworkd

__all__ = [
    "DEFAULT_MAX_LINE",
    "MEWORKD",
    "DaemonEnv",
    "DocModel",
    "LineSplitter",
    "Oversized",
    "RawSession",
    "assert_clean_error",
    "assert_no_leak",
    "assert_unknown_keys_survived",
    "daemon_and_client",
    "documents_with_unknown_keys",
    "expect_op",
    "make_env",
    "raw_session",
    "read_doc",
    "registry_ops",
    "replace_atomically",
    "running_daemon",
    "start_process",
    "stop_process",
    "write_in_place",
    "xdg_environ",
]

EVENT_TIMEOUT = BOUND


@dataclass(frozen=True, slots=True)
class DaemonEnv:
    """A temporary XDG tree: where the settings, socket and state of one daemon live."""

    root: Path

    @property
    def config_home(self) -> Path:
        return self.root / "cfg"

    @property
    def runtime_dir(self) -> Path:
        return self.root / "run"

    @property
    def state_home(self) -> Path:
        return self.root / "st"

    @property
    def settings(self) -> Path:
        return self.config_home / "mework" / "settings.json"

    @property
    def socket(self) -> Path:
        return self.runtime_dir / "mework" / "meworkd.sock"

    @property
    def state_dir(self) -> Path:
        return self.state_home / "mework"

    @property
    def paths(self) -> Paths:
        return Paths(settings=self.settings, socket=self.socket, state_dir=self.state_dir)


def make_env(root: Path, document: Mapping[str, Any] | None = None) -> DaemonEnv:
    """A fresh XDG tree under ``root`` (a short path); write ``document`` as the settings."""
    env = DaemonEnv(root)
    env.runtime_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if document is not None:
        env.settings.parent.mkdir(parents=True, exist_ok=True)
        env.settings.write_text(json.dumps(document, indent=2))
        env.settings.chmod(0o600)
    return env


def read_doc(path: Path) -> Any:
    return json.loads(path.read_bytes())


def replace_atomically(path: Path, text: str | bytes) -> None:
    """What most editors do: write a temp file beside the target, then rename over it."""
    data = text.encode() if isinstance(text, str) else text
    tmp = path.with_name(f".{path.name}.edit~")
    tmp.write_bytes(data)
    tmp.chmod(0o600)
    os.replace(tmp, path)


def write_in_place(path: Path, text: str | bytes) -> None:
    """What ``>`` and some editors do: truncate and write the same inode."""
    data = text.encode() if isinstance(text, str) else text
    with path.open("r+b") as f:
        f.truncate(0)
        f.write(data)


@asynccontextmanager
async def running_daemon(
    env: DaemonEnv, environ: Mapping[str, str] | None = None
) -> AsyncIterator[Daemon]:
    """Run a daemon in a task group of the current test until the block ends."""
    environ = environ or {"PATH": os.environ.get("PATH", "")}
    async with serve_daemon(env.paths, environ) as daemon:
        yield daemon


@asynccontextmanager
async def daemon_and_client(
    env: DaemonEnv,
    environ: Mapping[str, str] | None = None,
    topics: Iterable[str] | None = None,
) -> AsyncIterator[tuple[Daemon, AsyncClient]]:
    """A running daemon and one connected client (subscribed to ``topics`` if given)."""
    async with running_daemon(env, environ) as daemon, connect(env.socket) as client:
        if topics is not None:
            with anyio.fail_after(EVENT_TIMEOUT):
                await client.subscribe(list(topics))
        yield daemon, client


class RawSession:
    """Bytes on a real socket connection: send lines, read reply lines (events are kept apart)."""

    def __init__(self, stream: SocketStream) -> None:
        self.stream = stream
        self._reader = BufferedByteReceiveStream(stream)

    async def send(self, data: bytes) -> None:
        await self.stream.send(data)

    async def receive_any(self) -> Any:
        """The next message, whatever it is (a reply, a batch reply or an event)."""
        with anyio.fail_after(EVENT_TIMEOUT):
            return json.loads(await self._reader.receive_until(b"\n", 64 * 1024 * 1024))

    async def receive(self) -> Any:
        """The next message that is not an event notification."""
        while True:
            message = await self.receive_any()
            if isinstance(message, dict) and message.get("method") == "event":
                continue
            return message

    async def exchange(self, data: bytes) -> Any:
        await self.send(data)
        return await self.receive()


@asynccontextmanager
async def raw_session(path: Path) -> AsyncIterator[RawSession]:
    async with await anyio.connect_unix(path) as stream:
        yield RawSession(stream)


# Anything that looks like Python leaking out: tracebacks, exception class reprs, source paths.
_LEAKS = re.compile(
    r"Traceback|\b[A-Z][A-Za-z]*(?:Error|Exception)\(|File \"|\.py\b|site-packages|/work/"
)


def assert_clean_error(reply: Any, code: int | None = None, kind: str | None = None) -> None:
    """``reply`` is a JSON-RPC error with a data.kind and no Python internals in it."""
    assert isinstance(reply, dict), reply
    assert reply.get("jsonrpc") == "2.0", reply
    error = reply.get("error")
    assert isinstance(error, dict), reply
    assert isinstance(error.get("code"), int), reply
    assert isinstance(error.get("message"), str), reply
    assert isinstance(error.get("data"), dict), reply
    assert isinstance(error["data"].get("kind"), str), reply
    text = json.dumps(reply)
    assert not _LEAKS.search(text), text
    if code is not None:
        assert error["code"] == code, reply
    if kind is not None:
        assert error["data"]["kind"] == kind, reply


def assert_no_leak(text: str) -> None:
    assert not _LEAKS.search(text), text


# --- subprocess daemons -------------------------------------------------------------------------


def xdg_environ(env: DaemonEnv, **extra: str) -> dict[str, str]:
    """The environment of a ``meworkd`` subprocess: this one minus anything that redirects it."""
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("XDG_", "MEWORK_", "LISTEN_", "NOTIFY_", "WATCHDOG_"))
    }
    base.update(
        XDG_CONFIG_HOME=str(env.config_home),
        XDG_RUNTIME_DIR=str(env.runtime_dir),
        XDG_STATE_HOME=str(env.state_home),
        HOME=str(env.root / "home"),
    )
    base.update(extra)
    return base


def start_process(
    env: DaemonEnv, *args: str, extra_env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """``meworkd ARGS`` in the XDG tree of ``env`` (stdout and stderr piped), once it serves."""
    proc, notices = start_meworkd(
        *args,
        env=xdg_environ(env, **dict(extra_env or {})),
        notify=env.root / "notify",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    notices.close()
    return proc


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    """Cleanup for a test that failed half-way: never leave a daemon behind."""
    if proc.poll() is None:
        proc.kill()
        proc.communicate(timeout=10)
    elif proc.stdout is not None and not proc.stdout.closed:
        proc.communicate()


# --- the unknown-keys round trip (shared by test_store and test_core_registry) -------------------

TOP_OWNED = frozenset({"assets", "mcp", "presets", "hooks"})
ASSETS_OWNED = frozenset({"mcpServers"})
ENTRY_FIELDS = frozenset(
    {
        "type",
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "headers",
        "enabled",
        "description",
        "timeoutSeconds",
        "longRunning",
        "disabledTools",
        "disabledAutoApproveTools",
        "serverInfo",
    }
)
SERVER_NAMES = ("a", "b", "c", "ü d")

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=6,
)


def _unknown_pairs(excluded: frozenset[str]) -> st.SearchStrategy[list[tuple[str, Any]]]:
    return st.dictionaries(
        st.text(max_size=8).filter(lambda k: k not in excluded), json_values, max_size=3
    ).map(lambda d: list(d.items()))


@dataclass
class DocModel:
    """What must survive: the unknown (key, value) pairs, in order, at every level."""

    top: list[tuple[str, Any]]
    assets: list[tuple[str, Any]]
    servers: dict[str, list[tuple[str, Any]]]


def _insert(pairs: list[tuple[str, Any]], index: int, item: tuple[str, Any]) -> dict[str, Any]:
    out = list(pairs)
    out.insert(min(index, len(out)), item)
    return dict(out)


@st.composite
def documents_with_unknown_keys(draw: st.DrawFn) -> tuple[dict[str, Any], DocModel]:
    """A valid settings document with unknown keys scattered among the owned ones."""
    names = draw(st.lists(st.sampled_from(SERVER_NAMES), unique=True, max_size=3))
    servers: dict[str, Any] = {}
    model_servers: dict[str, list[tuple[str, Any]]] = {}
    for name in names:
        unknown = draw(_unknown_pairs(ENTRY_FIELDS))
        known = draw(st.sampled_from([("command", "srv"), ("url", "http://127.0.0.1:9/mcp")]))
        servers[name] = _insert(unknown, draw(st.integers(0, 3)), known)
        model_servers[name] = unknown
    assets_unknown = draw(_unknown_pairs(ASSETS_OWNED))
    top_unknown = draw(_unknown_pairs(TOP_OWNED))
    assets = _insert(assets_unknown, draw(st.integers(0, 3)), ("mcpServers", servers))
    doc = _insert(top_unknown, draw(st.integers(0, 3)), ("assets", assets))
    return doc, DocModel(top_unknown, assets_unknown, model_servers)


_names = st.sampled_from(SERVER_NAMES)
registry_ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), _names),
        st.tuples(
            st.just("update"),
            _names,
            st.sampled_from(
                [
                    {"description": "d"},
                    {"timeoutSeconds": 30},
                    {"enabled": False},
                    {"description": None},
                    {"x-added": [1, "two"]},
                ]
            ),
        ),
        st.tuples(st.just("rename"), _names, _names),
        st.tuples(st.just("remove"), _names),
        st.tuples(st.just("tool"), _names, st.sampled_from(["t1", "t2"]), st.booleans()),
        st.tuples(st.just("mcp"), st.integers(1, 10**6)),
        st.tuples(st.just("preset"), st.sampled_from(["p1", "p2"]), st.lists(_names, max_size=2)),
    ),
    max_size=6,
)


def expect_op(op: tuple[Any, ...], model: DocModel) -> str | None:
    """Apply ``op`` to the model; return the error kind it must fail with (model unchanged)."""
    kind, *args = op
    servers = model.servers
    if kind == "add":
        if args[0] in servers:
            return "conflict"
        servers[args[0]] = []
    elif kind in ("update", "remove", "tool"):
        if args[0] not in servers:
            return "server_not_found"
        if kind == "remove":
            del servers[args[0]]
        elif kind == "update" and "x-added" in args[1]:
            pairs = dict(servers[args[0]])
            pairs["x-added"] = args[1]["x-added"]
            servers[args[0]] = list(pairs.items())
    elif kind == "rename":
        old, new = args
        if old not in servers:
            return "server_not_found"
        if new != old:
            if new in servers:
                return "conflict"
            model.servers = {(new if k == old else k): v for k, v in servers.items()}
    return None


def assert_unknown_keys_survived(doc: dict[str, Any], model: DocModel) -> None:
    assert [(k, v) for k, v in doc.items() if k not in TOP_OWNED] == model.top
    assets = doc["assets"]
    assert [(k, v) for k, v in assets.items() if k not in ASSETS_OWNED] == model.assets
    servers = assets["mcpServers"]
    assert list(servers) == list(model.servers)
    for name, unknown in model.servers.items():
        assert [(k, v) for k, v in servers[name].items() if k not in ENTRY_FIELDS] == unknown
