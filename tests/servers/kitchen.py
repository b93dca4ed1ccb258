"""Kitchen-sink stdio MCP server for the test suite (lowlevel ``mcp.server.Server``, mcp 2.3).

Run as ``python tests/servers/kitchen.py [options]``; see ``--help``. Start-up options that
misbehave (``--exit-at-start``, ``--hang-initialize``, ...) are handled with the standard library
only, before the SDK is imported, so they take effect fast.

Both protocol eras are served: handshake era (``initialize``) and 2026-07-28 (``server/discover``).
``add_tool`` announces the change with ``notifications/tools/list_changed`` on a handshake-era
session and through the ``subscriptions/listen`` bus on a 2026-07-28 session.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

GRANDCHILD_CODE = (
    "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(1000)\n"
)
INTERACTIVE_KEY = "anthropic/requiresUserInteraction"
INTERACTIVE_VALUES: dict[str, Any] = {
    "interactive_true": True,
    "interactive_false": False,
    "interactive_string": "true",
    "interactive_number": 1,
    "interactive_object": {"x": 1},
}
RPC_ERROR_CODE = -32099
FLOOD_CHUNK = 64 * 1024
FLOOD_LINE = b"kitchen flood " + b"." * 85 + b"\n"  # 100 bytes


def err(line: str) -> None:
    """Write one line to stderr (unbuffered enough for tests that read it line by line)."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def sleep_forever() -> None:
    while True:
        time.sleep(3600)


def drain_stdin() -> None:
    while sys.stdin.buffer.read1(65536):
        pass


def spawn_grandchild() -> int:
    """Start a SIGTERM-ignoring sleeper in this process group and return its pid.

    SIG_IGN is inherited across fork+exec, so the grandchild ignores SIGTERM from its very first
    instruction (no race with a test that signals it right away). Its stdin/stdout are
    /dev/null; it inherits stderr, like a real helper process would.
    """
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", GRANDCHILD_CODE],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
    finally:
        signal.signal(signal.SIGTERM, previous)
    return proc.pid


