"""The client-credentials grant (machine to machine): a token with no person and no browser.

Discovery reuses the SDK's URL builders and checks (``mcp.client.auth.utils``: the
protected-resource metadata from the 401's ``resource_metadata`` or the well-knowns, the AS
metadata over the OAuth and OpenID well-knowns, the RFC 8414 issuer check) and the SDK's JWT
assertion builder (``SignedJWTParameters``, ``private_key_jwt``, RFC 7523). The request itself
is meworkd's: the SDK's ``ClientCredentialsOAuthProvider`` would sit on the sessions (G5-G10)
and needs the issuer up front (G14). The secret or key stays in the settings; only the tokens
and the discovered endpoints are stored. When the token expires, the grant simply runs again.
A network error or a 5xx/429 raises :class:`~.server.RefreshUnavailable`, which
:meth:`~.server.ServerAuth.run_machine` retries with the refresh's backoff.
"""

from urllib.parse import urlsplit

import httpx2
from jwt import PyJWTError
from mcp.client.auth.extensions.client_credentials import SignedJWTParameters
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
    validate_metadata_issuer,
)
from mcp.shared.auth import OAuthMetadata, OAuthToken, ProtectedResourceMetadata
from pydantic import ValidationError

from meworkd.mcp.auth.loopback import LoginFailed
from meworkd.mcp.auth.replies import retry_after, transient_reply
from meworkd.mcp.auth.server import (
    RefreshUnavailable,
    ServerAuth,
    secret_authentication,
    token_auth_method,
)
from meworkd.settings import OAuthConfig

__all__ = ["client_credentials"]

JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


async def _first_json(http: httpx2.AsyncClient, urls: list[str]) -> bytes | None:
    for url in urls:
        reply = await http.get(url)
        if reply.status_code == 200:
            return reply.content
    return None


async def _discover(auth: ServerAuth) -> tuple[OAuthMetadata | None, str]:
    """(AS metadata or None for a 2025-03-26 server without it, the resource URL)."""
    http = auth.http
    challenge = await http.get(auth.server_url, headers={"Accept": "text/event-stream"})
    prm_urls = build_protected_resource_metadata_discovery_urls(
        extract_resource_metadata_from_www_auth(challenge), auth.server_url
    )
    prm_body = await _first_json(http, prm_urls)
    prm = ProtectedResourceMetadata.model_validate_json(prm_body) if prm_body else None
    issuer = str(prm.authorization_servers[0]) if prm else None
    as_urls = build_oauth_authorization_server_metadata_discovery_urls(issuer, auth.server_url)
    as_body = await _first_json(http, as_urls)
    metadata = OAuthMetadata.model_validate_json(as_body) if as_body else None
    if metadata is not None and issuer is not None:
        validate_metadata_issuer(metadata, issuer)
    resource = str(prm.resource) if prm else auth.server_url
    return metadata, resource


async def _client_authentication(
    oauth: OAuthConfig, metadata: OAuthMetadata | None, audience: str, data: dict[str, str]
) -> dict[str, str]:
    """A signed JWT assertion with a private key; else the secret, by the configured method or
    the one the AS's metadata offers (``client_secret_basic`` by default, RFC 8414)."""
    assert oauth.client_id is not None
    if oauth.private_key:
        signer = SignedJWTParameters(
            issuer=oauth.client_id,
            subject=oauth.client_id,
            signing_key=oauth.private_key,
            signing_algorithm=oauth.signing_algorithm or "RS256",
        )
        data["client_id"] = oauth.client_id
        data["client_assertion"] = await signer.create_assertion_provider()(audience)
        data["client_assertion_type"] = JWT_BEARER
        return {}
    supported = metadata.token_endpoint_auth_methods_supported if metadata else None
    method = oauth.token_endpoint_auth_method or token_auth_method(
        bool(oauth.client_secret), supported
    )
    return secret_authentication(method, oauth.client_id, oauth.client_secret, data)


async def client_credentials(auth: ServerAuth, oauth: OAuthConfig) -> None:
    """Get a token with the client-credentials grant and store it (the caller holds the lock)."""
    try:
        metadata, resource = await _discover(auth)
    except httpx2.TransportError as exc:
        raise RefreshUnavailable(
            f"the server or its authorization server is unreachable ({type(exc).__name__})"
        ) from None
    except (ValidationError, ValueError, httpx2.HTTPError) as exc:
        raise LoginFailed(
            f"discovering the authorization server failed ({type(exc).__name__})"
        ) from None
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(auth.server_url))
    issuer = str(metadata.issuer) if metadata else origin
    token_endpoint = str(metadata.token_endpoint) if metadata else f"{origin}/token"
    data = {"grant_type": "client_credentials", "resource": resource}
    if oauth.scopes:
        data["scope"] = " ".join(oauth.scopes)
    try:
        headers = await _client_authentication(oauth, metadata, issuer, data)
        reply = await auth.http.post(token_endpoint, data=data, headers=headers)
    except httpx2.TransportError as exc:
        raise RefreshUnavailable(
            f"the authorization server is unreachable ({type(exc).__name__})"
        ) from None
    except httpx2.HTTPError:
        raise LoginFailed("the authorization server is unreachable") from None
    except (ValueError, TypeError, PyJWTError):
        raise LoginFailed("oauth.privateKey: not a usable PEM key for the algorithm") from None
    if transient_reply(reply):
        # A passing failure: ServerAuth tries again after a backoff; the state is not failed.
        auth.pause_hint = retry_after(reply)
        raise RefreshUnavailable(f"the authorization server answered HTTP {reply.status_code}")
    if reply.status_code != 200:
        raise LoginFailed(f"the authorization server refused the client (HTTP {reply.status_code})")
    revocation = metadata.revocation_endpoint if metadata else None
    auth.state["as"] = {
        "issuer": issuer,
        "token_endpoint": token_endpoint,
        "revocation_endpoint": str(revocation) if revocation else None,
        "resource": resource,
    }
    auth.store_tokens(OAuthToken.model_validate_json(reply.content))
    auth.set_phase("authorized")
