"""MCP fixture server for the tasks extension (``io.modelcontextprotocol/tasks``, 2026-07-28).

``python tests/servers/tasks.py [--http --port P] [--record PATH] [--max-tasks N]
[--poll-ms MS] [--ttl-ms MS]``

Runs over stdio by default; with ``--http`` it serves Streamable HTTP on 127.0.0.1 at ``/mcp``
(``--port 0`` picks a free port) and prints exactly one line ``READY <port>`` to stdout once it
accepts requests. Logs go to stderr. Built on the SDK's ``MCPServer`` with an ``Extension`` (the
spec text, not the host's code, is the reference): the extension advertises
``io.modelcontextprotocol/tasks`` under ``capabilities.extensions``, serves ``tasks/get``,
``tasks/update`` and ``tasks/cancel``, and intercepts ``tools/call`` for the task tools.

A task is returned only when that very request's
``_meta["io.modelcontextprotocol/clientCapabilities"].extensions`` holds the tasks key (and never
on a handshake-era connection); a task tool called without it gets ``-32021`` with
``data.requiredCapabilities.extensions["io.modelcontextprotocol/tasks"] = {}``, and so does a
``tasks/*`` request without it. A task comes back as a flat ``CreateTaskResult``
(``resultType: "task"``, an unguessable ``taskId``, ``status: "working"``, ``createdAt``,
``lastUpdatedAt``, ``ttlMs``, ``pollIntervalMs`` = ``--poll-ms``, default 50), stored before it is
sent. ``tasks/get`` answers a DetailedTask (``resultType: "complete"``; ``result`` when completed,
``error`` when failed, ``inputRequests`` when input_required); ``tasks/update`` and
``tasks/cancel`` answer an empty ack (cancel turns a task that is not yet terminal ``cancelled``);
an unknown ``taskId`` is ``-32602``, and so is one past its ``ttlMs`` (``--ttl-ms``, default an
hour; the task is then purged). Task state advances lazily from the clock whenever a task is
read, so no work runs between requests. Tools (each returns a task unless said otherwise):

* ``job {seconds=0.2, outcome="complete"|"error_result"|"fail", text="done"}``: after ``seconds``
  completes with ``{content: [{type: text, text}]}``; ``error_result`` adds ``isError: true``
  (still ``completed``); ``fail`` ends ``failed`` with ``error: {code: -32603, message: text}``.
* ``ask {message, give_up_after?}``: ``input_required`` from its first poll, with the same
  pending ``inputRequests: {"question-1": {method: "elicitation/create", params: {mode: "form",
  message, requestedSchema: {answer: string, required}}}}`` on every poll until ``tasks/update``
  answers ``question-1``; then completes with ``answer: <answer>`` (accept), ``declined`` or
  ``cancelled``. A malformed answer is ignored (the question stays pending). Unanswered after
  ``give_up_after`` seconds, it stops asking and fails (``nobody answered the question``), as a
  server with a question timeout does.
* ``forever {}``: stays ``working`` until cancelled.
* ``interval {ms}``: its ``pollIntervalMs`` is ``ms`` (0 and 1000000000 allowed); completes with
  ``interval <ms>`` after 0.3 s.
* ``garbage {kind}``: ``tasks/get`` on it answers garbage: ``not_object`` (the SDK only sends
  objects, so a result without ``status``), ``bad_status`` (``status: "sleeping"``), ``unknown``
  (``-32602`` as if the task vanished). ``tasks/update`` / ``tasks/cancel`` work as usual.
* ``big {bytes}``: completes at once with one text block of exactly ``bytes`` bytes.
* ``plain {text}``: an ordinary tool, never a task; answers ``text``.

More than ``--max-tasks`` (default 10000) live (non-terminal) tasks: a new one is refused with
``-32000``. Bad tool arguments: ``-32602``. Tasks live in the process, keyed by ``taskId`` and
not by connection or session, so they survive a client reconnecting.

Observability outside MCP: ``--record PATH`` appends one JSON line per ``tasks/*`` request
(``{"method", "taskId", "params", "mcpName"}``, ``mcpName`` being the ``Mcp-Name`` HTTP header or
null) and per ``tools/call`` (``{"method": "tools/call", "name", "task": <bool>}``); on HTTP,
``GET /admin/tasks`` answers ``[{"taskId", "tool", "status"}, ...]`` for every task.
"""

from __future__ import annotations

import argparse
import json
import logging
import secrets
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import uvicorn
from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolRequestParams, RequestParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field
from starlette.requests import Request
from starlette.responses import JSONResponse

