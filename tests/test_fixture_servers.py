"""Self-tests of the fixture MCP servers under tests/servers/ (driven by the mcp SDK client).

Raw-protocol checks use plain ``subprocess.Popen`` children in their own process group, read by
threads (``Lines``) so a test can wait for a line with a timeout and without sleeping.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import anyio
import httpx2
import mcp.types as types
import psutil
import pytest
from mcp import Client, ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

SERVERS = Path(__file__).parent / "servers"
KITCHEN = str(SERVERS / "kitchen.py")
RAW_BAD = str(SERVERS / "raw_bad.py")
HTTP_SERVER = str(SERVERS / "http_server.py")
PY = sys.executable
HANDSHAKE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "fixture-test", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


# --------------------------------------------------------------------------------------------
# helpers


class Lines:
    """Collect the lines of a binary stream in a daemon thread; wait for them with a timeout."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.lines: list[str] = []
        self.nbytes = 0
        self.eof = False
        self._cond = threading.Condition()
        self._stream = stream
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        try:
            for raw in iter(self._stream.readline, b""):
                with self._cond:
                    self.nbytes += len(raw)
                    self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                    self._cond.notify_all()
        except (OSError, ValueError):
            pass
        finally:
            self._stream.close()
            with self._cond:
                self.eof = True
                self._cond.notify_all()

    def wait(self, pred: Callable[[], bool], timeout: float = 10.0) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: pred() or self.eof, timeout) and pred()

    def line(self, i: int, timeout: float = 10.0) -> str:
        assert self.wait(lambda: len(self.lines) > i, timeout), f"no line {i}: {self.lines[-5:]}"
        return self.lines[i]

    def find(self, substr: str, timeout: float = 10.0) -> str:
        def hit() -> str | None:
            return next((ln for ln in self.lines if substr in ln), None)

        assert self.wait(lambda: hit() is not None, timeout), f"{substr!r} not in {self.lines[-5:]}"
        line = hit()
        assert line is not None
        return line

    async def afind(self, substr: str, timeout: float = 10.0) -> str:
        return await anyio.to_thread.run_sync(self.find, substr, timeout)

    async def await_eof(self, timeout: float = 10.0) -> None:
        ok = await anyio.to_thread.run_sync(lambda: self.wait(lambda: self.eof, timeout))
        assert ok or self.eof


