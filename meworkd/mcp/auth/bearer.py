"""The ``httpx2.Auth`` of every pooled HTTP session of a server that logs in with OAuth.

The token goes as a Bearer token, or DPoP-bound with a fresh proof per request (and once more
with the server's nonce when it asks for one), as :meth:`~.server.ServerAuth.present` says.

meworkd's, in place of the SDK's provider on sessions (notes/oauth.md G5, G7, G10): it only
adds the server's current token, refreshes once on a 401 through the shared
:class:`~.server.ServerAuth` (single-flight there), and never starts a login or raises inside
the transport. A 401 it cannot cure passes through: the request fails and the server's state
becomes ``required``. A 403 ``insufficient_scope`` notes the scope a step-up login must ask for.
While the authorization server is failing (a refresh gave up, :class:`~.server.RefreshUnavailable`)
the stored token goes as it is: the server's 401 fails this request and changes nothing else.
"""

import time
from collections.abc import AsyncGenerator

import httpx2
from mcp.client.auth.utils import extract_field_from_www_auth, union_scopes

from meworkd.base.errors import ServerUnavailable
from meworkd.mcp.auth.dpop import wants_nonce
from meworkd.mcp.auth.replies import Challenge
from meworkd.mcp.auth.server import RefreshUnavailable, ServerAuth

__all__ = ["BearerAuth"]


class BearerAuth(httpx2.Auth):
    def __init__(self, server: ServerAuth) -> None:
        self.server = server

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        try:
            token = await self.server.token()
        except RefreshUnavailable:
            # Not a logout: no login is started, and no second refresh on the 401.
            if (held := self.server.current()) is not None:
                self.server.present(request, held)
            yield request
            return
        except (ServerUnavailable, httpx2.HTTPError):
            # No login (yet): the request goes as is. A server that needs none answers it; one
            # that does answers 401 (``required``), which fails this request, never a browser.
            response = yield request
            # A DELETE ends a session (after a logout, say): its 401 asks for nothing.
            wants_login = response.status_code == 401 and request.method != "DELETE"
            if wants_login:
                self._record(request, response)
                if self.server.phase != "pending":
                    self.server.set_phase("required", self.server.error)
            return
        self.server.present(request, token)
        response = yield request
        self.server.nonces.remember(response)
        if self.server.bound and wants_nonce(response):
            self.server.present(request, token)  # a fresh proof with its nonce (RFC 9449 §9)
            response = yield request
        if response.status_code == 403:
            if extract_field_from_www_auth(response, "error") != "insufficient_scope":
                return
            self._record(request, response)
            if not await self._stepped_up(response):
                return
            self.server.present(request, self.server.current() or token)
            yield request  # once: a second 403 is the call's answer
            return
        if response.status_code != 401:
            return
        self._record(request, response)
        try:
            token = await self.server.token(rejected=token)
        except (ServerUnavailable, httpx2.HTTPError):
            return
        self.server.present(request, token)
        yield request

    def _record(self, request: httpx2.Request, response: httpx2.Response) -> None:
        self.server.challenge = Challenge(
            response.status_code,
            response.headers.get("WWW-Authenticate"),
            request.headers.get("MCP-Protocol-Version"),
        )

    def unavailable(self) -> str | None:
        """Why a 401 of the server is no logout: the authorization server is failing and the
        login is kept (the error of the refresh that gave up), else None."""
        if time.monotonic() >= self.server.retry_not_before:
            return None
        return self.server.error or "the authorization server is failing"

    async def _stepped_up(self, response: httpx2.Response) -> bool:
        """Ask for the union of granted and challenged scopes (a login: ``server.auth``
        ``pending`` with the URL) and wait for it; the call's own timeout bounds the wait."""
        if self.server.request_login is None:
            return False
        granted = (self.server.state.get("tokens") or {}).get("scope")
        wanted = union_scopes(granted, extract_field_from_www_auth(response, "scope"))
        if granted and set((wanted or "").split()) <= set(granted.split()):
            return False  # nothing more to ask for: a login would be granted the same again
        self.server.step_up_scope = wanted
        await self.server.request_login().wait()
        return self.server.phase == "authorized" and self.server.current() is not None
