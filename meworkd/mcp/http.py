"""The Streamable HTTP transport: one shared TLS context, the httpx2 client, error bodies kept.

The SDK turns an HTTP error into a JSON-RPC error without status or text ("Server returned an
error response"), so what a failure report and the forgotten-session retry need is recorded
here, from the responses themselves, in an :class:`HttpErrors`.

Every response body is bounded while it is read (:class:`_CappedBody`): a JSON reply or one SSE
event past its budget (:mod:`meworkd.mcp.budget`) is not read further, and the request it
answers gets meworkd's refusal in its place. The SDK reads a JSON body whole (``aread``), so
this is the only place where a huge reply can be stopped before it is held. Replies are asked
for uncompressed, and a compressed one is refused: its size on the wire would say nothing of
its size in memory.
"""

import functools
import re
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
from mcp.client.streamable_http import streamable_http_client

from meworkd.mcp.budget import (
    MESSAGE_LIMIT,
    REPLY_BUDGET,
    ReplyBudget,
    refusal_body,
    request_id_of,
)
from meworkd.settings import ServerConfig

__all__ = ["HTTP_CONNECT_TIMEOUT", "HttpErrors", "http_client_for", "open_http", "tls_context"]

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
    # The server answered as an old HTTP+SSE one: 405 to a POST (its stream endpoint takes GET
    # only), or an SSE stream announcing an ``endpoint`` to post messages to.
    legacy_sse: bool = False

    @property
    def unauthorized(self) -> bool:
        """The last error response was HTTP 401: a login is missing (or no longer valid)."""
        return self.last is not None and self.last[0] == 401


@functools.cache
def tls_context() -> ssl.SSLContext:
    # One context for every HTTP session: httpx2 builds a fresh one (CA store included, about
    # 850 KiB) per client otherwise, which made each pooled HTTP session cost ~900 KiB (bench B4).
    return httpx2.create_ssl_context()


def http_client_for(
    config: ServerConfig,
    on_response: Callable[[httpx2.Response], Awaitable[None]] | None = None,
    auth: httpx2.Auth | None = None,
) -> httpx2.AsyncClient:
    # httpx2's default 5 s read timeout would cut long tool calls short with a misleading error.
    read = max(300.0, config.timeout * 2)
    return httpx2.AsyncClient(
        headers={"accept-encoding": "identity", **config.headers},
        timeout=httpx2.Timeout(HTTP_CONNECT_TIMEOUT, read=read),
        verify=tls_context(),
        follow_redirects=False,
        auth=auth,
        event_hooks={"response": [on_response]} if on_response is not None else None,
    )


@asynccontextmanager
async def open_http(
    config: ServerConfig, errors: HttpErrors, auth: httpx2.Auth | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's read and write streams to ``config.url``; error responses go into ``errors``.

    ``auth``: the server's OAuth (:class:`meworkd.mcp.auth.BearerAuth`), shared login state.
    """
    assert config.url is not None

    async def record_error(response: httpx2.Response) -> None:
        _cap_body(response, errors)
        if response.status_code == 405 and response.request.method == "POST":
            errors.legacy_sse = True
        if response.status_code < 400:
            if response.request.method == "POST":
                errors.last = None  # answered: an earlier error says nothing about what follows
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
        http_client_for(config, on_response=record_error, auth=auth) as http,
        streamable_http_client(config.url, http_client=http, max_sse_event_size=MESSAGE_LIMIT) as (
            read,
            write,
        ),
    ):
        yield read, write


def _cap_body(response: httpx2.Response, errors: HttpErrors) -> None:
    """Bound ``response``'s body by the budget of the request it answers (see the module)."""
    budget = REPLY_BUDGET.get()
    request = response.request
    request_id = None
    if request.method == "POST":
        try:
            request_id = request_id_of(request.content)
        except httpx2.RequestNotRead:
            pass
    kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    compressed = response.headers.get("content-encoding", "identity").lower() != "identity"
    if compressed:
        del response.headers["content-encoding"]  # what is read instead is meworkd's, plain
    assert isinstance(response.stream, httpx2.AsyncByteStream)  # (an AsyncClient's response)
    response.stream = _CappedBody(
        response.stream,
        budget,
        request_id,
        sse=kind == "text/event-stream",
        refuse=compressed,
        errors=errors,
    )


# An SSE event ends at an empty line: a line end (CRLF, LF or CR) right after another.
_EVENT_ENDS = (b"\n\n", b"\n\r", b"\r\r")
# The first event of an old HTTP+SSE server's stream: where to POST messages.
_LEGACY_ENDPOINT_EVENT = re.compile(rb"(?:^|[\r\n])event: ?endpoint\r?[\r\n]")


class _CappedBody(httpx2.AsyncByteStream):
    """A response body passed on while it stays within its budget.

    A JSON body is held until it is complete (at most the budget, and the SDK would hold it
    anyway); an SSE body is passed on an event at a time. Past the budget the rest is not read:
    the answer becomes meworkd's refusal for the request's id (a JSON error, or an SSE event
    carrying it) and the budget is marked; with no id to answer, the stream ends in an error.
    """

    def __init__(
        self,
        inner: httpx2.AsyncByteStream,
        budget: ReplyBudget | None,
        request_id: int | str | None,
        *,
        sse: bool,
        refuse: bool,
        errors: HttpErrors,
    ) -> None:
        self._errors = errors
        self._inner = inner
        self._budget = budget
        self._limit = MESSAGE_LIMIT if budget is None else budget.limit
        self._request_id = request_id
        self._sse = sse
        self._refuse = refuse

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._refuse:
            yield self._refusal()
            return
        held = bytearray()
        async for chunk in self._inner:
            start = max(0, len(held) - 1)  # an event end may straddle two chunks
            held += chunk
            if self._sse:
                end = max(held.rfind(mark, start) for mark in _EVENT_ENDS)
                if end >= 0:
                    if _LEGACY_ENDPOINT_EVENT.search(held, 0, end + 2):
                        # Not an answer this client will ever get: fail now, not at the timeout.
                        self._errors.legacy_sse = True
                        raise httpx2.StreamError("an old HTTP+SSE server's endpoint event")
                    yield bytes(held[: end + 2])
                    del held[: end + 2]
            if len(held) > self._limit:
                yield self._refusal()
                return
        if held:
            yield bytes(held)

    def _refusal(self) -> bytes:
        if self._budget is not None:
            self._budget.refused = True
        if self._request_id is None:
            raise httpx2.StreamError(f"a message from the server passed {self._limit} bytes")
        body = refusal_body(self._request_id, self._limit)
        return b"event: message\ndata: " + body + b"\n\n" if self._sse else body

    async def aclose(self) -> None:
        await self._inner.aclose()