TASKS = "io.modelcontextprotocol/tasks"
CLIENT_CAPS = "io.modelcontextprotocol/clientCapabilities"
MISSING_CAPABILITY = -32021
INVALID_PARAMS = -32602
TOO_MANY_TASKS = -32000
TERMINAL = frozenset({"completed", "failed", "cancelled"})
QUESTION_KEY = "question-1"
INTERVAL_RUN_SECONDS = 0.3
MAX_BIG_BYTES = 64 * 1024 * 1024
Ctx = ServerRequestContext[Any, Any]
log = logging.getLogger("tasks_fixture")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def text_result(text: str, is_error: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if is_error:
        result["isError"] = True
    return result


def invalid(message: str) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=message)


@dataclass
class Task:
    """One task and what decides its next state (``due``: monotonic time it finishes)."""

    task_id: str
    tool: str
    poll_ms: int
    ttl_ms: int
    created_at: str = field(default_factory=now_iso)
    born: float = field(default_factory=time.monotonic)
    updated_at: str = ""
    status: str = "working"
    due: float | None = None
    outcome: dict[str, Any] = field(default_factory=dict)  # "result" or "error" once done
    question: dict[str, Any] | None = None  # the pending elicitation (ask)
    give_up: float | None = None  # monotonic time the server stops waiting for the answer
    garbage: str | None = None

    def __post_init__(self) -> None:
        self.updated_at = self.created_at

    def move(self, status: str) -> None:
        self.status = status
        self.updated_at = now_iso()

    def expired(self) -> bool:
        return time.monotonic() - self.born > self.ttl_ms / 1000

    def advance(self) -> None:
        """Bring the state up to date with the clock (tasks run lazily)."""
        if self.status in TERMINAL:
            return
        if (
            self.question is not None
            and self.give_up is not None
            and time.monotonic() >= self.give_up
        ):
            # Nobody answered in time: the server stops asking and fails the task.
            self.question = None
            self.outcome = {"error": {"code": -32603, "message": "nobody answered the question"}}
            self.move("failed")
        elif self.question is not None and self.status == "working":
            self.move("input_required")
        elif self.due is not None and time.monotonic() >= self.due:
            self.move("failed" if "error" in self.outcome else "completed")

    def wire(self) -> dict[str, Any]:
        return {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.updated_at,
            "ttlMs": self.ttl_ms,
            "pollIntervalMs": self.poll_ms,
        }

    def detailed(self) -> dict[str, Any]:
        body = {"resultType": "complete", **self.wire()}
        if self.status == "completed":
            body["result"] = self.outcome["result"]
        elif self.status == "failed":
            body["error"] = self.outcome["error"]
        elif self.status == "input_required" and self.question is not None:
            body["inputRequests"] = {QUESTION_KEY: self.question}
        return body

    def answer(self, response: Any) -> None:
        """Apply an elicitation answer to the pending question; ignore anything malformed."""
        if self.question is None or not isinstance(response, dict):
            return
        action = response.get("action")
        content = response.get("content")
        if (
            action == "accept"
            and isinstance(content, dict)
            and isinstance(content.get("answer"), str)
        ):
            text = f"answer: {content['answer']}"
        elif action == "decline":
            text = "declined"
        elif action == "cancel":
            text = "cancelled"
        else:
            return
        self.question = None
        self.outcome = {"result": text_result(text)}
        self.due = time.monotonic()
        self.move("working")


class TaskIdParams(RequestParams):
    task_id: str = Field(alias="taskId")


