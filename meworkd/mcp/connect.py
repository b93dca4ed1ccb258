"""Connecting: the transport a ServerConfig asks for, opened, and what it leaves to know."""

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from anyio.abc import Process

from meworkd.mcp.direct import DirectCalls
from meworkd.mcp.http import HttpErrors, open_http
from meworkd.mcp.sandbox import SandboxView
from meworkd.mcp.stdio import open_stdio
from meworkd.settings import ServerConfig

__all__ = ["Connected", "open_transport"]


@dataclass(slots=True)
class Connected:
    # What the SDK's ClientSession reads and writes (its ReadStream / WriteStream protocols).
    read: Any = None
    write: Any = None
    process: Process | None = None
    # stdio only: the tools/call requests meworkd writes and answers itself (mcp/direct.py).
    direct: DirectCalls | None = None
    # stdio only: what the server's sandbox lets it see and do (None: not sandboxed).
    sandbox: SandboxView | None = None
    # HTTP only: what the error responses said (start-up failures, forgotten sessions).
    http: HttpErrors | None = None
    # Set when the handshake failed: a server that never started has nothing to shut down
    # gracefully, and the caller is waiting for the failure to be reported.
    abandoned: bool = False


@asynccontextmanager
async def open_transport(
    config: ServerConfig,
    environ: Mapping[str, str],
    *,
    on_stderr: Callable[[str], None],
    on_spawn: Callable[[int], None],
    auth: Any = None,
) -> AsyncIterator[Connected]:
    """Open ``config``'s transport (stdio or Streamable HTTP); closed on exit.

    ``auth``: an HTTP server's OAuth (``httpx2.Auth``, :class:`meworkd.mcp.auth.BearerAuth`).
    """
    connected = Connected()
    if config.type == "stdio":
        async with open_stdio(
            config,
            environ,
            on_stderr=on_stderr,
            on_spawn=on_spawn,
            graceful=lambda: not connected.abandoned,
        ) as (connected.read, connected.write, connected.process):
            connected.direct = connected.read.direct
            connected.sandbox = connected.read.sandbox
            yield connected
    else:
        connected.http = HttpErrors()
        async with open_http(config, connected.http, auth) as (connected.read, connected.write):
            yield connected
