"""The interactive login (authorization code + PKCE S256 + loopback redirect) of one server.

The SDK's part: ``OAuthClientProvider`` does discovery (protected-resource metadata from the
401's ``WWW-Authenticate`` and the well-known fallbacks, AS metadata over the OAuth and OpenID
well-knowns and the 2025-03-26 origin fallbacks), registration (pre-registered, client ID
metadata document, dynamic registration), PKCE, ``state``, ``resource`` and ``iss`` checks, and
the code exchange. meworkd's part, filling its gaps (notes/oauth.md §2.3):

* refuse an AS that does not advertise S256 before any URL is shown (G1);
* a configured or step-up scope survives (the SDK overwrites it from the 401, G11): the scope
  is put into that 401 challenge, which the SDK takes as authoritative;
* a registration made for another redirect port is dropped, so the SDK registers again (G9);
  so is one whose secret expires (``client_secret_expires_at``) before the login could end
  (the SDK would present the dead secret and fail at the code exchange);
* the discovered token and revocation endpoints are kept for refreshes (G4, G12);
* the wait for the browser is bounded (:class:`~.loopback.LoopbackReceiver`).
"""

import re
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.shared.auth import OAuthClientMetadata
from mcp_types.version import LATEST_MODERN_VERSION

from meworkd import __version__
from meworkd.mcp.auth.credentials import token_auth_method
from meworkd.mcp.auth.dpop import offers_dpop, send_proven, token_from_reply
from meworkd.mcp.auth.loopback import LoginFailed, LoopbackReceiver
from meworkd.mcp.auth.replies import Challenge, registration_expired
from meworkd.mcp.auth.server import ServerAuth
from meworkd.mcp.http import tls_context
from meworkd.settings import OAuthConfig

__all__ = ["login", "redirect_port_for"]

LOGIN_HTTP_TIMEOUT = 30.0


def redirect_port_for(auth: ServerAuth, oauth: OAuthConfig | None) -> int:
    """The configured port, else the one the stored registration was made for, else any (0)."""
    if oauth is not None and oauth.redirect_port:
        return oauth.redirect_port
    for uri in (auth.state.get("client") or {}).get("redirect_uris", []):
        port = urlsplit(str(uri)).port
        if port:
            return port
    return 0


def _adopt_client(
    auth: ServerAuth, oauth: OAuthConfig | None, redirect_uri: str, wait_seconds: float
) -> None:
    """A pre-registered client from the settings wins; a registration for another port goes,
    and so does one whose secret would expire before the code is redeemed."""
    # A method the settings name is the one the client was registered with: never guessed.
    auth.token_auth_from_metadata = (
        oauth is not None and bool(oauth.client_id) and not oauth.token_endpoint_auth_method
    )
    if oauth is not None and oauth.client_id:
        auth.state["client"] = {
            "client_id": oauth.client_id,
            "redirect_uris": [redirect_uri],
            # Unless configured, refined from the AS's metadata once known (_choose_token_auth).
            "token_endpoint_auth_method": oauth.token_endpoint_auth_method
            or token_auth_method(bool(oauth.client_secret), None),
            **({"client_secret": oauth.client_secret} if oauth.client_secret else {}),
        }
        return
    client = auth.state.get("client")
    if not client:
        return
    other_port = redirect_uri not in client.get("redirect_uris", [])
    if other_port or registration_expired(client, within=wait_seconds + LOGIN_HTTP_TIMEOUT):
        auth.state.pop("client")


def _wanted_scope(auth: ServerAuth, oauth: OAuthConfig | None) -> str | None:
    if auth.step_up_scope:
        return auth.step_up_scope
    return " ".join(oauth.scopes) if oauth is not None and oauth.scopes else None


