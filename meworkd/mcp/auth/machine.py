"""Grants with no person and no browser: client credentials, a workload's own JWT, an ID-JAG.

* ``client_credentials`` (machine to machine): the client's secret or a ``private_key_jwt``
  assertion (RFC 7523 §2.2, the SDK's ``SignedJWTParameters``).
* ``jwt_bearer`` (workload identity federation): the JWT the platform issued to this workload
  (``assertion``, or ``assertionFile``, read afresh each time because platforms rotate it) is
  the grant (RFC 7523 §2.1).
* ``identity_assertion`` (enterprise-managed authorization, SEP-990): the user's ID token from
  the enterprise identity provider (``idToken``/``idTokenFile``) is exchanged there for an
  Identity Assertion JWT Authorization Grant (RFC 8693), which is then the jwt-bearer grant.

Discovery reuses the SDK's URL builders and checks (``mcp.client.auth.utils``: the
protected-resource metadata from the challenge a session met, else the well-knowns; the AS
metadata over the OAuth and OpenID well-knowns, the RFC 8414 issuer check). The requests are
meworkd's: the SDK's providers would sit on the sessions (G5-G10) and need the issuer up front
(G14). Secrets stay in the settings; only the tokens and the discovered endpoints are stored.
When the token expires, the grant simply runs again. A network error or a 5xx/429 raises
:class:`~.server.RefreshUnavailable`, which :meth:`~.server.ServerAuth.run_machine` retries
with the refresh's backoff.
"""

import os
import re
from urllib.parse import urlsplit

