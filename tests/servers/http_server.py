"""Streamable HTTP MCP fixture server, run as a subprocess by the tests.

``python tests/servers/http_server.py --port P [--mode MODE]``

Listens on 127.0.0.1 (``--port 0`` picks a free port) and prints exactly one line ``READY <port>``
to stdout once it accepts requests; every log line goes to stderr. The MCP endpoint is ``/mcp``.

* ``normal``: a lowlevel ``mcp.server.Server`` (both protocol eras) with the tools ``echo {text}``,
  ``slow {seconds}``, ``whoami`` (the Authorization header the request carried, ``<none>`` if
  absent), ``progress {steps, interval}`` and ``forget_sessions`` (the session manager forgets
  every handshake-era session, so the next request with an old ``Mcp-Session-Id`` gets HTTP 404;
  ``POST /admin/forget`` does the same from outside).
* ``legacy``: like ``normal``, but only the handshake era: a request of the 2026-07-28 era
  (``server/discover``, or an ``MCP-Protocol-Version`` header of that era) is refused with HTTP
  400 and the JSON-RPC error a python-sdk 1.x server sends to a request without its session.
* ``modern``: like ``normal``, but only the 2026-07-28 era: ``initialize`` (any request without
  a 2026-07-28 ``MCP-Protocol-Version`` header) is refused with HTTP 400 and ``-32020``, as the
  conformance suite's 2026-07-28 mock does. It also lists ``regional {region}`` (``region`` is
  annotated ``x-mcp-header: Region``; it answers with the ``Mcp-*`` headers it received, as
  JSON), ``bad_header {where}`` (an ``x-mcp-header`` on an object: invalid, so a client must
  leave it out) and the prompt ``greet``.
* ``unauthorized``: like ``normal``, but a POST without an ``Authorization`` header is answered
  with HTTP 401.
* ``modern_login``: like ``modern``, and a POST without an ``Authorization`` header is answered
  with HTTP 401, except ``initialize`` (then refused for its era, as the conformance suite's
  authorization-server-migration server does).
* ``500``: every request is answered with HTTP 500 and the body ``kitchen http: internal failure``.
* ``drop``: like ``normal``, but a POST whose JSON-RPC method is ``tools/call`` gets a 200 SSE
  response start and half an event, then the connection is closed.
* ``hang``: accepts connections and reads requests, never answers.

In every MCP mode ``GET /admin/methods`` answers with the JSON-RPC methods POSTed so far (a JSON
list, in order), so a test can see which requests a client made. The SDK is imported by the MCP
modes only: ``500`` and ``hang`` start in a tenth of the CPU.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import TYPE_CHECKING, Any

import anyio
import uvicorn

if TYPE_CHECKING:
    import mcp.types as types
    from mcp.server import ServerRequestContext
    from starlette.requests import Request
    from starlette.responses import JSONResponse

ASGIApp = Any
FAILURE_BODY = b"kitchen http: internal failure"
log = logging.getLogger("http_server")


class DropConnection(Exception):
    """Raised after the response started: uvicorn then closes the connection."""


HANDSHAKE_ERA = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}
# What a python-sdk 1.x (handshake era) server answers a POST without its session id.
NO_SESSION = {"code": -32600, "message": "Bad Request: Missing session ID"}
# What the conformance suite's 2026-07-28 mock answers a request without the version header.
NO_VERSION = {"code": -32020, "message": "Missing MCP-Protocol-Version header"}
NO_LOGIN = {"code": -32001, "message": "Unauthorized"}
methods_seen: list[str] = []


def build_mcp_app(modern_extras: bool = False) -> ASGIApp:
    import mcp.types as types  # the SDK: a second of CPU, for the MCP modes only
    from mcp import MCPError
    from mcp.server import Server
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    def obj(props: dict[str, Any] | None = None, required: list[str] | None = None) -> dict:
        schema: dict[str, Any] = {"type": "object", "properties": props or {}}
        if required:
            schema["required"] = required
        return schema

    tools = [
        types.Tool(name="echo", input_schema=obj({"text": {"type": "string"}}, ["text"])),
        types.Tool(name="slow", input_schema=obj({"seconds": {"type": "number"}}, ["seconds"])),
        types.Tool(
            name="whoami", description="The Authorization header received", input_schema=obj()
        ),
        types.Tool(
            name="progress",
            input_schema=obj({"steps": {"type": "integer"}, "interval": {"type": "number"}}),
        ),
        types.Tool(name="forget_sessions", description="Forget all sessions", input_schema=obj()),
    ]
    if modern_extras:
        region = {"type": "string", "x-mcp-header": "Region"}
        where = {"type": "object", "x-mcp-header": "Where"}  # only primitives may be mirrored
        tools += [
            types.Tool(name="regional", input_schema=obj({"region": region}, ["region"])),
            types.Tool(name="bad_header", input_schema=obj({"where": where}, ["where"])),
        ]

    def text(s: str, **kw: Any) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=s)], **kw)

    def forget() -> int:
        manager = server.session_manager
        n = len(manager._server_instances)
        manager._server_instances.clear()
        manager._session_owners.clear()
        log.info("forgot %d session(s)", n)
        return n

    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        a = params.arguments or {}
        if params.name == "echo":
            return text(str(a.get("text", "")), _meta={"kitchen/echo": True})
        if params.name == "slow":
            seconds = float(a.get("seconds", 1))
            # A progress notification at the start (only if the caller asked for progress) tells
            # a test that the handler is running, so it can cancel without guessing a delay.
            await ctx.session.report_progress(0, seconds, "sleeping")
            try:
                await anyio.sleep(seconds)
            except anyio.get_cancelled_exc_class():
                sys.stderr.write("kitchen http: slow cancelled\n")
                sys.stderr.flush()
                raise
            return text("slept")
        if params.name == "whoami":
            headers = getattr(ctx.request, "headers", None) or {}
            return text(headers.get("authorization", "<none>"))
        if params.name == "progress":
            steps = int(a.get("steps", 3))
            interval = float(a.get("interval", 0.01))
            for i in range(steps):
                if i:
                    await anyio.sleep(interval)
                await ctx.session.report_progress(i + 1, steps, f"step {i + 1}/{steps}")
            return text("done")
        if params.name == "forget_sessions":
            return text(f"forgot {forget()}")
        if params.name in ("regional", "bad_header"):
            headers = getattr(ctx.request, "headers", None) or {}
            mcp = {k.lower(): v for k, v in headers.items() if k.lower().startswith("mcp-")}
            return text(json.dumps(mcp, sort_keys=True))
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")

    async def forget_route(request: Request) -> JSONResponse:
        return JSONResponse({"forgot": forget()})

    async def methods_route(request: Request) -> JSONResponse:
        return JSONResponse(methods_seen)

    async def list_prompts(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[types.Prompt(name="greet")])

    async def get_prompt(
        ctx: ServerRequestContext, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        hello = types.TextContent(type="text", text="hello")
        return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=hello)])

    prompts: dict[str, Any] = (
        {"on_list_prompts": list_prompts, "on_get_prompt": get_prompt} if modern_extras else {}
    )
    server = Server(
        "kitchen-http",
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        **prompts,
    )
    return server.streamable_http_app(
        host="127.0.0.1",
        custom_starlette_routes=[
            Route("/admin/forget", forget_route, methods=["POST"]),
            Route("/admin/methods", methods_route, methods=["GET"]),
        ],
    )


async def app_500(scope: dict, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send(
        {
            "type": "http.response.start",
            "status": 500,
            "headers": [
                (b"content-type", b"text/plain"),
                (b"content-length", b"%d" % len(FAILURE_BODY)),
            ],
        }
    )
    await send({"type": "http.response.body", "body": FAILURE_BODY})


async def app_hang(scope: dict, receive: Any, send: Any) -> None:
    if scope["type"] == "http":
        await anyio.sleep_forever()


async def _read_body(receive: Any) -> tuple[list[dict], bytes]:
    buffered: list[dict] = []
    body = b""
    while True:
        message = await receive()
        buffered.append(message)
        body += message.get("body", b"")
        if message["type"] != "http.request" or not message.get("more_body"):
            return buffered, body


def era_only(inner: ASGIApp, era: str | None) -> ASGIApp:
    """``inner``, recording each POSTed method; with ``era``, refusing the other era's requests."""

    async def app(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/mcp":
            await inner(scope, receive, send)
            return
        buffered, body = await _read_body(receive)
        try:
            message = json.loads(body)
        except ValueError:
            message = None
        message = message if isinstance(message, dict) else {}
        method = message.get("method")
        if isinstance(method, str):
            methods_seen.append(method)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        version = headers.get("mcp-protocol-version")
        modern = method == "server/discover" or (
            version is not None and version not in HANDSHAKE_ERA
        )
        # modern_login: a 2026-07-28 server that lets initialize past its login check (then
        # refuses it for the era) and wants a login for everything else, discover included.
        login_exempt = era == "modern_login" and method == "initialize"
        wants_login = era in ("unauthorized", "modern_login") and not login_exempt
        if wants_login and "authorization" not in headers:
            await _refuse(send, {"jsonrpc": "2.0", "id": None, "error": NO_LOGIN}, status=401)
            return
        if era == "legacy" and modern:
            await _refuse(send, {"jsonrpc": "2.0", "id": "server-error", "error": NO_SESSION})
            return
        if era in ("modern", "modern_login") and not modern:
            if "id" not in message:
                await send({"type": "http.response.start", "status": 202, "headers": []})
                await send({"type": "http.response.body", "body": b""})
                return
            await _refuse(send, {"jsonrpc": "2.0", "id": message["id"], "error": NO_VERSION})
            return

        async def replay() -> dict:
            if buffered:
                return buffered.pop(0)
            return await receive()

        await inner(scope, replay, send)

    return app


async def _refuse(send: Any, reply: dict, status: int = 400) -> None:
    body = json.dumps(reply).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def dropping(inner: ASGIApp) -> ASGIApp:
    async def app(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await inner(scope, receive, send)
            return
        buffered, body = await _read_body(receive)
        try:
            method = json.loads(body).get("method")
        except (ValueError, AttributeError):
            method = None
        if method == "tools/call":
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")],
                }
            )
            await send(
                {
                    "type": "http.response.body",
                    "body": b'event: message\r\ndata: {"jsonrpc": "2.0", "id": ',
                    "more_body": True,
                }
            )
            raise DropConnection("kitchen http: dropping the connection mid-response")

        async def replay() -> dict:
            if buffered:
                return buffered.pop(0)
            return await receive()

        await inner(scope, replay, send)

    return app