class UpdateParams(TaskIdParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses", default_factory=dict)


def argument(args: dict[str, Any], name: str, kind: type, default: Any = None) -> Any:
    value = args.get(name, default)
    ok = isinstance(value, kind) and not isinstance(value, bool)
    if kind is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok:
        raise invalid(f"argument {name!r} must be a {kind.__name__}")
    return value


class TasksExtension(Extension):
    """The server side of ``io.modelcontextprotocol/tasks``: the store and its three methods."""

    identifier = TASKS

    def __init__(self, opts: argparse.Namespace) -> None:
        self.tasks: dict[str, Task] = {}
        self.poll_ms: int = opts.poll_ms
        self.ttl_ms: int = opts.ttl_ms
        self.max_tasks: int = opts.max_tasks
        self.record_path: str | None = opts.record

    # ---- observability

    def record(self, entry: dict[str, Any]) -> None:
        if self.record_path is None:
            return
        with open(self.record_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    def snapshot(self) -> list[dict[str, Any]]:
        """Every task's id and status, once expired tasks are purged."""
        for task_id in [t.task_id for t in self.tasks.values() if t.expired()]:
            del self.tasks[task_id]
        for task in self.tasks.values():
            task.advance()
        return [
            {"taskId": t.task_id, "tool": t.tool, "status": t.status} for t in self.tasks.values()
        ]

    # ---- tools/call

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: Ctx, call_next: CallNext
    ) -> HandlerResult:
        if params.name not in TASK_TOOLS:
            self.record({"method": "tools/call", "name": params.name, "task": False})
            return await call_next(ctx)
        try:
            require_tasks(ctx)
            task = self.create(params.name, params.arguments or {})
        except MCPError:
            self.record({"method": "tools/call", "name": params.name, "task": False})
            raise
        self.record({"method": "tools/call", "name": params.name, "task": True})
        log.info("created task %s (%s)", task.task_id, task.tool)
        return {"resultType": "task", **task.wire()}

    def create(self, tool: str, args: dict[str, Any]) -> Task:
        task = Task(secrets.token_urlsafe(24), tool, self.poll_ms, self.ttl_ms)
        TASK_TOOLS[tool](task, args)
        if sum(1 for t in self.snapshot() if t["status"] not in TERMINAL) >= self.max_tasks:
            raise MCPError(
                code=TOO_MANY_TASKS, message=f"too many live tasks (max {self.max_tasks})"
            )
        self.tasks[task.task_id] = task
        return task

    # ---- tasks/*

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding("tasks/get", TaskIdParams, self.get),
            MethodBinding("tasks/update", UpdateParams, self.update),
            MethodBinding("tasks/cancel", TaskIdParams, self.cancel),
        ]

    def lookup(self, ctx: Ctx, params: TaskIdParams) -> Task:
        headers = getattr(ctx.request, "headers", None)
        self.record(
            {
                "method": ctx.method,
                "taskId": params.task_id,
                "params": dict(ctx.params or {}),
                "mcpName": headers.get("mcp-name") if headers is not None else None,
            }
        )
        require_tasks(ctx)
        task = self.tasks.get(params.task_id)
        if task is not None and task.expired():
            del self.tasks[task.task_id]
            task = None
        if task is None:
            raise invalid(f"unknown task {params.task_id!r}")
        task.advance()
        return task

    async def get(self, ctx: Ctx, params: TaskIdParams) -> HandlerResult:
        task = self.lookup(ctx, params)
        if task.garbage == "unknown":
            raise invalid(f"unknown task {params.task_id!r}")
        if task.garbage == "not_object":
            return {"resultType": "complete", "taskId": task.task_id, "garbage": True}
        if task.garbage == "bad_status":
            return {**task.detailed(), "status": "sleeping"}
        return task.detailed()

    async def update(self, ctx: Ctx, params: UpdateParams) -> HandlerResult:
        task = self.lookup(ctx, params)
        if task.status not in TERMINAL and QUESTION_KEY in params.input_responses:
            task.answer(params.input_responses[QUESTION_KEY])
        return {}

    async def cancel(self, ctx: Ctx, params: TaskIdParams) -> HandlerResult:
        task = self.lookup(ctx, params)
        if task.status not in TERMINAL:
            task.question = None
            task.move("cancelled")
        return {}


def require_tasks(ctx: Ctx) -> None:
    """Refuse unless this very request declared the tasks extension (never on the old era)."""
    meta = (ctx.params or {}).get("_meta")
    caps = meta.get(CLIENT_CAPS) if isinstance(meta, dict) else None
    extensions = caps.get("extensions") if isinstance(caps, dict) else None
    declared = isinstance(extensions, dict) and TASKS in extensions
    if declared and ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return
    raise MCPError(
        code=MISSING_CAPABILITY,
        message=f"this request needs the client capability {TASKS!r}",
        data={"requiredCapabilities": {"extensions": {TASKS: {}}}},
    )


# ---- the task tools: each sets up a fresh task from its arguments


def setup_job(task: Task, args: dict[str, Any]) -> None:
    seconds = argument(args, "seconds", float, 0.2)
    outcome = argument(args, "outcome", str, "complete")
    text = argument(args, "text", str, "done")
    if outcome == "fail":
        task.outcome = {"error": {"code": -32603, "message": text}}
    elif outcome in ("complete", "error_result"):
        task.outcome = {"result": text_result(text, is_error=outcome == "error_result")}
    else:
        raise invalid("outcome must be complete, error_result or fail")
    task.due = time.monotonic() + max(0.0, seconds)