async def login(
    auth: ServerAuth,
    oauth: OAuthConfig | None,
    on_url: Callable[[str], Awaitable[None]],
    *,
    wait_seconds: float = 600.0,
) -> None:
    """Log in to ``auth``'s server; ``on_url`` gets the authorization URL to open.

    Raises :class:`LoginFailed` with a message fit for the user (no token, no secret).
    """
    try:
        async with LoopbackReceiver(redirect_port_for(auth, oauth), wait_seconds) as receiver:
            await _run_flow(auth, oauth, receiver, on_url, wait_seconds)
    except LoginFailed as exc:
        auth.set_phase("failed", exc.message)
        raise
    auth.step_up_scope = None
    auth.retry_not_before = 0.0  # the AS answered: no outage to wait out
    auth.set_phase("authorized")


async def _run_flow(
    auth: ServerAuth,
    oauth: OAuthConfig | None,
    receiver: LoopbackReceiver,
    on_url: Callable[[str], Awaitable[None]],
    wait_seconds: float,
) -> None:
    _adopt_client(auth, oauth, receiver.redirect_uri, wait_seconds)
    provider: OAuthClientProvider

    async def redirect_handler(url: str) -> None:
        metadata = provider.context.oauth_metadata
        # None: a 2025-03-26 server without metadata, where S256 is the default (spec).
        if metadata is not None and "S256" not in (metadata.code_challenge_methods_supported or []):
            raise LoginFailed("the authorization server does not offer PKCE with S256; refused")
        _choose_token_auth(auth, provider)
        auth.set_phase("pending", None, url)
        await on_url(url)

    provider = OAuthClientProvider(
        auth.server_url,
        OAuthClientMetadata(client_name="meworkd", redirect_uris=[receiver.redirect_uri]),  # type: ignore[list-item]
        auth,
        redirect_handler,
        receiver.callback_handler,
        client_metadata_url=oauth.client_metadata_url if oauth is not None else None,
    )
    # Sessions keep using the tokens they have (a step-up) until the new ones are stored.
    before = auth.state.get("tokens")
    try:
        async with httpx2.AsyncClient(timeout=LOGIN_HTTP_TIMEOUT, verify=tls_context()) as client:
            await _authorize(provider, client, auth, _wanted_scope(auth, oauth))
    except OAuthFlowError as exc:
        raise LoginFailed(f"the login failed: {type(exc).__name__}") from None
    except httpx2.HTTPError:
        raise LoginFailed(
            "the login failed: the server or its authorization server is unreachable"
        ) from None
    if auth.state.get("tokens") is before:
        raise LoginFailed("the login did not complete: the server asked for no login")
    _keep_endpoints(auth, provider)


async def _authorize(
    provider: OAuthClientProvider,
    client: httpx2.AsyncClient,
    auth: ServerAuth,
    scope: str | None,
) -> None:
    """Drive the SDK's flow from the server's own challenge.

    The first answer is the challenge a session met on a real request, when there is one (no
    request is sent for it); else a real MCP request is sent and its answer used. Never a GET:
    a server may answer GET (only its optional SSE stream) 404 or 405 before checking
    authorization. The flow's own requests (metadata, registration, token) go out as it asks;
    its last request, the probe again with the new token, is not sent: the login is done.
    """
    challenge = auth.challenge
    probe = _probe_request(auth.server_url, challenge)
    flow = provider.async_auth_flow(probe)
    dpop = _DpopUse(auth)
    try:
        request = await flow.__anext__()
        if challenge is not None:
            response = httpx2.Response(
                challenge.status,
                headers=_challenge_headers(challenge.www_authenticate, scope),
                request=request,
            )
        else:
            response = _with_scope(await client.send(request), scope)
        while (request := await flow.asend(response)) is not probe:
            response = await dpop.send(client, request)
    except StopAsyncIteration:
        pass
    finally:
        await flow.aclose()
    auth.challenge = None
    dpop.keep_binding()


