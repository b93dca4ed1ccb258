"""The suite's stdlib-only stdio MCP server, for tests that need "a server", not the SDK's.

``python tests/servers/fake.py [options]`` takes kitchen.py's options and serves the same
tools, prompts and resources in the handshake era (``initialize``; ``server/discover`` and other
unknown requests get -32601), as newline-delimited JSON-RPC on stdin/stdout. It starts in a
few milliseconds where kitchen.py spends over a second of CPU importing the SDK; the SDK-based
kitchen.py stays for the tests about the SDK's behaviour (the 2026-07-28 era, its validation).
The calls that wait (``slow``, ``progress``) run on threads, never holding up the next request;
``notifications/cancelled`` ends a ``slow`` call without an answer, as the SDK does.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from typing import Any

import kitchen  # the stdlib part only: options, stderr helpers, the grandchild (same folder)

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
WAITING_TOOLS = frozenset({"slow", "progress", "gated"})  # answered on threads: they take a while
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602


def obj(props: dict[str, Any] | None = None, required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"properties": props or {}, "type": "object"}
    if required:
        schema["required"] = required
    return schema


def tool(name: str, description: str, schema: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"description": description, "inputSchema": schema, "name": name, **extra}


NUM = {"type": "number"}
TOOLS: list[dict[str, Any]] = [
    tool("echo", "Echo the text back", obj({"text": {"type": "string"}}, ["text"])),
    tool(
        "add",
        "Add two numbers",
        obj({"a": NUM, "b": NUM}, ["a", "b"]),
        outputSchema=obj({"total": NUM}, ["total"]),
    ),
    tool(
        "bad_output",
        "Returns structured content that violates its outputSchema",
        obj(),
        outputSchema=obj({"x": {"type": "integer"}}, ["x"]),
    ),
    tool("slow", "Sleep for a while", obj({"seconds": NUM}, ["seconds"])),
    tool(
        "progress",
        "Send progress notifications",
        obj({"steps": {"type": "integer"}, "interval": NUM}),
    ),
    tool("die", "Exit the process mid-call", obj()),
    tool("big", "Return a text of the given size", obj({"bytes": {"type": "integer"}}, ["bytes"])),
    tool("flood_stderr", "Write bytes to stderr", obj({"bytes": {"type": "integer"}}, ["bytes"])),
    tool("error", "Return isError: true", obj()),
    tool("rpc_error", "Answer a JSON-RPC error", obj()),
    *(
        tool(
            name,
            f"requiresUserInteraction = {value!r}",
            obj(),
            _meta={kitchen.INTERACTIVE_KEY: value},
        )
        for name, value in kitchen.INTERACTIVE_VALUES.items()
    ),
    tool(
        "add_tool",
        "Add a tool at runtime and announce list_changed",
        obj({"name": {"type": "string"}}, ["name"]),
    ),
    tool("spawn_grandchild", "Fork a SIGTERM-ignoring grandchild, return its pid", obj()),
]
PROMPTS = [
    {
        "arguments": [{"description": "who", "name": "name", "required": True}],
        "description": "Greet someone",
        "name": "greet",
    }
]
RESOURCES = [{"description": "hi", "mimeType": "text/plain", "name": "hello", "uri": "mem://hello"}]
TEMPLATES = [{"mimeType": "text/plain", "name": "item", "uriTemplate": "mem://item/{id}"}]


class Failure(Exception):
    """A JSON-RPC error answer."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def text(s: str, **extra: Any) -> dict[str, Any]:
    return {"content": [{"text": s, "type": "text"}], "isError": False, **extra}