import httpx2
from jwt import PyJWTError
from mcp.client.auth.extensions.client_credentials import SignedJWTParameters
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    extract_field_from_www_auth,
    validate_metadata_issuer,
)
from mcp.shared.auth import (
    JWT_BEARER_GRANT_TYPE,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import ValidationError

from meworkd.mcp.auth.credentials import secret_authentication, token_auth_method
from meworkd.mcp.auth.loopback import LoginFailed
from meworkd.mcp.auth.replies import oauth_error, retry_after, transient_reply
from meworkd.mcp.auth.server import RefreshUnavailable, ServerAuth
from meworkd.settings import OAuthConfig

__all__ = ["machine_grant"]

CLIENT_ASSERTION = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ASSERTION_FILE_MAX = 64 * 1024  # a JWT is a few KiB; anything larger is not one


async def _first_json(http: httpx2.AsyncClient, urls: list[str]) -> bytes | None:
    for url in urls:
        reply = await http.get(url)
        if reply.status_code == 200:
            return reply.content
    return None


async def _discover(auth: ServerAuth) -> tuple[OAuthMetadata | None, str]:
    """(AS metadata or None for a 2025-03-26 server without it, the resource URL), from the
    challenge a session met when there is one, else the well-known URLs (RFC 9728): never a
    probe, which a server may answer 404 or 405 before checking authorization."""
    http = auth.http
    challenge = auth.challenge
    named = None
    if challenge is not None and challenge.www_authenticate:
        header = httpx2.Response(401, headers={"WWW-Authenticate": challenge.www_authenticate})
        named = extract_field_from_www_auth(header, "resource_metadata")
    prm_urls = build_protected_resource_metadata_discovery_urls(named, auth.server_url)
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
        data["client_assertion_type"] = CLIENT_ASSERTION
        return {}
    supported = metadata.token_endpoint_auth_methods_supported if metadata else None
    method = oauth.token_endpoint_auth_method or token_auth_method(
        bool(oauth.client_secret), supported
    )
    return secret_authentication(method, oauth.client_id, oauth.client_secret, data)


def _read_token_file(path: str, key: str) -> str:
    """A token the platform keeps in a file (it may rotate it: read at each grant)."""
    try:
        with open(os.path.expanduser(path), "rb") as file:
            data = file.read(ASSERTION_FILE_MAX + 1)
    except OSError as exc:
        raise LoginFailed(f"oauth.{key}: cannot read {path} ({exc.strerror})") from None
    if len(data) > ASSERTION_FILE_MAX or not data.strip():
        raise LoginFailed(f"oauth.{key}: {path} holds no token")
    return data.decode(errors="replace").strip()


async def _id_jag(auth: ServerAuth, oauth: OAuthConfig, issuer: str, resource: str) -> str:
    """SEP-990 leg 1: the ID token exchanged at the identity provider for an ID-JAG naming
    this authorization server (``audience``) and this server (``resource``)."""
    assert oauth.idp_token_endpoint is not None  # parse_server requires both for the grant
    assert oauth.idp_client_id is not None
    id_token = oauth.id_token or _read_token_file(oauth.id_token_file or "", "idTokenFile")
    data = {
        "grant_type": TOKEN_EXCHANGE_GRANT,
        "requested_token_type": ID_JAG,
        "subject_token": id_token,
        "subject_token_type": ID_TOKEN,
        "audience": issuer,
        "resource": resource,
    }
    headers = secret_authentication(
        "client_secret_basic" if oauth.idp_client_secret else "none",
        oauth.idp_client_id,
        oauth.idp_client_secret,
        data,
    )
    reply = await _post(auth, oauth.idp_token_endpoint, data, headers, "the identity provider")
    try:
        answer = reply.json()
    except ValueError:
        answer = None
    # RFC 8693 §2.2.1: the ID-JAG is the access_token, its token_type "N_A" (not a bearer).
    if not isinstance(answer, dict) or answer.get("issued_token_type") != ID_JAG:
        raise LoginFailed("the identity provider answered without an ID-JAG")
    if not isinstance(jag := answer.get("access_token"), str) or not jag:
        raise LoginFailed("the identity provider answered without an ID-JAG")
    return jag


async def _grant(
    auth: ServerAuth, oauth: OAuthConfig, metadata: OAuthMetadata | None, issuer: str, resource: str
) -> tuple[dict[str, str], dict[str, str]]:
    """The token request's form and headers for ``oauth.grant``."""
    data = {"resource": resource}
    if oauth.scopes:
        data["scope"] = " ".join(oauth.scopes)
    if oauth.grant == "client_credentials":
        data["grant_type"] = "client_credentials"
        return data, await _client_authentication(oauth, metadata, issuer, data)
    data["grant_type"] = JWT_BEARER_GRANT_TYPE
    if oauth.grant == "identity_assertion":
        data["assertion"] = await _id_jag(auth, oauth, issuer, resource)
    else:  # jwt_bearer: the workload's own identity is the grant
        data["assertion"] = oauth.assertion or _read_token_file(
            oauth.assertion_file or "", "assertionFile"
        )
    if oauth.client_id and not (oauth.client_secret or oauth.private_key):
        data["client_id"] = oauth.client_id  # a public client names itself (auth "none")
        return data, {}
    return data, await _client_authentication(oauth, metadata, issuer, data)


async def _post(
    auth: ServerAuth, url: str, data: dict[str, str], headers: dict[str, str], who: str
) -> httpx2.Response:
    try:
        reply = await auth.http.post(url, data=data, headers=headers)
    except httpx2.TransportError as exc:
        raise RefreshUnavailable(f"{who} is unreachable ({type(exc).__name__})") from None
    except httpx2.HTTPError:
        raise LoginFailed(f"{who} is unreachable") from None
    if transient_reply(reply):
        # A passing failure: ServerAuth tries again after a backoff; the state is not failed.
        auth.pause_hint = retry_after(reply)
        raise RefreshUnavailable(f"{who} answered HTTP {reply.status_code}")
    if reply.status_code != 200:
        error = oauth_error(reply)
        # Only an RFC 6749 error code is quoted (the reply is the server's text, not ours).
        why = f" ({error})" if error and re.fullmatch(r"[a-z_]{1,40}", error) else ""
        raise LoginFailed(f"{who} refused the grant (HTTP {reply.status_code}){why}")
    return reply


async def machine_grant(auth: ServerAuth, oauth: OAuthConfig) -> None:
    """Get a token by ``oauth.grant`` and store it (the caller holds the lock)."""
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
    try:
        data, headers = await _grant(auth, oauth, metadata, issuer, resource)
    except (ValueError, TypeError, PyJWTError):
        raise LoginFailed("oauth.privateKey: not a usable PEM key for the algorithm") from None
    reply = await _post(auth, token_endpoint, data, headers, "the authorization server")
    revocation = metadata.revocation_endpoint if metadata else None
    auth.state["as"] = {
        "issuer": issuer,
        "token_endpoint": token_endpoint,
        "revocation_endpoint": str(revocation) if revocation else None,
        "resource": resource,
    }
    auth.store_tokens(OAuthToken.model_validate_json(reply.content))
    auth.set_phase("authorized")
