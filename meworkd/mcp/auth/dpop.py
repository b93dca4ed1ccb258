"""DPoP (RFC 9449): access tokens bound to a key of meworkd's, proven anew on every use.

Used when the authorization server offers it (its metadata's
``dpop_signing_alg_values_supported`` names ES256, which meworkd signs with): the token
request carries a proof (§5), the token comes back with ``token_type: DPoP``, and every
request to the MCP server carries ``Authorization: DPoP <token>`` and a fresh proof bound to
it (``ath``, §7). A server that wants a nonce answers ``use_dpop_nonce`` with a
``DPoP-Nonce`` header; the request is made once more with it (§8 at the AS, §9 at the
server), and the nonce is kept per origin.

The key is one EC P-256 key per server, kept with its tokens in the 0600 login file, since a
token bound to it is useless without it. The SDK's ``OAuthToken`` accepts ``Bearer`` only
(mcp 2.3), so :func:`token_from_reply` reads a DPoP reply as one, and the binding is kept
beside the tokens (``token_type``).
"""

import base64
import hashlib
import json
import secrets
import time
from urllib.parse import urlsplit, urlunsplit

import httpx2
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from mcp.client.auth.utils import extract_field_from_www_auth
from mcp.shared.auth import OAuthToken

__all__ = [
    "DpopKey",
    "Nonces",
    "offers_dpop",
    "send_proven",
    "token_from_reply",
    "wants_nonce",
]

ALGORITHM = "ES256"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def offers_dpop(metadata_reply: httpx2.Response) -> bool:
    """Whether an AS metadata document (RFC 8414, read raw: the SDK's model drops the field)
    offers DPoP with ES256 (RFC 9449 §5.1)."""
    if metadata_reply.status_code != 200:
        return False
    try:
        offered = json.loads(metadata_reply.content).get("dpop_signing_alg_values_supported")
    except (ValueError, AttributeError):
        return False
    return isinstance(offered, list) and ALGORITHM in offered


class DpopKey:
    """One server's proof key: made once, kept (PEM) with the tokens it binds."""

    def __init__(self, pem: str | None = None) -> None:
        if pem is None:
            self._key = ec.generate_private_key(ec.SECP256R1())
        else:
            loaded = serialization.load_pem_private_key(pem.encode(), password=None)
            if not isinstance(loaded, ec.EllipticCurvePrivateKey):
                raise ValueError("not an EC key")
            self._key = loaded
        numbers = self._key.public_key().public_numbers()
        self.jwk = {
            "kty": "EC",
            "crv": "P-256",
            "x": _b64(numbers.x.to_bytes(32, "big")),
            "y": _b64(numbers.y.to_bytes(32, "big")),
        }

    @property
    def pem(self) -> str:
        return self._key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()

    def proof(
        self, method: str, url: str, *, access_token: str | None = None, nonce: str | None = None
    ) -> str:
        """A fresh proof for one request (§4.2): its own ``jti``, the method and the URL without
        query or fragment, ``ath`` when a token goes with it, the server's nonce if it set one."""
        scheme, netloc, path, _query, _fragment = urlsplit(url)
        claims: dict[str, object] = {
            "jti": secrets.token_urlsafe(16),
            "htm": method,
            "htu": urlunsplit((scheme, netloc, path, "", "")),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = _b64(hashlib.sha256(access_token.encode("ascii")).digest())
        if nonce is not None:
            claims["nonce"] = nonce
        headers = {"typ": "dpop+jwt", "jwk": self.jwk}
        return jwt.encode(claims, self._key, algorithm=ALGORITHM, headers=headers)


class Nonces:
    """The last ``DPoP-Nonce`` each origin sent (§8, §9): sent with the next proof there."""

    def __init__(self) -> None:
        self._by_origin: dict[str, str] = {}

    @staticmethod
    def _origin(url: str) -> str:
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc}"

    def remember(self, response: httpx2.Response) -> None:
        nonce = response.headers.get("DPoP-Nonce")
        if nonce:
            self._by_origin[self._origin(str(response.request.url))] = nonce

    def get(self, url: str) -> str | None:
        return self._by_origin.get(self._origin(url))


def wants_nonce(response: httpx2.Response) -> bool:
    """The AS's ``400 use_dpop_nonce`` (§8) or the server's ``401`` challenge (§9), with the
    nonce to use."""
    if not response.headers.get("DPoP-Nonce"):
        return False
    if response.status_code == 401:
        return extract_field_from_www_auth(response, "error") == "use_dpop_nonce"
    if response.status_code == 400:
        try:
            return bool(json.loads(response.content).get("error") == "use_dpop_nonce")
        except (ValueError, AttributeError):
            return False
    return False


def token_from_reply(content: bytes) -> tuple[OAuthToken, bool]:
    """A token endpoint's reply as the SDK's model, and whether the token is DPoP-bound."""
    body = json.loads(content)
    bound = isinstance(body, dict) and str(body.get("token_type", "")).lower() == "dpop"
    if bound:
        body["token_type"] = "Bearer"  # the model's only type; the binding is returned
    return OAuthToken.model_validate(body), bound


async def send_proven(
    client: httpx2.AsyncClient, request: httpx2.Request, key: DpopKey, nonces: Nonces
) -> httpx2.Response:
    """Send a token request with a fresh proof; once more with the nonce the AS asks for (§8)."""
    url = str(request.url)
    for _attempt in range(2):
        request.headers["DPoP"] = key.proof(request.method, url, nonce=nonces.get(url))
        response = await client.send(request)
        nonces.remember(response)
        if not wants_nonce(response):
            break
    return response