class Server:
    def __init__(self, args: Any) -> None:
        self.args = args
        self.tools = list(TOOLS) + [
            tool(f"t{i}", f"trivial tool {i}", {"type": "object"}) for i in range(args.tools)
        ]
        self.echo_args = {f"t{i}" for i in range(args.tools)}
        if args.gate:  # a call that ends when the test says, not after a time
            self.tools.append(tool("gated", "Answer what the gate FIFO is sent", obj()))
        self.write_lock = threading.Lock()
        self.cancelled: dict[Any, threading.Event] = {}

    def send(self, message: dict[str, Any]) -> None:
        line = (json.dumps({"jsonrpc": "2.0", **message}, separators=(",", ":")) + "\n").encode()
        with self.write_lock:
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()

    def page(self, items: list[Any], params: dict[str, Any], key: str) -> dict[str, Any]:
        size = self.args.page_size
        if size <= 0:
            return {key: list(items)}
        cursor = params.get("cursor")
        try:
            start = int(cursor) if cursor else 0
        except ValueError:
            raise Failure(INVALID_PARAMS, f"invalid cursor {cursor!r}") from None
        end = start + size
        out: dict[str, Any] = {key: items[start:end]}
        if end < len(items):
            out["nextCursor"] = str(end)
        return out

    def serve(self) -> None:
        for raw in sys.stdin.buffer:
            try:
                message = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            method, mid = message.get("method"), message.get("id")
            params = message.get("params") or {}
            if method == "notifications/cancelled":
                event = self.cancelled.get(params.get("requestId"))
                if event is not None:
                    event.set()
            if mid is None or method is None:
                continue  # a notification, or a reply to nothing we asked
            self.cancelled[mid] = threading.Event()
            if method == "tools/call" and params.get("name") in WAITING_TOOLS:
                worker = threading.Thread(target=self.answer, args=(mid, method, params))
                worker.daemon = True
                worker.start()
            else:
                self.answer(mid, method, params)  # in order; signals work on the main thread

    def answer(self, mid: Any, method: str, params: dict[str, Any]) -> None:
        try:
            result = self.result(mid, method, params)
        except Failure as exc:
            error: dict[str, Any] = {"code": exc.code, "message": exc.message}
            if exc.data is not None:
                error["data"] = exc.data
            self.send({"id": mid, "error": error})
            return
        finally:
            cancelled = self.cancelled.pop(mid, None)
        if result is not None and not (cancelled is not None and cancelled.is_set()):
            self.send({"id": mid, "result": result})

    def result(self, mid: Any, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        if method == "initialize":
            asked = params.get("protocolVersion")
            return {
                "capabilities": {
                    "prompts": {"listChanged": False},
                    "resources": {"listChanged": False, "subscribe": False},
                    "tools": {"listChanged": True},
                },
                "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
                "serverInfo": {"name": self.args.name, "version": self.args.version},
            }
        if method == "ping":
            return {}
        if method == "tools/list":
            return self.page(self.tools, params, "tools")
        if method == "tools/call":
            return self.call(mid, params)
        if method == "prompts/list":
            return self.page(PROMPTS, params, "prompts")
        if method == "prompts/get":
            if params.get("name") != "greet":
                raise Failure(INVALID_PARAMS, f"Unknown prompt: {params.get('name')}")
            who = (params.get("arguments") or {}).get("name", "world")
            return {
                "description": "A greeting",
                "messages": [
                    {"content": {"text": f"Hello, {who}!", "type": "text"}, "role": "user"}
                ],
            }
        if method == "resources/list":
            return self.page(RESOURCES, params, "resources")
        if method == "resources/templates/list":
            return self.page(TEMPLATES, params, "resourceTemplates")
        if method == "resources/read":
            return self.read(str(params.get("uri")))
        raise Failure(METHOD_NOT_FOUND, "Method not found", method)

    def read(self, uri: str) -> dict[str, Any]:
        if uri == "mem://hello":
            body = "hello from kitchen"
        elif uri.startswith("mem://item/"):
            body = f"item {uri.removeprefix('mem://item/')}"
        else:
            raise Failure(INVALID_PARAMS, f"Unknown resource: {uri}")
        return {"contents": [{"mimeType": "text/plain", "text": body, "uri": uri}]}

    def progress(self, params: dict[str, Any], done: float, total: float, message: str) -> None:
        token = (params.get("_meta") or {}).get("progressToken")
        if token is not None:
            self.send(
                {
                    "method": "notifications/progress",
                    "params": {
                        "message": message,
                        "progress": done,
                        "progressToken": token,
                        "total": total,
                    },
                }
            )

    def call(self, mid: Any, params: dict[str, Any]) -> dict[str, Any] | None:
        name = params.get("name")
        a = params.get("arguments") or {}
        if trace := (params.get("_meta") or {}).get("traceparent"):
            kitchen.err(f"kitchen: {name} traceparent {trace}")  # the trace context it came with
        try:
            return self.tool(mid, name, a, params)
        except (KeyError, TypeError, ValueError) as exc:
            raise Failure(0, str(exc)) from None

    def tool(self, mid: Any, name: Any, a: dict[str, Any], params: dict[str, Any]) -> Any:
        if name == "echo":
            return {
                "_meta": {"kitchen/echo": True},
                "content": [
                    {
                        "_meta": {"kitchen/block": True},
                        "text": str(a.get("text", "")),
                        "type": "text",
                    }
                ],
                "isError": False,
            }
        if name == "add":
            total = a["a"] + a["b"]
            return text(json.dumps({"total": total}), structuredContent={"total": total})
        if name == "bad_output":
            return text('{"x": "not-an-int"}', structuredContent={"x": "not-an-int"})
        if name == "slow":
            seconds = float(a.get("seconds", 1))
            self.progress(params, 0, seconds, "sleeping")
            if self.cancelled[mid].wait(seconds):
                kitchen.err("kitchen: slow cancelled")
                return None
            return text("slept")
        if name == "progress":
            steps = int(a.get("steps", 3))
            interval = float(a.get("interval", 0.01))
            for i in range(steps):
                if i and self.cancelled[mid].wait(interval):
                    return None
                self.progress(params, i + 1, steps, a.get("message") or f"step {i + 1}/{steps}")
            return text("done")
        if name == "gated":
            with open(self.args.gate, encoding="utf-8") as gate:  # blocks until a writer opens it
                return text(gate.read().strip())
        if name == "die":
            kitchen.err("kitchen: dying")
            os._exit(3)
        if name == "big":
            return text("x" * int(a.get("bytes", 0)))
        if name == "flood_stderr":
            kitchen.write_stderr_fully(kitchen.flood_bytes(int(a.get("bytes", 0))))
            return text("flooded")
        if name == "error":
            return text("kitchen: this tool always fails", isError=True)
        if name == "rpc_error":
            raise Failure(kitchen.RPC_ERROR_CODE, "kitchen: rpc_error requested", {"kitchen": True})
        if name in kitchen.INTERACTIVE_VALUES:
            return text(f"{name} ok")
        if name == "add_tool":
            new = str(a["name"])
            if all(t["name"] != new for t in self.tools):
                self.tools.append(tool(new, "added at runtime", {"type": "object"}))
                self.echo_args.add(new)
            self.send({"method": "notifications/tools/list_changed"})
            return text(f"added {new}")
        if name == "spawn_grandchild":
            return text(str(kitchen.spawn_grandchild()))
        if name in self.echo_args:
            return text(json.dumps(a, sort_keys=True))
        raise Failure(INVALID_PARAMS, f"Unknown tool: {name}")


def main() -> None:
    args = kitchen.parse_args()
    kitchen.start_up(args)
    Server(args).serve()
    if args.ignore_sigterm:
        with contextlib.suppress(OSError):  # the host that read stderr may be gone (SIGKILL)
            kitchen.err("kitchen: stdin closed, staying alive")
        kitchen.sleep_forever()


if __name__ == "__main__":
    main()
