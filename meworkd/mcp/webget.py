"""One bounded GET of a JSON document over HTTP (the MCP registry's read API), as plain data.

Registries are public, read-only and unauthenticated, and have no uptime promise: every way a
URL can fail to give a usable JSON answer (refused, slow, an error status, HTML, an endless or
oversized body) becomes one :class:`RegistryUnavailable` naming the URL and what went wrong.
The body is counted while it arrives and never read past ``max_bytes``.
"""

import json
from collections.abc import Mapping
from typing import Any

import anyio
import httpx2

from meworkd.base.errors import RegistryUnavailable
from meworkd.mcp.http import tls_context

__all__ = ["get_bytes", "get_json"]

_ATTEMPTS_MESSAGE = "(check the URL in mcp.registries and the network)"


async def get_json(
    url: str,
    params: Mapping[str, str] | None = None,
    *,
    within: float,
    max_bytes: int,
) -> tuple[int, Any]:
    """``(status, document)`` of a GET of ``url``: a 404 is ``(404, None)``, for the caller to
    say what was not found; any other failure raises :class:`RegistryUnavailable`."""
    status, body, kind = await _bounded(url, params, within, max_bytes)
    if status == 404:
        return 404, None
    if status != 200:
        raise RegistryUnavailable(f"{url} answered HTTP {status} {_ATTEMPTS_MESSAGE}", url=url)
    return 200, _decode(url, body, kind)


async def get_bytes(url: str, *, within: float, max_bytes: int) -> bytes:
    """The body of a GET of ``url`` (a file to download); any failure, a 404 included, raises
    :class:`RegistryUnavailable`."""
    status, body, _kind = await _bounded(url, None, within, max_bytes)
    if status != 200:
        raise RegistryUnavailable(f"{url} answered HTTP {status}", url=url)
    return body


async def _bounded(
    url: str, params: Mapping[str, str] | None, within: float, max_bytes: int
) -> tuple[int, bytes, str]:
    try:
        with anyio.fail_after(within):
            return await _fetch(url, params, max_bytes)
    except TimeoutError:
        raise RegistryUnavailable(
            f"{url} did not answer within {within:g} s {_ATTEMPTS_MESSAGE}", url=url
        ) from None
    except httpx2.HTTPError as exc:
        raise RegistryUnavailable(
            f"{url} could not be reached ({type(exc).__name__}) {_ATTEMPTS_MESSAGE}", url=url
        ) from None


async def _fetch(
    url: str, params: Mapping[str, str] | None, max_bytes: int
) -> tuple[int, bytes, str]:
    async with (
        httpx2.AsyncClient(
            headers={"accept-encoding": "identity"},
            verify=tls_context(),
            follow_redirects=True,
            max_redirects=5,
        ) as http,
        http.stream("GET", url, params=dict(params or {})) as response,
    ):
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        if response.status_code != 200:
            return response.status_code, b"", kind
        body = bytearray()
        async for chunk in response.aiter_raw():
            body += chunk
            if len(body) > max_bytes:
                raise RegistryUnavailable(
                    f"{url} sent more than {max_bytes // 1024} KiB, more than it should, so "
                    f"it was not read further {_ATTEMPTS_MESSAGE}",
                    url=url,
                )
    return 200, bytes(body), kind


def _decode(url: str, body: bytes, kind: str) -> Any:
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        what = "an HTML page" if "html" in kind or body.lstrip()[:1] == b"<" else "text"
        raise RegistryUnavailable(
            f"{url} answered {what}, not JSON: is it an MCP registry's address? "
            f"{_ATTEMPTS_MESSAGE}",
            url=url,
        ) from None
