"""Self-tests of tests/servers/tasks.py, the tasks-extension fixture, driven by the SDK client.

Every flow runs over real Streamable HTTP (one server for the module: tasks are keyed by
unguessable ids, so tests do not interfere); discovery, the first task and the refusals also
over real stdio (a server per test). The client declares
``io.modelcontextprotocol/tasks`` per request through ``Client(extensions=[...])``; a
``ResultClaim`` turns the ``resultType: "task"`` answer into a ``CreateTask`` model, and the
``tasks/*`` requests go through ``ClientSession.send_request`` (which sets ``Mcp-Name``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp import Client, ClientSession, MCPError, StdioServerParameters
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp_types import Request, RequestParams, Result
from pydantic import ConfigDict, Field, TypeAdapter

SERVER = str(Path(__file__).parent / "servers" / "tasks.py")
PY = sys.executable
TASKS = "io.modelcontextprotocol/tasks"
MODERN = "2026-07-28"
TERMINAL = {"completed", "failed", "cancelled"}
RAW: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])

pytestmark = pytest.mark.anyio


# --------------------------------------------------------------------------------------------
# the client side of the extension, as a test needs it


class CreateTask(Result):
    """The flat ``CreateTaskResult`` a task-returning ``tools/call`` answers."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str
    status: str
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


class TaskIdParams(RequestParams):
    task_id: str = Field(alias="taskId")