def setup_ask(task: Task, args: dict[str, Any]) -> None:
    message = argument(args, "message", str, "What is the answer?")
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    }
    task.question = {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": schema},
    }
    give_up_after = args.get("give_up_after")
    if give_up_after is not None:
        if isinstance(give_up_after, bool) or not isinstance(give_up_after, int | float):
            raise invalid("give_up_after: expected a number of seconds")
        task.give_up = time.monotonic() + give_up_after


def setup_forever(task: Task, args: dict[str, Any]) -> None:
    task.due = None


def setup_interval(task: Task, args: dict[str, Any]) -> None:
    ms = argument(args, "ms", int)
    if ms < 0:
        raise invalid("ms must be >= 0")
    task.poll_ms = ms
    task.outcome = {"result": text_result(f"interval {ms}")}
    task.due = time.monotonic() + INTERVAL_RUN_SECONDS


def setup_garbage(task: Task, args: dict[str, Any]) -> None:
    kind = argument(args, "kind", str)
    if kind not in ("not_object", "bad_status", "unknown"):
        raise invalid("kind must be not_object, bad_status or unknown")
    task.garbage = kind
    task.outcome = {"result": text_result("garbage")}
    task.due = time.monotonic()


def setup_big(task: Task, args: dict[str, Any]) -> None:
    n = argument(args, "bytes", int)
    if not 0 <= n <= MAX_BIG_BYTES:
        raise invalid(f"bytes must be between 0 and {MAX_BIG_BYTES}")
    task.outcome = {"result": text_result("x" * n)}
    task.due = time.monotonic()


TASK_TOOLS = {
    "job": setup_job,
    "ask": setup_ask,
    "forever": setup_forever,
    "interval": setup_interval,
    "garbage": setup_garbage,
    "big": setup_big,
}


def build(opts: argparse.Namespace) -> tuple[MCPServer, TasksExtension]:
    ext = TasksExtension(opts)
    server = MCPServer("tasks-fixture", extensions=[ext])

    # The task tools' bodies never run: the extension answers every call to them. They are here
    # so tools/list shows their names and argument schemas.
    def task_only(*_: Any, **__: Any) -> str:
        raise MCPError(code=MISSING_CAPABILITY, message="task-only tool")

    def task_tool(description: str) -> Any:
        return server.tool(description=description, structured_output=False)

    @task_tool("A task that completes, errors or fails after `seconds`.")
    def job(seconds: float = 0.2, outcome: str = "complete", text: str = "done") -> str:
        return task_only()

    @task_tool("A task that asks the user a question (input_required).")
    def ask(message: str = "What is the answer?", give_up_after: float | None = None) -> str:
        return task_only()

    @task_tool("A task that works until cancelled.")
    def forever() -> str:
        return task_only()

    @task_tool("A task whose pollIntervalMs is `ms`.")
    def interval(ms: int) -> str:
        return task_only()

    @task_tool("A task whose tasks/get answers garbage of `kind`.")
    def garbage(kind: str) -> str:
        return task_only()

    @task_tool("A task completing with a text block of `bytes` bytes.")
    def big(bytes: int) -> str:
        return task_only()

    @server.tool(description="An ordinary tool: answers `text`, never a task.")
    def plain(text: str = "plain") -> str:
        return text

    @server.custom_route("/admin/tasks", methods=["GET"])
    async def admin_tasks(request: Request) -> JSONResponse:
        return JSONResponse(ext.snapshot())

    return server, ext


class ReadyServer(uvicorn.Server):
    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if self.should_exit or not self.servers:
            return
        port = self.servers[0].sockets[0].getsockname()[1]
        sys.stdout.write(f"READY {port}\n")
        sys.stdout.flush()


def main() -> None:
    p = argparse.ArgumentParser(prog="tasks")
    p.add_argument("--http", action="store_true", help="serve Streamable HTTP instead of stdio")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--record", metavar="PATH", help="append a JSON line per tasks/* and tools/call")
    p.add_argument("--max-tasks", type=int, default=10000, help="live tasks at most")
    p.add_argument("--poll-ms", type=int, default=50, help="pollIntervalMs of new tasks")
    p.add_argument("--ttl-ms", type=int, default=3_600_000, help="ttlMs of new tasks")
    opts = p.parse_args()
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="tasks %(levelname)s %(name)s: %(message)s"
    )
    server, _ = build(opts)
    if not opts.http:
        server.run("stdio")
        return
    config = uvicorn.Config(
        server.streamable_http_app(host="127.0.0.1"),
        host="127.0.0.1",
        port=opts.port,
        log_config=None,
        timeout_graceful_shutdown=1,
    )
    ReadyServer(config).run()


if __name__ == "__main__":
    main()
