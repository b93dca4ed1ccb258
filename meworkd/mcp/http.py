"""The Streamable HTTP transport: one shared TLS context, the httpx2 client, error bodies kept.

The SDK turns an HTTP error into a JSON-RPC error without status or text ("Server returned an
error response"), so what a failure report and the forgotten-session retry need is recorded
here, from the responses themselves, in an :class:`HttpErrors`.
"""

import functools
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
from mcp.client.streamable_http import streamable_http_client

from meworkd.settings import ServerConfig

__all__ = ["HTTP_CONNECT_TIMEOUT", "HttpErrors", "http_client_for", "open_http"]

HTTP_CONNECT_TIMEOUT = 30.0
HTTP_ERROR_TEXT = 200  # characters of an HTTP error body quoted in a start-up failure
HTTP_ERROR_BODY_MAX = 64 * 1024  # a longer error body is not read for quoting
# The Streamable HTTP session header; a server that no longer knows the session id it carries
# answers 404 (spec, "Session Management").
SESSION_HEADER = "mcp-session-id"


@dataclass(slots=True)
class HttpErrors:
    """What the HTTP error responses of one session said."""

    # The status and (start of the) body of the last error response.
    last: tuple[int, str] | None = None
    # A request that carried the session id got 404: the server forgot the session.
    session_forgotten: bool = False


@functools.cache
def _tls_context() -> ssl.SSLContext:
    # One context for every HTTP session: httpx2 builds a fresh one (CA store included, about
    # 850 KiB) per client otherwise, which made each pooled HTTP session cost ~900 KiB (bench B4).
    return httpx2.create_ssl_context()


def http_client_for(
    config: ServerConfig,
    on_response: Callable[[httpx2.Response], Awaitable[None]] | None = None,
) -> httpx2.AsyncClient:
    # httpx2's default 5 s read timeout would cut long tool calls short with a misleading error.
    read = max(300.0, config.timeout * 2)
    return httpx2.AsyncClient(
        headers=dict(config.headers),
        timeout=httpx2.Timeout(HTTP_CONNECT_TIMEOUT, read=read),
        verify=_tls_context(),
        follow_redirects=False,
        event_hooks={"response": [on_response]} if on_response is not None else None,
    )


@asynccontextmanager
async def open_http(config: ServerConfig, errors: HttpErrors) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's read and write streams to ``config.url``; error responses go into ``errors``."""
    assert config.url is not None

    async def record_error(response: httpx2.Response) -> None:
        if response.status_code < 400:
            return
        text = ""
        size = response.headers.get("content-length", "")
        # Only a body of announced, small size: a chunked one might never end.
        if size.isdigit() and int(size) <= HTTP_ERROR_BODY_MAX:
            try:
                await response.aread()  # cached: the SDK may read the same body again
                # Whole (it is small): cut only after its secrets are out (mcp.errors).
                text = " ".join(response.text.split())
            except httpx2.HTTPError:
                pass
        errors.last = (response.status_code, text)
        if response.status_code == 404 and SESSION_HEADER in response.request.headers:
            errors.session_forgotten = True

    async with (
        http_client_for(config, on_response=record_error) as http,
        streamable_http_client(config.url, http_client=http) as (read, write),
    ):
        yield read, write