class RawServer:
    """A stdio server child in its own process group, spoken to with raw JSON lines."""

    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen(
            [PY, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        assert self.proc.stdin is not None
        assert self.proc.stdout
        assert self.proc.stderr
        self.stdin = self.proc.stdin
        self.out = Lines(self.proc.stdout)
        self.err = Lines(self.proc.stderr)
        self._next = 0

    def send(self, msg: dict[str, Any]) -> None:
        self.stdin.write(json.dumps(msg).encode() + b"\n")
        self.stdin.flush()

    def recv_line(self, timeout: float = 10.0) -> str:
        line = self.out.line(self._next, timeout)
        self._next += 1
        return line

    def recv(self, timeout: float = 10.0) -> dict[str, Any]:
        return json.loads(self.recv_line(timeout))

    def handshake(self) -> dict[str, Any]:
        self.send(HANDSHAKE)
        res = self.recv()
        assert res["id"] == 1, res
        assert "result" in res, res
        self.send(INITIALIZED)
        return res["result"]

    def kill_group(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(10)
        try:
            self.stdin.close()
        except OSError:  # broken pipe while flushing
            pass
        # stdout/stderr are closed by their Lines readers at EOF


@pytest.fixture
def raw() -> Iterator[Callable[..., RawServer]]:
    started: list[RawServer] = []

    def start(*args: str) -> RawServer:
        server = RawServer(list(args))
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill_group()


def kitchen(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=PY, args=[KITCHEN, *args])


class ErrPipe:
    """An errlog for stdio_client with a real fileno, whose lines a test can wait for."""

    def __init__(self) -> None:
        rfd, wfd = os.pipe()
        self.w = os.fdopen(wfd, "w")
        self.lines = Lines(os.fdopen(rfd, "rb"))

    def spawned(self) -> None:
        """Call once the child runs: drop our copy of the write end so EOF can arrive."""
        self.w.close()


def sig_ignored(pid: int, sig: int) -> bool:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) & (1 << (sig - 1)))
    raise AssertionError("no SigIgn line")


def kill_pid(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# --------------------------------------------------------------------------------------------
# kitchen.py over the SDK client


@pytest.mark.anyio
async def test_kitchen_handshake_tools_and_lists() -> None:
    async with (
        stdio_client(
            kitchen("--name", "chef", "--version", "9.9", "--tools", "3", "--page-size", "5")
        ) as (r, w),
        ClientSession(r, w) as s,
    ):
        with anyio.fail_after(15):
            init = await s.initialize()
            assert (init.server_info.name, init.server_info.version) == ("chef", "9.9")
            assert init.capabilities.tools is not None
            assert init.capabilities.tools.list_changed

            tools: list[types.Tool] = []
            cursor, pages = None, 0
            while True:
                res = await s.list_tools(
                    params=types.PaginatedRequestParams(cursor=cursor) if cursor else None
                )
                pages += 1
                assert len(res.tools) <= 5
                tools += res.tools
                cursor = res.next_cursor
                if cursor is None:
                    break
            by_name = {t.name: t for t in tools}
            assert pages == 4
            assert len(tools) == 20
            assert {"echo", "add", "t0", "t1", "t2", "spawn_grandchild"} <= set(by_name)
            assert all(t.input_schema.get("type") == "object" for t in tools)
            key = "anthropic/requiresUserInteraction"
            assert by_name["interactive_true"].meta == {key: True}
            assert by_name["interactive_false"].meta == {key: False}
            assert by_name["interactive_string"].meta == {key: "true"}
            assert by_name["interactive_number"].meta == {key: 1}
            assert by_name["interactive_object"].meta == {key: {"x": 1}}
            assert by_name["add"].output_schema is not None

            echo = await s.call_tool("echo", {"text": "hi"})
            assert echo.meta == {"kitchen/echo": True}
            assert echo.content[0].text == "hi"  # type: ignore[union-attr]
            assert echo.content[0].meta == {"kitchen/block": True}
            wire = echo.model_dump(by_alias=True, exclude_none=True)
            assert wire["_meta"] == {"kitchen/echo": True}

            add = await s.call_tool("add", {"a": 2, "b": 3})
            assert add.structured_content == {"total": 5}
            assert not add.is_error

            with pytest.raises(RuntimeError, match="not-an-int"):
                await s.call_tool("bad_output", {})
            bad = await s.send_request(
                types.CallToolRequest(params=types.CallToolRequestParams(name="bad_output")),
                types.CallToolResult,
            )
            assert bad.structured_content == {"x": "not-an-int"}

            err = await s.call_tool("error", {})
            assert err.is_error
            assert "fails" in err.content[0].text

            with pytest.raises(MCPError) as exc:
                await s.call_tool("rpc_error", {})
            assert exc.value.code == -32099
            assert "rpc_error" in exc.value.message

            big = await s.call_tool("big", {"bytes": 300_000})
            assert len(big.content[0].text) == 300_000  # type: ignore[union-attr]

            t1 = await s.call_tool("t1", {"k": [1, 2]})
            assert json.loads(t1.content[0].text) == {"k": [1, 2]}  # type: ignore[union-attr]

            prompts = await s.list_prompts()
            assert [p.name for p in prompts.prompts] == ["greet"]
            got = await s.get_prompt("greet", {"name": "Ada"})
            assert got.messages[0].content.text == "Hello, Ada!"  # type: ignore[union-attr]
            resources = await s.list_resources()
            assert [str(x.uri) for x in resources.resources] == ["mem://hello"]
            templates = await s.list_resource_templates()
            assert [x.uri_template for x in templates.resource_templates] == ["mem://item/{id}"]
            read = await s.read_resource("mem://item/42")
            assert read.contents[0].text == "item 42"  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_kitchen_progress_cancel_list_changed_grandchild() -> None:
    errlog = ErrPipe()
    notes: list[Any] = []
    changed = anyio.Event()

    async def on_message(msg: Any) -> None:
        notes.append(msg)
        if isinstance(msg, types.ToolListChangedNotification):
            changed.set()

    grandchild = None
    try:
        async with (
            stdio_client(kitchen(), errlog=errlog.w) as (r, w),
            ClientSession(r, w, message_handler=on_message) as s,
        ):
            errlog.spawned()
            with anyio.fail_after(15):
                await s.initialize()

                seen: list[tuple[float, float | None, str | None]] = []

                async def on_progress(p: float, total: float | None, msg: str | None) -> None:
                    seen.append((p, total, msg))

                res = await s.call_tool(
                    "progress", {"steps": 3, "interval": 0.01}, progress_callback=on_progress
                )
                assert res.content[0].text == "done"  # type: ignore[union-attr]
                assert [(p, t) for p, t, _ in seen] == [(1, 3), (2, 3), (3, 3)]

                # Cancel `slow` once the server says it is running: notifications/cancelled.
                started = anyio.Event()

                async def slow_started(p: float, total: float | None, msg: str | None) -> None:
                    started.set()

                async with anyio.create_task_group() as tg:
                    scope = anyio.CancelScope()

                    async def call_slow() -> None:
                        with scope:
                            await s.call_tool(
                                "slow", {"seconds": 60}, progress_callback=slow_started
                            )

                    tg.start_soon(call_slow)
                    await started.wait()
                    scope.cancel()
                await errlog.lines.afind("kitchen: slow cancelled")

                assert "zz" not in {t.name for t in (await s.list_tools()).tools}
                await s.call_tool("add_tool", {"name": "zz"})
                await changed.wait()
                assert "zz" in {t.name for t in (await s.list_tools()).tools}
                zz = await s.call_tool("zz", {"q": 1})
                assert json.loads(zz.content[0].text) == {"q": 1}  # type: ignore[union-attr]

                pid_text = (await s.call_tool("spawn_grandchild", {})).content[0].text  # type: ignore[union-attr]
                grandchild = int(pid_text)
                kitchen_pid = psutil.Process(grandchild).ppid()
                assert os.getpgid(grandchild) == os.getpgid(kitchen_pid) == kitchen_pid
                assert os.getpgid(grandchild) != os.getpgid(0)
                assert sig_ignored(grandchild, signal.SIGTERM)

                flooded = await s.call_tool("flood_stderr", {"bytes": 1_000_000})
                assert flooded.content[0].text == "flooded"  # type: ignore[union-attr]
        # kitchen exited on stdin EOF; its grandchild still holds the stderr pipe.
        assert psutil.pid_exists(grandchild)
    finally:
        if grandchild is not None:
            kill_pid(grandchild)
    await errlog.lines.await_eof()
    flood = [ln for ln in errlog.lines.lines if ln.startswith("kitchen flood")]
    assert sum(len(ln) + 1 for ln in flood) == 1_000_000
    assert all(len(ln) <= 99 for ln in flood)


@pytest.mark.anyio
async def test_kitchen_modern_era() -> None:
    async with Client(kitchen(), mode="auto") as c:
        with anyio.fail_after(15):
            assert c.protocol_version == "2026-07-28"
            assert c.server_info.name == "kitchen"
            echo = await c.call_tool("echo", {"text": "new era"})
            # 2026-07-28 results also carry the SDK's serverInfo stamp in _meta
            assert echo.meta == {
                "kitchen/echo": True,
                "io.modelcontextprotocol/serverInfo": {"name": "kitchen", "version": "1.0.0"},
            }

            seen: list[float] = []

            async def on_progress(p: float, total: float | None, msg: str | None) -> None:
                seen.append(p)

            await c.call_tool(
                "progress", {"steps": 2, "interval": 0}, progress_callback=on_progress
            )
            assert seen == [1, 2]

            async with c.listen(tools_list_changed=True) as sub:
                await c.call_tool("add_tool", {"name": "modern_tool"})
                async for _event in sub:
                    break
            names = [t.name for t in (await c.list_tools()).tools]
            assert "modern_tool" in names


@pytest.mark.anyio
async def test_kitchen_die_mid_call() -> None:
    async with stdio_client(kitchen()) as (r, w), ClientSession(r, w) as s:
        with anyio.fail_after(15):
            await s.initialize()
            with pytest.raises(MCPError) as exc:
                await s.call_tool("die", {})
            assert exc.value.code == types.CONNECTION_CLOSED


# --------------------------------------------------------------------------------------------
# kitchen.py start-up options, raw


def test_kitchen_exit_at_start() -> None:
    done = subprocess.run(
        [PY, KITCHEN, "--exit-at-start", "7"], capture_output=True, timeout=10, check=False
    )
    assert done.returncode == 7
    assert done.stderr.decode().strip() == "kitchen: fatal: cannot start"
    assert done.stdout == b""


def test_kitchen_junk_stderr_lines_and_exit_code_3(raw: Callable[..., RawServer]) -> None:
    k = raw(KITCHEN, "--stdout-junk", "--stderr-lines", "3")
    assert k.recv_line() == "hello from kitchen"
    assert [k.err.line(i) for i in range(3)] == [f"kitchen: stderr line {i}" for i in range(3)]
    init = k.handshake()
    assert init["serverInfo"]["name"] == "kitchen"
    k.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "die"}})
    assert k.proc.wait(10) == 3