class UpdateParams(TaskIdParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses")


class TasksGet(Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param = "taskId"


class TasksUpdate(Request[UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    name_param = "taskId"


class TasksCancel(Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param = "taskId"


async def get(s: ClientSession, task_id: str) -> dict[str, Any]:
    return await s.send_request(TasksGet(params=TaskIdParams(task_id=task_id)), RAW)


async def update(s: ClientSession, task_id: str, responses: dict[str, Any]) -> dict[str, Any]:
    params = UpdateParams(task_id=task_id, input_responses=responses)
    return await s.send_request(TasksUpdate(params=params), RAW)


async def cancel(s: ClientSession, task_id: str) -> dict[str, Any]:
    return await s.send_request(TasksCancel(params=TaskIdParams(task_id=task_id)), RAW)


async def get_error(s: ClientSession, task_id: str) -> types.ErrorData | None:
    """The error ``tasks/get`` answers, or None while it answers a task."""
    try:
        await get(s, task_id)
    except MCPError as e:
        return e.error
    return None


async def poll(s: ClientSession, task_id: str, until: set[str]) -> dict[str, Any]:
    """``tasks/get`` every ``pollIntervalMs`` until the status is one of ``until``."""
    with anyio.fail_after(10):
        while True:
            task = await get(s, task_id)
            if task["status"] in until:
                return task
            await anyio.sleep(task["pollIntervalMs"] / 1000)


async def resolve(created: CreateTask, ctx: ClaimContext) -> types.CallToolResult:
    """Poll a task to its end; what an SDK client's ``call_tool`` returns for it."""
    task = await poll(ctx.session, created.task_id, TERMINAL)
    if task["status"] != "completed":
        raise MCPError(code=-32603, message=f"task {task['status']}")
    return types.CallToolResult.model_validate(task["result"])


class TasksClient(ClientExtension):
    identifier = TASKS

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTask, resolve=resolve)]


async def start(s: ClientSession, tool: str, args: dict[str, Any] | None = None) -> CreateTask:
    created = await s.call_tool(tool, args or {}, allow_claimed=True)
    assert isinstance(created, CreateTask), created
    return created


def text(result: dict[str, Any]) -> str:
    block = result["content"][0]
    assert block["type"] == "text"
    return str(block["text"])


# --------------------------------------------------------------------------------------------
# servers


class HttpTasks:
    """``tasks.py --http`` in its own process group, recording to ``record``."""

    def __init__(self, tmp: Path, *args: str) -> None:
        self.record = tmp / "record.jsonl"
        self.stderr = open(tmp / "stderr.log", "wb")  # noqa: SIM115 (closed by stop)
        self.proc = subprocess.Popen(
            [PY, SERVER, "--http", "--port", "0", "--record", str(self.record), *args],
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        ready = self.proc.stdout.readline().decode()
        assert ready.startswith("READY "), ready
        self.base = f"http://127.0.0.1:{int(ready.split()[1])}"
        self.url = f"{self.base}/mcp"

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        self.stderr.close()


@pytest.fixture(scope="module")
def http_tasks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpTasks]:
    server = HttpTasks(tmp_path_factory.mktemp("tasks-http"))
    yield server
    server.stop()


Connect = Callable[..., Any]


@pytest.fixture(params=["stdio", "http"])
def connect_either(request: pytest.FixtureRequest) -> Connect:
    """``connect(tasks=True, mode=MODERN, *server_args)``: a ``Client`` to a tasks server, over
    each transport (for what a transport could change: discovery, the first task, refusals)."""
    return _connector(request, request.param)


@pytest.fixture
def connect(request: pytest.FixtureRequest) -> Connect:
    """As ``connect_either``, over HTTP only (the module's one server: a stdio server costs a
    process and the SDK's import per test; the task logic is the same on both)."""
    return _connector(request, "http")


def _connector(request: pytest.FixtureRequest, transport: str) -> Connect:

    def make(*server_args: str, tasks: bool = True, mode: str = MODERN) -> Client:
        target: Any
        if transport == "http" and not server_args:
            target = request.getfixturevalue("http_tasks").url
        else:
            target = StdioServerParameters(command=PY, args=[SERVER, *server_args])
        extensions = [TasksClient()] if tasks else []
        return Client(target, mode=mode, extensions=extensions)

    return make


# --------------------------------------------------------------------------------------------
# the flows (over both transports where the transport could change them)


async def test_advertises_the_extension_and_lists_its_tools(connect_either: Connect) -> None:
    async with connect_either() as c:
        discovered = await c.session.send_discover(MODERN)  # a pinned mode sends no probe
        assert discovered["capabilities"]["extensions"] == {TASKS: {}}
        names = {t.name for t in (await c.list_tools()).tools}
        assert names == {"job", "ask", "forever", "interval", "garbage", "big", "plain"}


async def test_a_task_completes_through_the_sdk_claim(connect_either: Connect) -> None:
    async with connect_either() as c:
        result = await c.call_tool("job", {"seconds": 0.05, "text": "hello"})
        assert result.content == [types.TextContent(type="text", text="hello")]
        assert not result.is_error
        plain = await c.call_tool("plain", {"text": "ordinary"})
        assert plain.content == [types.TextContent(type="text", text="ordinary")]


async def test_the_create_result_is_flat_and_the_detailed_task_complete(connect: Connect) -> None:
    async with connect() as c:
        created = await start(c.session, "job", {"seconds": 0})
        assert created.status == "working"
        assert len(created.task_id) >= 32
        assert (created.ttl_ms, created.poll_interval_ms) == (3_600_000, 50)
        assert created.created_at.endswith("Z")
        assert created.last_updated_at.endswith("Z")
        task = await poll(c.session, created.task_id, TERMINAL)
        assert task["resultType"] == "complete"
        assert task["status"] == "completed"
        assert task["taskId"] == created.task_id
        assert text(task["result"]) == "done"
        assert "error" not in task
        assert "inputRequests" not in task


async def test_error_result_completes_and_fail_fails(connect: Connect) -> None:
    async with connect() as c:
        erring = await start(c.session, "job", {"seconds": 0, "outcome": "error_result"})
        failing = await start(c.session, "job", {"seconds": 0, "outcome": "fail", "text": "boom"})
        task = await poll(c.session, erring.task_id, TERMINAL)
        assert task["status"] == "completed"
        assert task["result"]["isError"] is True
        task = await poll(c.session, failing.task_id, TERMINAL)
        assert task["status"] == "failed"
        assert task["error"] == {"code": -32603, "message": "boom"}
        assert "result" not in task


async def test_ask_wants_input_then_completes(connect: Connect) -> None:
    async with connect() as c:
        created = await start(c.session, "ask", {"message": "Which colour?"})
        first = await poll(c.session, created.task_id, {"input_required"})
        again = await get(c.session, created.task_id)
        assert first["inputRequests"] == again["inputRequests"]
        (key, request), *rest = first["inputRequests"].items()
        assert rest == []
        assert request["method"] == "elicitation/create"
        assert request["params"]["mode"] == "form"
        assert request["params"]["message"] == "Which colour?"
        assert request["params"]["requestedSchema"]["required"] == ["answer"]
        answer = {"action": "accept", "content": {"answer": "blue"}}
        ack = await update(c.session, created.task_id, {"nope": {}, key: answer})
        assert ack["resultType"] == "complete"
        assert set(ack) <= {"resultType", "_meta"}
        task = await poll(c.session, created.task_id, TERMINAL)
        assert task["status"] == "completed"
        assert text(task["result"]) == "answer: blue"


async def test_a_cancelled_task_ends_cancelled(connect: Connect) -> None:
    async with connect() as c:
        created = await start(c.session, "forever")
        assert (await get(c.session, created.task_id))["status"] == "working"
        ack = await cancel(c.session, created.task_id)
        assert ack["resultType"] == "complete"
        assert set(ack) <= {"resultType", "_meta"}
        assert (await get(c.session, created.task_id))["status"] == "cancelled"
        await cancel(c.session, created.task_id)  # cancelling again is still acknowledged


async def test_without_the_capability_no_task_is_returned(connect_either: Connect) -> None:
    async with connect_either(tasks=False) as c:
        with pytest.raises(MCPError) as caught:
            await c.call_tool("job", {})
        assert caught.value.error.code == -32021
        assert caught.value.error.data == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
        with pytest.raises(MCPError) as caught:
            await get(c.session, "whatever")
        assert caught.value.error.code == -32021
        plain = await c.call_tool("plain", {"text": "still fine"})
        assert plain.content == [types.TextContent(type="text", text="still fine")]


async def test_an_unknown_task_id_is_invalid_params(connect: Connect) -> None:
    async with connect() as c:
        for call in (get, cancel):
            with pytest.raises(MCPError) as caught:
                await call(c.session, "no-such-task")
            assert caught.value.error.code == -32602
        with pytest.raises(MCPError) as caught:
            await update(c.session, "no-such-task", {})
        assert caught.value.error.code == -32602


@pytest.mark.parametrize(
    ("response", "expected"),
    [({"action": "decline"}, "declined"), ({"action": "cancel"}, "cancelled")],
)
async def test_ask_declined_or_cancelled(
    connect: Connect, response: dict[str, Any], expected: str
) -> None:
    async with connect() as c:
        created = await start(c.session, "ask", {"message": "Sure?"})
        (key,) = (await poll(c.session, created.task_id, {"input_required"}))["inputRequests"]
        await update(c.session, created.task_id, {key: {"action": "accept"}})  # malformed
        assert (await get(c.session, created.task_id))["status"] == "input_required"
        await update(c.session, created.task_id, {key: response})
        task = await poll(c.session, created.task_id, TERMINAL)
        assert text(task["result"]) == expected


async def test_bad_arguments_are_invalid_params(connect: Connect) -> None:
    async with connect() as c:
        for tool, args in [
            ("job", {"outcome": "maybe"}),
            ("job", {"seconds": "soon"}),
            ("interval", {}),
            ("interval", {"ms": -1}),
            ("garbage", {"kind": "odd"}),
            ("big", {"bytes": -5}),
        ]:
            with pytest.raises(MCPError) as caught:
                await start(c.session, tool, args)
            assert caught.value.error.code == -32602, (tool, args)


# --------------------------------------------------------------------------------------------
# one transport is enough


async def test_max_tasks_bounds_the_live_tasks() -> None:
    params = StdioServerParameters(command=PY, args=[SERVER, "--max-tasks", "2"])
    async with Client(params, mode=MODERN, extensions=[TasksClient()]) as c:
        first = await start(c.session, "forever")
        await start(c.session, "forever")
        with pytest.raises(MCPError) as caught:
            await start(c.session, "forever")
        assert caught.value.error.code == -32000
        await cancel(c.session, first.task_id)  # a terminal task no longer counts
        await start(c.session, "forever")


async def test_a_task_past_its_ttl_is_purged() -> None:
    params = StdioServerParameters(command=PY, args=[SERVER, "--ttl-ms", "100"])
    async with Client(params, mode=MODERN, extensions=[TasksClient()]) as c:
        created = await start(c.session, "forever")
        assert created.ttl_ms == 100
        with anyio.fail_after(10):
            while (error := await get_error(c.session, created.task_id)) is None:
                await anyio.sleep(0.05)
        assert error.code == -32602


async def test_a_handshake_era_client_never_gets_a_task(connect_either: Connect) -> None:
    async with connect_either(mode="legacy") as c:
        meta: Any = {"io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}}}
        with pytest.raises(MCPError) as caught:
            await c.session.call_tool("job", {}, meta=meta, allow_claimed=True)
        assert caught.value.error.code == -32021
        plain = await c.call_tool("plain", {"text": "old"})
        assert plain.content == [types.TextContent(type="text", text="old")]


async def test_garbage_interval_and_big_tasks(http_tasks: HttpTasks) -> None:
    async with Client(http_tasks.url, mode=MODERN, extensions=[TasksClient()]) as c:
        s = c.session
        not_object = await start(s, "garbage", {"kind": "not_object"})
        assert "status" not in await get(s, not_object.task_id)
        bad_status = await start(s, "garbage", {"kind": "bad_status"})
        assert (await get(s, bad_status.task_id))["status"] == "sleeping"
        vanished = await start(s, "garbage", {"kind": "unknown"})
        with pytest.raises(MCPError) as caught:
            await get(s, vanished.task_id)
        assert caught.value.error.code == -32602
        for ms in (0, 1_000_000_000):
            created = await start(s, "interval", {"ms": ms})
            assert created.poll_interval_ms == ms
            assert (await get(s, created.task_id))["pollIntervalMs"] == ms
        big = await start(s, "big", {"bytes": 100_000})
        task = await poll(s, big.task_id, TERMINAL)
        assert len(text(task["result"]).encode()) == 100_000


async def test_http_tasks_outlive_the_client_and_are_observable(http_tasks: HttpTasks) -> None:
    async with Client(http_tasks.url, mode=MODERN, extensions=[TasksClient()]) as c:
        created = await start(c.session, "forever")
        await c.call_tool("plain", {})
    async with Client(http_tasks.url, mode=MODERN, extensions=[TasksClient()]) as c:
        assert (await get(c.session, created.task_id))["status"] == "working"
        await cancel(c.session, created.task_id)
    async with httpx2.AsyncClient() as http:
        listed = (await http.get(f"{http_tasks.base}/admin/tasks")).json()
    assert {"taskId": created.task_id, "tool": "forever", "status": "cancelled"} in listed
    mine = [r for r in http_tasks.records() if r.get("taskId") == created.task_id]
    assert [r["method"] for r in mine] == ["tasks/get", "tasks/cancel"]
    assert all(r["mcpName"] == created.task_id for r in mine)
    assert mine[0]["params"]["taskId"] == created.task_id
    calls = [r for r in http_tasks.records() if r["method"] == "tools/call"]
    assert {"method": "tools/call", "name": "forever", "task": True} in calls
    assert {"method": "tools/call", "name": "plain", "task": False} in calls


async def test_stdio_records_without_mcp_name(tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    params = StdioServerParameters(command=PY, args=[SERVER, "--record", str(record)])
    async with Client(params, mode=MODERN, extensions=[TasksClient()]) as c:
        created = await start(c.session, "job", {"seconds": 0})
        await get(c.session, created.task_id)
    async with Client(params, mode=MODERN) as c:
        with pytest.raises(MCPError):
            await c.call_tool("job", {})
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert lines[0] == {"method": "tools/call", "name": "job", "task": True}
    assert lines[1]["method"] == "tasks/get"
    assert lines[1]["mcpName"] is None
    assert lines[2] == {"method": "tools/call", "name": "job", "task": False}