class _DpopUse:
    """DPoP in a login: on when the AS's metadata offers it; then the token request carries a
    proof, and a DPoP-bound token is handed to the SDK (which knows Bearer only) as one."""

    def __init__(self, auth: ServerAuth) -> None:
        self.auth = auth
        self.offered = False
        self.bound = False

    async def send(self, client: httpx2.AsyncClient, request: httpx2.Request) -> httpx2.Response:
        token_request = request.method == "POST" and b"grant_type=" in request.content
        if not (self.offered and token_request):
            response = await client.send(request)
            if request.method == "GET" and "/.well-known/" in request.url.path:
                self.offered = self.offered or offers_dpop(response)
            return response
        response = await send_proven(client, request, self.auth.dpop_key(), self.auth.nonces)
        if response.status_code != 200:
            return response
        try:
            token, self.bound = token_from_reply(response.content)
        except ValueError:
            return response  # the SDK says what is wrong with it
        body = token.model_dump(mode="json", exclude_none=True)
        return httpx2.Response(200, json=body, request=request)

    def keep_binding(self) -> None:
        if self.bound and self.auth.state.get("tokens"):
            self.auth.state["tokens"]["token_type"] = "DPoP"
            self.auth.save()


def _probe_request(server_url: str, challenge: Challenge | None) -> httpx2.Request:
    """``server/discover``: answered by a 2026-07-28 server, refused by an older one, and on
    neither does it open a session; a server that needs a login answers it 401 first."""
    version = (challenge.protocol_version if challenge else None) or LATEST_MODERN_VERSION
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "meworkd", "version": __version__},
    }
    body = {"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": meta}}
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": version,
        "Mcp-Method": "server/discover",
    }
    return httpx2.Request("POST", server_url, json=body, headers=headers)


def _challenge_headers(www_authenticate: str | None, scope: str | None) -> dict[str, str]:
    """The challenge's header, with the scope this login must ask for put into it: the SDK
    takes the challenge's scope as authoritative and would drop a configured or step-up one."""
    if not scope:
        return {"WWW-Authenticate": www_authenticate} if www_authenticate else {}
    www = re.sub(r',?\s*scope="[^"]*"', "", www_authenticate or "Bearer")
    return {"WWW-Authenticate": f'{www}{", " if "=" in www else " "}scope="{scope}"'}


def _with_scope(response: httpx2.Response, scope: str | None) -> httpx2.Response:
    if scope and response.status_code == 401:
        header = _challenge_headers(response.headers.get("WWW-Authenticate"), scope)
        response.headers.update(header)
    return response


def _choose_token_auth(auth: ServerAuth, provider: OAuthClientProvider) -> None:
    """A pre-registered client's method, from the AS's metadata (known only now); a client
    registered dynamically keeps the method its registration was given."""
    client = provider.context.client_info
    if client is None or not auth.token_auth_from_metadata:
        return
    metadata = provider.context.oauth_metadata
    supported = metadata.token_endpoint_auth_methods_supported if metadata else None
    client.token_endpoint_auth_method = token_auth_method(bool(client.client_secret), supported)
    auth.state["client"]["token_endpoint_auth_method"] = client.token_endpoint_auth_method


def _keep_endpoints(auth: ServerAuth, provider: OAuthClientProvider) -> None:
    metadata = provider.context.oauth_metadata
    if not auth.state.get("tokens"):
        raise LoginFailed("the login did not complete: the server asked for no login")
    context = provider.context
    base = f"{urlsplit(auth.server_url).scheme}://{urlsplit(auth.server_url).netloc}"
    auth.state["as"] = {
        # Without metadata (2025-03-26 fallback) the SDK used the origin's /token; so do we.
        "issuer": str(metadata.issuer) if metadata else base,
        "token_endpoint": str(metadata.token_endpoint) if metadata else f"{base}/token",
        "revocation_endpoint": str(metadata.revocation_endpoint)
        if metadata and metadata.revocation_endpoint
        else None,
        "resource": context.get_resource_url(),
    }
    auth.save()