def test_kitchen_hang_initialize(raw: Callable[..., RawServer]) -> None:
    k = raw(KITCHEN, "--hang-initialize")
    k.send(HANDSHAKE)
    k.stdin.close()
    # A negative check needs some wait: no answer, no exit for half a second.
    assert not k.out.wait(lambda: bool(k.out.lines), timeout=0.5)
    assert k.proc.poll() is None
    assert not k.out.eof


def test_kitchen_ignore_sigterm(raw: Callable[..., RawServer]) -> None:
    k = raw(KITCHEN, "--ignore-sigterm")
    k.handshake()
    assert sig_ignored(k.proc.pid, signal.SIGTERM)
    k.proc.send_signal(signal.SIGTERM)
    k.stdin.close()
    k.err.find("kitchen: stdin closed, staying alive")
    assert k.proc.poll() is None


def test_kitchen_grandchild_at_start(raw: Callable[..., RawServer]) -> None:
    k = raw(KITCHEN, "--grandchild")
    pid = int(k.err.find("kitchen: grandchild pid").rsplit(" ", 1)[1])
    assert psutil.Process(pid).ppid() == k.proc.pid
    assert os.getpgid(pid) == k.proc.pid
    assert sig_ignored(pid, signal.SIGTERM)
    k.handshake()
    k.stdin.close()
    assert k.proc.wait(10) == 0  # the server exits on EOF, the grandchild stays
    assert psutil.pid_exists(pid)
    assert psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    # the raw fixture kills the whole group at teardown