def flood_bytes(n: int) -> bytes:
    """Exactly ``n`` bytes of ~100-character lines, ending with a newline."""
    if n <= 0:
        return b""
    data = (FLOOD_LINE * (n // len(FLOOD_LINE) + 1))[:n]
    return data[:-1] + b"\n"


def write_stderr_fully(data: bytes) -> None:
    for start in range(0, len(data), FLOOD_CHUNK):
        view = memoryview(data[start : start + FLOOD_CHUNK])
        while view:
            written = os.write(2, view)
            view = view[written:]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="kitchen", description=__doc__)
    p.add_argument("--name", default="kitchen", help="serverInfo name")
    p.add_argument("--version", default="1.0.0", help="serverInfo version")
    p.add_argument("--tools", type=int, default=0, metavar="N", help="add trivial tools t0..tN-1")
    p.add_argument(
        "--gate", metavar="FIFO", help="fake.py: a tool 'gated' that answers what FIFO is sent"
    )
    p.add_argument(
        "--ttl-ms",
        type=int,
        default=None,
        metavar="MS",
        help="tools/list results say they stay fresh this long; each tools/list is logged",
    )
    p.add_argument("--page-size", type=int, default=0, metavar="K", help="paginate list results")
    p.add_argument("--exit-at-start", type=int, default=None, metavar="CODE")
    p.add_argument("--hang-initialize", action="store_true")
    p.add_argument("--ignore-sigterm", action="store_true")
    p.add_argument("--grandchild", action="store_true")
    p.add_argument("--stdout-junk", action="store_true")
    p.add_argument("--stderr-lines", type=int, default=0, metavar="N")
    return p.parse_args(argv)


def start_up(args: argparse.Namespace) -> None:
    """What the start-up options do before serving (shared with the stdlib-only fake.py)."""
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.exit_at_start is not None:
        err("kitchen: fatal: cannot start")
        sys.exit(args.exit_at_start)
    for i in range(args.stderr_lines):
        err(f"kitchen: stderr line {i}")
    if args.stdout_junk:
        sys.stdout.write("hello from kitchen\n")
        sys.stdout.flush()
    if args.grandchild:
        err(f"kitchen: grandchild pid {spawn_grandchild()}")
    if args.hang_initialize:
        # Drain stdin (so the writer never blocks) but never answer; ignore EOF.
        threading.Thread(target=drain_stdin, daemon=True).start()
        sleep_forever()


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    start_up(args)
    import anyio

    anyio.run(serve, args)
    if args.ignore_sigterm:
        err("kitchen: stdin closed, staying alive")
        sleep_forever()


async def serve(args: argparse.Namespace) -> None:
    import anyio
    import mcp.types as types
    from mcp import MCPError
    from mcp.server import NotificationOptions, Server, ServerRequestContext
    from mcp.server.stdio import stdio_server
    from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    def obj(
        props: dict[str, Any] | None = None, required: list[str] | None = None
    ) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object", "properties": props or {}}
        if required:
            schema["required"] = required
        return schema

    num = {"type": "number"}
    tools: list[types.Tool] = [
        types.Tool(
            name="echo",
            description="Echo the text back",
            input_schema=obj({"text": {"type": "string"}}, ["text"]),
        ),
        types.Tool(
            name="add",
            description="Add two numbers",
            input_schema=obj({"a": num, "b": num}, ["a", "b"]),
            output_schema=obj({"total": num}, ["total"]),
        ),
        types.Tool(
            name="bad_output",
            description="Returns structured content that violates its outputSchema",
            input_schema=obj(),
            output_schema=obj({"x": {"type": "integer"}}, ["x"]),
        ),
        types.Tool(
            name="slow",
            description="Sleep for a while",
            input_schema=obj({"seconds": num}, ["seconds"]),
        ),
        types.Tool(
            name="progress",
            description="Send progress notifications",
            input_schema=obj({"steps": {"type": "integer"}, "interval": num}),
        ),
        types.Tool(name="die", description="Exit the process mid-call", input_schema=obj()),
        types.Tool(
            name="big",
            description="Return a text of the given size",
            input_schema=obj({"bytes": {"type": "integer"}}, ["bytes"]),
        ),
        types.Tool(
            name="flood_stderr",
            description="Write bytes to stderr",
            input_schema=obj({"bytes": {"type": "integer"}}, ["bytes"]),
        ),
        types.Tool(name="error", description="Return isError: true", input_schema=obj()),
        types.Tool(name="rpc_error", description="Answer a JSON-RPC error", input_schema=obj()),
        *(
            types.Tool(
                name=name,
                description=f"requiresUserInteraction = {value!r}",
                input_schema=obj(),
                _meta={INTERACTIVE_KEY: value},
            )
            for name, value in INTERACTIVE_VALUES.items()
        ),
        types.Tool(
            name="add_tool",
            description="Add a tool at runtime and announce list_changed",
            input_schema=obj({"name": {"type": "string"}}, ["name"]),
        ),
        types.Tool(
            name="spawn_grandchild",
            description="Fork a SIGTERM-ignoring grandchild, return its pid",
            input_schema=obj(),
        ),
    ]
    echo_args_tools: set[str] = set()
    for i in range(args.tools):
        tools.append(
            types.Tool(
                name=f"t{i}", description=f"trivial tool {i}", input_schema={"type": "object"}
            )
        )
        echo_args_tools.add(f"t{i}")

    bus = InMemorySubscriptionBus()

    def page(
        items: list[Any], params: types.PaginatedRequestParams | None
    ) -> tuple[list[Any], str | None]:
        if args.page_size <= 0:
            return list(items), None
        cursor = params.cursor if params else None
        try:
            start = int(cursor) if cursor else 0
        except ValueError:
            raise MCPError(
                code=types.INVALID_PARAMS, message=f"invalid cursor {cursor!r}"
            ) from None
        end = start + args.page_size
        return items[start:end], (str(end) if end < len(items) else None)

    def text(s: str, **kw: Any) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=s)], **kw)

    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        items, nxt = page(tools, params)
        if args.ttl_ms is not None:
            err("kitchen: tools/list")  # what a test counts: how often it was asked
        return types.ListToolsResult(tools=items, next_cursor=nxt, ttl_ms=args.ttl_ms or 0)

    async def call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name = params.name
        a = params.arguments or {}
        if name == "echo":
            return types.CallToolResult(
                content=[
                    types.TextContent(
                        type="text", text=str(a.get("text", "")), _meta={"kitchen/block": True}
                    )
                ],
                _meta={"kitchen/echo": True},
            )
        if name == "add":
            total = a["a"] + a["b"]
            return text(json.dumps({"total": total}), structured_content={"total": total})
        if name == "bad_output":
            return text('{"x": "not-an-int"}', structured_content={"x": "not-an-int"})
        if name == "slow":
            seconds = float(a.get("seconds", 1))
            # A progress notification at the start (only if the caller asked for progress) tells
            # a test that the handler is running, so it can cancel without guessing a delay.
            await ctx.session.report_progress(0, seconds, "sleeping")
            try:
                await anyio.sleep(seconds)
            except anyio.get_cancelled_exc_class():
                err("kitchen: slow cancelled")
                raise
            return text("slept")
        if name == "progress":
            steps = int(a.get("steps", 3))
            interval = float(a.get("interval", 0.01))
            for i in range(steps):
                if i:
                    await anyio.sleep(interval)
                message = a.get("message") or f"step {i + 1}/{steps}"
                await ctx.session.report_progress(i + 1, steps, message)
            return text("done")
        if name == "die":
            err("kitchen: dying")
            os._exit(3)
        if name == "big":
            return text("x" * int(a.get("bytes", 0)))
        if name == "flood_stderr":
            data = flood_bytes(int(a.get("bytes", 0)))
            await anyio.to_thread.run_sync(write_stderr_fully, data)
            return text("flooded")
        if name == "error":
            return text("kitchen: this tool always fails", is_error=True)
        if name == "rpc_error":
            raise MCPError(
                code=RPC_ERROR_CODE, message="kitchen: rpc_error requested", data={"kitchen": True}
            )
        if name in INTERACTIVE_VALUES:
            return text(f"{name} ok")
        if name == "add_tool":
            new = str(a["name"])
            if all(t.name != new for t in tools):
                tools.append(
                    types.Tool(
                        name=new, description="added at runtime", input_schema={"type": "object"}
                    )
                )
                echo_args_tools.add(new)
            if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                await bus.publish(ToolsListChanged())
            else:
                await ctx.session.send_tool_list_changed()
            return text(f"added {new}")
        if name == "spawn_grandchild":
            return text(str(spawn_grandchild()))
        if name in echo_args_tools:
            return text(json.dumps(a, sort_keys=True))
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}")

    prompts = [
        types.Prompt(
            name="greet",
            description="Greet someone",
            arguments=[types.PromptArgument(name="name", description="who", required=True)],
        )
    ]

    async def list_prompts(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        items, nxt = page(prompts, params)
        return types.ListPromptsResult(prompts=items, next_cursor=nxt)

    async def get_prompt(
        ctx: ServerRequestContext, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name != "greet":
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")
        who = (params.arguments or {}).get("name", "world")
        return types.GetPromptResult(
            description="A greeting",
            messages=[
                types.PromptMessage(
                    role="user", content=types.TextContent(type="text", text=f"Hello, {who}!")
                )
            ],
        )

    resources = [
        types.Resource(uri="mem://hello", name="hello", mime_type="text/plain", description="hi")
    ]
    templates = [
        types.ResourceTemplate(uri_template="mem://item/{id}", name="item", mime_type="text/plain")
    ]

    async def list_resources(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        items, nxt = page(resources, params)
        return types.ListResourcesResult(resources=items, next_cursor=nxt)

    async def list_resource_templates(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        items, nxt = page(templates, params)
        return types.ListResourceTemplatesResult(resource_templates=items, next_cursor=nxt)

    async def read_resource(
        ctx: ServerRequestContext, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri == "mem://hello":
            body = "hello from kitchen"
        elif uri.startswith("mem://item/"):
            body = f"item {uri.removeprefix('mem://item/')}"
        else:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown resource: {uri}")
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, text=body, mime_type="text/plain")]
        )

    server = Server(
        args.name,
        version=args.version,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
        on_subscriptions_listen=ListenHandler(bus),
    )
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


if __name__ == "__main__":
    main()
