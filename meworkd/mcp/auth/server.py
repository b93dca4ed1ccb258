"""One server's login, shared by every session of it: tokens, refresh, logout, and its state.

This is meworkd's, not the SDK's. The SDK's ``OAuthClientProvider`` is right for the
interactive login (:mod:`.login` uses it) but wrong for pooled sessions (notes/oauth.md G2-G10):
it forgets a stored token's expiry, never refreshes on a 401, refreshes to a guessed endpoint,
serializes requests behind a per-provider lock, and starts a browser login inside a failing
tool call. So every session of a server holds a :class:`~.bearer.BearerAuth` on the one
:class:`ServerAuth`, which

* persists tokens with an absolute expiry, the registration and the AS's endpoints (:mod:`.store`);
* refreshes single-flight under one lock, a little before expiry, or once on a 401;
* on ``invalid_grant`` drops the tokens once and moves to ``required`` (no loop, no browser);
  on ``invalid_client`` also drops the registration, so the next login registers again;
* retries a refresh that met a network error or a 5xx/429 after a short backoff, then gives up
  for a while (:data:`REFRESH_COOLDOWN`) keeping the tokens: an outage of the AS is not a
  logout, and the sessions are not made to hammer it;
* never presents a client secret past its ``client_secret_expires_at`` (RFC 7591): the
  registration is dropped and the next login registers again;
* revokes (RFC 7009) on logout where the AS advertises it, and on :meth:`ServerAuth.forget`
  (``servers.remove``) deletes the file too.
"""

import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import httpx2
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from meworkd.base.errors import ServerUnavailable
from meworkd.mcp.auth.credentials import secret_authentication
from meworkd.mcp.auth.dpop import DpopKey, Nonces, send_proven, token_from_reply
from meworkd.mcp.auth.replies import (
    Challenge,
    oauth_error,
    registration_expired,
    retry_after,
    transient_reply,
)
from meworkd.mcp.auth.store import AuthFile

__all__ = [
    "AUTH_STATES",
    "AuthStatus",
    "LoginRequired",
    "RefreshUnavailable",
    "ServerAuth",
]

AUTH_STATES = ("none", "required", "pending", "authorized", "failed")
REFRESH_LEEWAY_MAX = 60.0  # seconds before expiry a token is refreshed (clock skew, latency)
# Waits between the attempts of one refresh that met a network error or a 5xx/429: four
# attempts over about 7 s, inside the caller's own timeout (a turn's, a call's).
REFRESH_RETRY_DELAYS = (1.0, 2.0, 4.0)
# After a refresh gave up: no new attempt for this long; sessions use the token they have.
REFRESH_COOLDOWN = 30.0
# The longest pause a Retry-After of the AS may ask for (a wrong header must not lock us out).
RETRY_AFTER_MAX = 600.0
# A registration whose secret expires within this many seconds is not used for a refresh.
REGISTRATION_LEEWAY = 30.0
REVOKE_TIMEOUT = 5.0  # seconds for the best-effort revocations of a logout or a removal
_DEAD_GRANT = ("invalid_grant", "invalid_client", "unauthorized_client")

_T = TypeVar("_T")
AuthStatus = dict[str, Any]  # {"state", "scopes"?, "expiresAt"?, "error"?}: never a token


class LoginRequired(ServerUnavailable):
    """The server needs a login (no tokens, or the refresh token was refused)."""

    kind = "auth_required"


class RefreshUnavailable(ServerUnavailable):
    """A refresh could not reach a working authorization server: the login is kept."""

    kind = "auth_unavailable"