# --------------------------------------------------------------------------------------------
# raw_bad.py


def test_raw_bad_legacy_ignores_discover(raw: Callable[..., RawServer]) -> None:
    b = raw(RAW_BAD, "--mode", "legacy")
    assert b.err.line(0) == "raw_bad: mode legacy"
    b.send({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {}})
    b.send({"jsonrpc": "2.0", "id": 9, "method": "ping"})
    assert b.recv() == {"jsonrpc": "2.0", "id": 9, "result": {}}  # discover got no answer
    assert b.handshake()["protocolVersion"] == "2025-11-25"
    b.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert [t["name"] for t in b.recv()["result"]["tools"]] == ["t"]


@pytest.mark.anyio
async def test_raw_bad_legacy_with_sdk() -> None:
    params = StdioServerParameters(command=PY, args=[RAW_BAD, "--mode", "legacy"])
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        with anyio.fail_after(10):
            await s.initialize()
            res = await s.call_tool("t", {"x": "y"})
            assert json.loads(res.content[0].text) == {"x": "y"}  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", ["wrong-id", "invalid-json", "silent"])
def test_raw_bad_modes(raw: Callable[..., RawServer], mode: str) -> None:
    b = raw(RAW_BAD, "--mode", mode)
    b.handshake()
    b.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert b.recv()["result"]["tools"][0]["name"] == "t"
    b.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "t"}})
    b.send({"jsonrpc": "2.0", "id": 4, "method": "ping"})
    if mode == "wrong-id":
        wrong = b.recv()
        assert wrong["id"] == 1_000_003
        assert "result" in wrong
    elif mode == "invalid-json":
        for _ in range(2):
            line = b.recv_line()
            with pytest.raises(ValueError):
                json.loads(line)
    assert b.recv() == {"jsonrpc": "2.0", "id": 4, "result": {}}
    b.send({"jsonrpc": "2.0", "id": 5, "method": "server/discover"})
    b.send({"jsonrpc": "2.0", "id": 6, "method": "ping"})
    first = b.recv()
    if mode == "silent":
        assert first["id"] == 6
    else:
        assert first["id"] == 5
        assert first["error"]["code"] == -32601


# --------------------------------------------------------------------------------------------
# http_server.py


class HttpServer:
    def __init__(self, mode: str) -> None:
        self.proc = subprocess.Popen(
            [PY, HTTP_SERVER, "--port", "0", "--mode", mode],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        assert self.proc.stderr is not None
        self.out = Lines(self.proc.stdout)
        self.err = Lines(self.proc.stderr)
        ready = self.out.line(0, timeout=20)
        assert ready.startswith("READY "), ready
        self.port = int(ready.split()[1])
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.base}/mcp"

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(10)  # stdout/stderr are closed by their Lines readers at EOF


