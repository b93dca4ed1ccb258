"""The benchmarks' MCP server: lowlevel ``mcp.server.Server`` (mcp 2.3) with an ``echo`` tool.

``python bench/servers/minimal.py [--tools N] [--http --port P]``

* ``echo {text}`` answers the text back; ``--tools N`` adds trivial tools ``t0..tN-1`` (for the
  turn-start benchmarks, ``--tools 19`` gives 20 tools in all).
* stdio by default; ``--http`` serves Streamable HTTP on 127.0.0.1 (``--port 0`` picks a free port,
  then one line ``READY <port>`` goes to stdout), endpoint ``/mcp``, no access log.

Deliberately does nothing else, so what is measured is the host, not the server.
"""

from __future__ import annotations

import argparse
import logging
import sys


def build_server(n_tools: int):  # type: ignore[no-untyped-def]
    import mcp.types as types
    from mcp.server import Server

    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    tools = [types.Tool(name="echo", description="Echo the text back", input_schema=schema)]
    tools += [
        types.Tool(name=f"t{i}", description=f"trivial tool {i}", input_schema={"type": "object"})
        for i in range(n_tools)
    ]
    listing = types.ListToolsResult(tools=tools)

    async def list_tools(ctx, params):  # type: ignore[no-untyped-def]
        return listing

    async def call_tool(ctx, params):  # type: ignore[no-untyped-def]
        text = str((params.arguments or {}).get("text", ""))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server(
        "bench-minimal", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool
    )


def serve_stdio(n_tools: int) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(n_tools)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


def serve_http(n_tools: int, port: int) -> None:
    import uvicorn

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    app = build_server(n_tools).streamable_http_app(host="127.0.0.1")

    class ReadyServer(uvicorn.Server):
        async def startup(self, sockets=None):  # type: ignore[no-untyped-def]
            await super().startup(sockets)
            if self.servers:
                bound = self.servers[0].sockets[0].getsockname()[1]
                sys.stdout.write(f"READY {bound}\n")
                sys.stdout.flush()

    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_config=None,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=1,
        backlog=2048,
    )
    ReadyServer(config).run()


def main() -> None:
    p = argparse.ArgumentParser(prog="minimal")
    p.add_argument("--tools", type=int, default=0, help="extra trivial tools t0..tN-1")
    p.add_argument("--http", action="store_true", help="Streamable HTTP instead of stdio")
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args()
    if args.http:
        serve_http(args.tools, args.port)
    else:
        serve_stdio(args.tools)


if __name__ == "__main__":
    main()