class ServerAuth:
    """The OAuth state of one server URL (see the module)."""

    def __init__(
        self,
        server_url: str,
        file: AuthFile,
        http: httpx2.AsyncClient,
        on_change: Callable[["ServerAuth"], None] = lambda _a: None,
    ) -> None:
        self.server_url = server_url
        self.file = file
        self.http = http
        self.on_change = on_change
        self.state: dict[str, Any] = file.load()
        self.lock = anyio.Lock()
        self.refreshes = 0
        self.phase = "authorized" if self.state.get("tokens") else "none"
        self.error: str | None = None
        self.authorization_url: str | None = None
        # Set from a 403 insufficient_scope challenge: what the next login asks for.
        self.step_up_scope: str | None = None
        # The last challenge a session met; the next login starts from it.
        self.challenge: Challenge | None = None
        self.token_auth_from_metadata = False  # a pre-registered client, method not configured
        # The client-credentials grant (no person): run instead of a refresh or a login.
        self.machine: Callable[[], Awaitable[None]] | None = None
        # Starts a login (or joins the running one) for a session; set when it can.
        self.request_login: Callable[[], anyio.Event] | None = None
        self.retry_delays = REFRESH_RETRY_DELAYS
        self.retry_cooldown = REFRESH_COOLDOWN
        # time.monotonic() before which no refresh is tried (after one gave up on the AS).
        self.retry_not_before = 0.0
        self.pause_hint: float | None = None  # the last failed answer's Retry-After, seconds
        self.failing = "the authorization server is failing"  # the last failed attempt, said
        self.forgotten = False  # servers.remove deleted it: nothing is written any more
        # DPoP (RFC 9449): the key the tokens are bound to, kept with them; the servers' nonces.
        self.dpop = DpopKey(self.state["dpop_key"]) if self.state.get("dpop_key") else None
        self.nonces = Nonces()

    # -- status -----------------------------------------------------------------------------
    def set_phase(self, phase: str, error: str | None = None, url: str | None = None) -> None:
        """Move to ``phase``; listeners hear of a change only (not of every failed call)."""
        assert phase in AUTH_STATES
        changed = (phase, error, url) != (self.phase, self.error, self.authorization_url)
        self.phase, self.error, self.authorization_url = phase, error, url
        if changed:
            self.on_change(self)

    def status(self) -> AuthStatus:
        """What servers.get shows: state, granted scopes, expiry, error; never a token."""
        out: AuthStatus = {"state": self.phase}
        tokens = self.state.get("tokens") or {}
        if tokens.get("scope"):
            out["scopes"] = tokens["scope"].split()
        if tokens.get("expires_at"):
            out["expiresAt"] = tokens["expires_at"]
        if self.error:
            out["error"] = self.error
        return out

    # -- persistence ------------------------------------------------------------------------
    def save(self) -> None:
        if not self.forgotten:
            self.file.save(self.state)

    def store_tokens(self, token: OAuthToken, *, bound: bool = False) -> None:
        """Keep ``token`` (``bound``: DPoP-bound to :meth:`dpop_key`) and save."""
        old = self.state.get("tokens") or {}
        self.state["tokens"] = {
            "access_token": token.access_token,
            "token_type": "DPoP" if bound else "Bearer",
            # An AS that does not rotate leaves the refresh token out: keep the one we have.
            "refresh_token": token.refresh_token or old.get("refresh_token"),
            "scope": token.scope or old.get("scope"),
            # Absolute, so a restart knows it (the SDK keeps only the relative expires_in: G2).
            "expires_at": time.time() + token.expires_in if token.expires_in else None,
            "lifetime": token.expires_in,
        }
        self.save()

    # -- DPoP (RFC 9449) ---------------------------------------------------------------------
    @property
    def bound(self) -> bool:
        """Whether the tokens held are DPoP-bound (each use then carries a proof)."""
        return (self.state.get("tokens") or {}).get("token_type") == "DPoP"

    def dpop_key(self) -> DpopKey:
        if self.dpop is None:
            self.dpop = DpopKey()
            self.state["dpop_key"] = self.dpop.pem  # saved with the tokens it will bind
        return self.dpop

    def proof(self, method: str, url: str, access_token: str | None = None) -> str:
        """A fresh DPoP proof for one request to ``url``, with that origin's last nonce."""
        nonce = self.nonces.get(url)
        return self.dpop_key().proof(method, url, access_token=access_token, nonce=nonce)

    def present(self, request: httpx2.Request, token: str) -> None:
        """Put ``token`` on ``request``: a Bearer token, or DPoP-bound with a fresh proof."""
        if not self.bound:
            request.headers["Authorization"] = f"Bearer {token}"
            return
        request.headers["Authorization"] = f"DPoP {token}"
        request.headers["DPoP"] = self.proof(request.method, str(request.url), token)

    # -- the SDK's TokenStorage protocol, used only by the login flow -----------------------
    async def get_tokens(self) -> OAuthToken | None:
        return None  # a login always starts from scratch

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.store_tokens(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        client = self.state.get("client")
        return OAuthClientInformationFull.model_validate(client) if client else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.state["client"] = client_info.model_dump(mode="json", exclude_none=True)
        self.save()

    # -- tokens for sessions ----------------------------------------------------------------
    def _fresh(self) -> str | None:
        tokens = self.state.get("tokens")
        if not tokens:
            return None
        expires_at = tokens.get("expires_at")
        if expires_at is None:  # no expires_in: use it until the server answers 401
            return str(tokens["access_token"])
        leeway = min(REFRESH_LEEWAY_MAX, (tokens.get("lifetime") or 240) / 4)
        return str(tokens["access_token"]) if expires_at - time.time() > leeway else None

    def current(self) -> str | None:
        """The stored access token, fresh or not (None when logged out)."""
        tokens = self.state.get("tokens")
        return str(tokens["access_token"]) if tokens else None

    async def token(self, *, rejected: str | None = None) -> str:
        """A usable access token; one refresh at most for all concurrent callers.

        ``rejected``: the token a server just answered 401 to; refreshed unless someone else
        already replaced it. Raises :class:`LoginRequired` when only a login can help, and
        :class:`RefreshUnavailable` when the AS is failing and the stored token has expired.
        """
        async with self.lock:
            tokens = self.state.get("tokens")
            if not tokens and self.machine is not None:
                await self.run_machine()
                return str(self.state["tokens"]["access_token"])
            if not tokens:
                raise LoginRequired(f"{self.server_url} needs a login")
            if rejected is None and (fresh := self._fresh()):
                return fresh
            if rejected is not None and tokens["access_token"] != rejected:
                return str(tokens["access_token"])  # refreshed while this caller waited
            try:
                await self._refresh()
            except RefreshUnavailable:
                expires_at = tokens.get("expires_at")
                if rejected is None and expires_at is not None and expires_at > time.time():
                    return str(tokens["access_token"])  # early refresh failed: still valid
                raise
            return str(self.state["tokens"]["access_token"])

    async def _refresh(self) -> None:
        tokens, endpoints = self.state["tokens"], self.state.get("as") or {}
        if not tokens.get("refresh_token") and self.machine is not None:
            await self.run_machine()
            return
        if not tokens.get("refresh_token") or not endpoints.get("token_endpoint"):
            # Never a guessed endpoint (G4): without the discovered one only a login helps.
            raise self._drop("no refresh token")
        if registration_expired(self.state.get("client") or {}, REGISTRATION_LEEWAY):
            # Its refresh token is bound to that client: only a login with a new one helps.
            self.state.pop("client", None)
            raise self._drop("the client registration expired; log in again to register anew")
        data = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
        if endpoints.get("resource"):
            data["resource"] = endpoints["resource"]
        response = await self._post_refresh(endpoints["token_endpoint"], data)
        if response.status_code == 200:
            token, bound = token_from_reply(response.content)
            self.store_tokens(token, bound=bound)
            self.set_phase("authorized")
            return
        error = oauth_error(response)
        if error in _DEAD_GRANT:
            if error != "invalid_grant":
                self.state.pop("client", None)  # the AS forgot us: the next login registers
            raise self._drop(f"the authorization server refused the refresh ({error})")
        raise LoginRequired(f"refreshing the token failed (HTTP {response.status_code})")

    async def _post_refresh(self, url: str, data: dict[str, str]) -> httpx2.Response:
        headers = self.client_auth(data)

        async def attempt() -> httpx2.Response:
            try:
                response = await self._post_proven(url, data, headers)
            except httpx2.TransportError as exc:
                raise RefreshUnavailable(
                    f"the authorization server is unreachable ({type(exc).__name__})"
                ) from None
            if transient_reply(response):
                self.pause_hint = retry_after(response)
                raise RefreshUnavailable(
                    f"the authorization server answered HTTP {response.status_code}"
                )
            return response

        return await self.patiently("refreshing the token", attempt)

    async def _post_proven(
        self, url: str, data: dict[str, str], headers: dict[str, str]
    ) -> httpx2.Response:
        """POST to the token endpoint; with a DPoP proof when the tokens are bound."""
        request = self.http.build_request("POST", url, data=data, headers=headers)
        if not self.bound:
            return await self.http.send(request)
        return await send_proven(self.http, request, self.dpop_key(), self.nonces)

    async def run_machine(self) -> None:
        """The client-credentials grant (its renewal), with the refresh's backoff and pause."""
        assert self.machine is not None
        await self.patiently("getting a token", self.machine)

    async def patiently(self, what: str, attempt: Callable[[], Awaitable[_T]]) -> _T:
        """Run ``attempt`` (one exchange with the AS) again after each of ``retry_delays``
        while it raises :class:`RefreshUnavailable` (network, 5xx, 429); then no attempt for
        ``retry_cooldown`` (sessions use what they have), the tokens kept, the reason shown."""
        if time.monotonic() < self.retry_not_before:
            raise RefreshUnavailable(self.error or self.failing)
        why, self.pause_hint = "no answer", None
        for delay in (*self.retry_delays, None):
            self.refreshes += 1
            try:
                result = await attempt()
            except RefreshUnavailable as exc:
                why = exc.message
                self.failing = f"{what} failed: {why}"
            else:
                self.retry_not_before = 0.0
                return result
            if delay is None or (self.pause_hint or 0.0) > delay:
                break  # the AS asked for a longer pause than the next wait: honour it
            # A caller whose timeout ends this wait leaves it in force for the next caller.
            self.retry_not_before = time.monotonic() + delay
            await anyio.sleep(delay)
        pause = max(self.retry_cooldown, min(self.pause_hint or 0.0, RETRY_AFTER_MAX))
        self.retry_not_before = time.monotonic() + pause
        message = f"{what} failed: {why}; the login is kept and retried later"
        self.set_phase(self.phase, message, self.authorization_url)
        raise RefreshUnavailable(message)

    def client_auth(self, data: dict[str, str]) -> dict[str, str]:
        """Client authentication as registered: none, client_secret_post or client_secret_basic."""
        client = self.state.get("client") or {}
        if "client_id" not in client:
            return {}
        method = client.get("token_endpoint_auth_method") or "client_secret_post"
        return secret_authentication(method, client["client_id"], client.get("client_secret"), data)

    def _drop(self, why: str) -> LoginRequired:
        """Forget the dead tokens once (stored too) and say a login is needed."""
        self.state.pop("tokens", None)
        self.save()
        self.retry_not_before = 0.0  # no outage any more: a login is what is missing
        self.set_phase("required", why)
        return LoginRequired(f"{self.server_url} needs a login: {why}")

    async def logout(self) -> bool:
        """Revoke where advertised (best effort), then forget the tokens; keep the registration.

        Returns whether the AS accepted a revocation.
        """
        async with self.lock:
            revoked = await self._revoke()
            self.state.pop("tokens", None)
            self.save()
            self.retry_not_before = 0.0
            self.set_phase("none")
            return revoked

    async def forget(self) -> bool:
        """``servers.remove``: revoke (best effort), then delete the tokens, the registration
        and the file; this object writes nothing afterwards (a session still holding it, or a
        login that was running, cannot bring the file back). Returns whether a revocation was
        accepted."""
        async with self.lock:
            revoked = await self._revoke()
            self.forgotten = True
            self.on_change = lambda _auth: None  # the name is gone: no more server.auth
            self.request_login = self.machine = None
            self.state.clear()
            self.file.remove()
            self.phase, self.error, self.authorization_url = "none", None, None
            return revoked

    async def _revoke(self) -> bool:
        """RFC 7009 for the refresh and the access token, bounded; whether one was accepted."""
        tokens = self.state.get("tokens") or {}
        endpoint = (self.state.get("as") or {}).get("revocation_endpoint")
        revoked = False
        with anyio.move_on_after(REVOKE_TIMEOUT):
            for hint in ("refresh_token", "access_token"):
                if tokens.get(hint) and endpoint:
                    data = {"token": tokens[hint], "token_type_hint": hint}
                    try:
                        reply = await self.http.post(
                            endpoint, data=data, headers=self.client_auth(data)
                        )
                        revoked = revoked or reply.status_code == 200
                    except httpx2.HTTPError:
                        pass  # revocation is best effort; the tokens are forgotten anyway
        return revoked
