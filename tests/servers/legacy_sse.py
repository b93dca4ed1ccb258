"""An old HTTP+SSE MCP server (protocol 2024-11-05) as far as a client's first requests see it.

``python tests/servers/legacy_sse.py --port P`` listens on 127.0.0.1 (``--port 0`` picks a free
port) and prints ``READY <port>`` once it accepts requests.

* ``GET /sse``: the SSE stream, opening with the ``endpoint`` event that says where to POST
  messages; ``POST /sse`` gets 405 (the route takes GET only), as the SDK's old SseServerTransport
  apps answer a Streamable HTTP client.
* ``POST /events``: answers any POST with that same stream start, so the server is recognised
  by what it says even at an address that does not end in ``/sse``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

ENDPOINT_EVENT = b"event: endpoint\r\ndata: /messages/?session_id=0123456789abcdef\r\n\r\n"


async def _stream(keep_open: bool) -> AsyncIterator[bytes]:
    yield ENDPOINT_EVENT
    if keep_open:
        await anyio.sleep_forever()


async def sse(_request: Request) -> Response:
    return StreamingResponse(_stream(True), media_type="text/event-stream")


async def events(_request: Request) -> Response:
    return StreamingResponse(_stream(False), media_type="text/event-stream")


app = Starlette(
    routes=[Route("/sse", sse, methods=["GET"]), Route("/events", events, methods=["POST"])]
)


class ReadyServer(uvicorn.Server):
    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if self.should_exit or not self.servers:
            return
        sys.stdout.write(f"READY {self.servers[0].sockets[0].getsockname()[1]}\n")
        sys.stdout.flush()


def main() -> None:
    p = argparse.ArgumentParser(prog="legacy_sse")
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=args.port,
        lifespan="off",
        log_config=None,
        timeout_graceful_shutdown=1,
    )
    ReadyServer(config).run()


if __name__ == "__main__":
    main()
