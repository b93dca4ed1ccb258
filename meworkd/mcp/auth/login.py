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

from meworkd.mcp.auth.loopback import LoginFailed, LoopbackReceiver
from meworkd.mcp.auth.replies import registration_expired
from meworkd.mcp.auth.server import ServerAuth
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
    if oauth is not None and oauth.client_id:
        auth.state["client"] = {
            "client_id": oauth.client_id,
            "redirect_uris": [redirect_uri],
            "token_endpoint_auth_method": "client_secret_post" if oauth.client_secret else "none",
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
    scope = _wanted_scope(auth, oauth)
    provider: OAuthClientProvider

    async def redirect_handler(url: str) -> None:
        metadata = provider.context.oauth_metadata
        # None: a 2025-03-26 server without metadata, where S256 is the default (spec).
        if metadata is not None and "S256" not in (metadata.code_challenge_methods_supported or []):
            raise LoginFailed("the authorization server does not offer PKCE with S256; refused")
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

    async def challenge_scope(response: httpx2.Response) -> None:
        if scope and response.status_code == 401:
            www = response.headers.get("WWW-Authenticate", "Bearer")
            www = re.sub(r',?\s*scope="[^"]*"', "", www)
            response.headers["WWW-Authenticate"] = (
                f'{www}{", " if "=" in www else " "}scope="{scope}"'
            )

    # Sessions keep using the tokens they have (a step-up) until the new ones are stored.
    before = auth.state.get("tokens")
    try:
        async with httpx2.AsyncClient(
            auth=provider, timeout=LOGIN_HTTP_TIMEOUT, event_hooks={"response": [challenge_scope]}
        ) as client:
            # A GET: a POST would open a server session just to throw it away.
            await client.get(auth.server_url, headers={"Accept": "text/event-stream"})
    except OAuthFlowError as exc:
        raise LoginFailed(f"the login failed: {type(exc).__name__}") from None
    except httpx2.HTTPError:
        raise LoginFailed(
            "the login failed: the server or its authorization server is unreachable"
        ) from None
    if auth.state.get("tokens") is before:
        raise LoginFailed("the login did not complete: the server asked for no login")
    _keep_endpoints(auth, provider)


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