@pytest.fixture
def http_server() -> Iterator[Callable[[str], HttpServer]]:
    started: list[HttpServer] = []

    def start(mode: str) -> HttpServer:
        server = HttpServer(mode)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def http_client(**headers: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300))


@pytest.mark.anyio
async def test_http_normal(http_server: Callable[[str], HttpServer]) -> None:
    srv = http_server("normal")
    assert srv.port > 0
    async with http_client(Authorization="Bearer s3cret") as http:
        async with (
            streamable_http_client(srv.url, http_client=http) as (r, w),
            ClientSession(r, w) as s,
        ):
            with anyio.fail_after(15):
                init = await s.initialize()
                assert init.server_info.name == "kitchen-http"
                names = {t.name for t in (await s.list_tools()).tools}
                assert names == {"echo", "slow", "whoami", "progress", "forget_sessions"}
                echo = await s.call_tool("echo", {"text": "over http"})
                assert echo.content[0].text == "over http"  # type: ignore[union-attr]
                who = await s.call_tool("whoami", {})
                assert who.content[0].text == "Bearer s3cret"  # type: ignore[union-attr]

                seen: list[float] = []

                async def on_progress(p: float, total: float | None, msg: str | None) -> None:
                    seen.append(p)

                await s.call_tool(
                    "progress", {"steps": 3, "interval": 0}, progress_callback=on_progress
                )
                assert seen == [1, 2, 3]

                started = anyio.Event()

                async def slow_started(p: float, total: float | None, msg: str | None) -> None:
                    started.set()

                async with anyio.create_task_group() as tg:
                    scope = anyio.CancelScope()

                    async def call_slow() -> None:
                        with scope:
                            await s.call_tool(
                                "slow", {"seconds": 60}, progress_callback=slow_started
                            )

                    tg.start_soon(call_slow)
                    await started.wait()
                    scope.cancel()
                await srv.err.afind("kitchen http: slow cancelled")

                forgot = await s.call_tool("forget_sessions", {})
                assert forgot.content[0].text == "forgot 1"  # type: ignore[union-attr]
                with pytest.raises(MCPError, match="Session not found"):
                    await s.call_tool("echo", {"text": "gone"})

        # the out-of-band route, and the modern era (no sessions at all)
        resp = await http.post(f"{srv.base}/admin/forget")
        assert resp.status_code == 200
        assert resp.json() == {"forgot": 0}
    async with Client(srv.url) as c:
        with anyio.fail_after(10):
            assert c.protocol_version == "2026-07-28"
            who = await c.call_tool("whoami", {})
            assert who.content[0].text == "<none>"  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_http_500(http_server: Callable[[str], HttpServer]) -> None:
    srv = http_server("500")
    async with http_client() as http:
        resp = await http.post(srv.url, json=HANDSHAKE)
        assert resp.status_code == 500
        assert resp.text == "kitchen http: internal failure"
        with pytest.raises(Exception) as exc, anyio.fail_after(10):
            async with (
                streamable_http_client(srv.url, http_client=http) as (r, w),
                ClientSession(r, w) as s,
            ):
                await s.initialize()
    leaves = exc.value.exceptions if isinstance(exc.value, BaseExceptionGroup) else [exc.value]
    while any(isinstance(x, BaseExceptionGroup) for x in leaves):
        leaves = [y for x in leaves for y in getattr(x, "exceptions", [x])]
    assert any(isinstance(x, MCPError) for x in leaves), leaves


@pytest.mark.anyio
async def test_http_drop(http_server: Callable[[str], HttpServer]) -> None:
    srv = http_server("drop")
    async with (
        http_client() as http,
        streamable_http_client(srv.url, http_client=http) as (r, w),
        ClientSession(r, w) as s,
    ):
        with anyio.fail_after(10):
            await s.initialize()
            assert next(t.name for t in (await s.list_tools()).tools) == "echo"
            with pytest.raises(MCPError) as exc:
                await s.call_tool("echo", {"text": "x"})
            assert exc.value.code == types.CONNECTION_CLOSED
    await srv.err.afind("dropping the connection mid-response")


@pytest.mark.anyio
async def test_http_hang(http_server: Callable[[str], HttpServer]) -> None:
    srv = http_server("hang")
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(5, read=0.3)) as http:
        with pytest.raises(httpx2.ReadTimeout):
            await http.post(srv.url, json=HANDSHAKE)