class ReadyServer(uvicorn.Server):
    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if self.should_exit or not self.servers:
            return
        port = self.servers[0].sockets[0].getsockname()[1]
        sys.stdout.write(f"READY {port}\n")
        sys.stdout.flush()


def main() -> None:
    p = argparse.ArgumentParser(prog="http_server")
    p.add_argument("--port", type=int, default=0)
    modes = ["normal", "legacy", "modern", "modern_login", "unauthorized", "500", "drop", "hang"]
    p.add_argument("--mode", choices=modes, default="normal")
    args = p.parse_args()
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
        format="http_server %(levelname)s %(name)s: %(message)s",
    )
    app: ASGIApp
    lifespan = "on"
    if args.mode == "500":
        app, lifespan = app_500, "off"
    elif args.mode == "hang":
        app, lifespan = app_hang, "off"
    elif args.mode == "drop":
        app = dropping(era_only(build_mcp_app(), None))
    elif args.mode in ("legacy", "modern", "modern_login", "unauthorized"):
        app = era_only(build_mcp_app(modern_extras=args.mode == "modern"), args.mode)
    else:
        app = era_only(build_mcp_app(), None)
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=args.port,
        lifespan=lifespan,
        log_config=None,
        timeout_graceful_shutdown=1,
    )
    ReadyServer(config).run()


if __name__ == "__main__":
    main()
