"""DPoP (RFC 9449) proofs as a server checks them: signature by the embedded key, claims, nonce.

End to end, the official conformance suite's ``auth/dpop`` and ``auth/dpop-nonce`` scenarios
judge meworkd's token requests and MCP requests (tests/conformance); these pin the pieces.
"""

import base64
import hashlib
import json
from pathlib import Path

import httpx2
import jwt
import pytest

from meworkd.mcp.auth import ServerAuth, auth_file_for
from meworkd.mcp.auth.dpop import DpopKey, Nonces, token_from_reply, wants_nonce

URL = "https://mcp.example.com/mcp?x=1#frag"


def verified(proof: str) -> tuple[dict[str, object], dict[str, object]]:
    """(header, claims) of ``proof``, its signature checked with the key it names, as a server
    does (§4.3): typ dpop+jwt, ES256, a public JWK only."""
    header = jwt.get_unverified_header(proof)
    assert header["typ"] == "dpop+jwt"
    assert header["alg"] == "ES256"
    assert set(header["jwk"]) == {"kty", "crv", "x", "y"}  # no private part ("d")
    key = jwt.PyJWK(header["jwk"], algorithm="ES256")
    return header, jwt.decode(proof, key.key, algorithms=["ES256"])


def test_a_proof_names_the_request_and_is_fresh_each_time() -> None:
    key = DpopKey()
    _header, claims = verified(key.proof("POST", URL))
    assert claims["htm"] == "POST"
    assert claims["htu"] == "https://mcp.example.com/mcp"  # no query or fragment (§4.2)
    assert "ath" not in claims
    assert "nonce" not in claims
    _h, again = verified(key.proof("POST", URL))
    assert again["jti"] != claims["jti"]


def test_a_proof_for_a_token_carries_its_hash_and_the_nonce() -> None:
    _header, claims = verified(DpopKey().proof("GET", URL, access_token="tok", nonce="n-1"))
    digest = base64.urlsafe_b64encode(hashlib.sha256(b"tok").digest()).rstrip(b"=").decode()
    assert claims["ath"] == digest
    assert claims["nonce"] == "n-1"


def test_the_key_survives_a_restart_in_the_login_file(tmp_path: Path) -> None:
    key = DpopKey()
    again = DpopKey(key.pem)
    assert again.jwk == key.jwk
    with pytest.raises(ValueError, match="not an EC key"):
        DpopKey(_rsa_pem())


def test_a_nonce_is_asked_for_at_the_token_endpoint_and_by_the_server() -> None:
    request = httpx2.Request("POST", "https://as.example.com/token")
    as_asks = httpx2.Response(
        400, json={"error": "use_dpop_nonce"}, headers={"DPoP-Nonce": "a1"}, request=request
    )
    server_asks = httpx2.Response(
        401,
        headers={"DPoP-Nonce": "s1", "WWW-Authenticate": 'DPoP error="use_dpop_nonce"'},
        request=httpx2.Request("POST", "https://mcp.example.com/mcp"),
    )
    no_nonce = httpx2.Response(400, json={"error": "use_dpop_nonce"}, request=request)
    assert wants_nonce(as_asks)
    assert wants_nonce(server_asks)
    assert not wants_nonce(no_nonce)
    assert not wants_nonce(httpx2.Response(400, content=b"<html>", request=request))
    nonces = Nonces()
    nonces.remember(as_asks)
    nonces.remember(server_asks)
    assert nonces.get("https://as.example.com/other") == "a1"  # per origin
    assert nonces.get("https://mcp.example.com/mcp") == "s1"


def test_a_dpop_token_reply_is_read_with_its_binding() -> None:
    token, bound = token_from_reply(
        json.dumps({"access_token": "a", "token_type": "DPoP"}).encode()
    )
    assert (token.access_token, bound) == ("a", True)
    token, bound = token_from_reply(b'{"access_token": "b", "token_type": "bearer"}')
    assert (token.access_token, bound) == ("b", False)


@pytest.mark.anyio
async def test_a_bound_token_goes_with_the_dpop_scheme_and_a_proof(tmp_path: Path) -> None:
    async with httpx2.AsyncClient() as http:
        auth = ServerAuth("https://mcp.example.com/mcp", auth_file_for(tmp_path, "u"), http)
        token, bound = token_from_reply(b'{"access_token": "tok-1", "token_type": "DPoP"}')
        auth.dpop_key()
        auth.store_tokens(token, bound=bound)
        request = httpx2.Request("POST", "https://mcp.example.com/mcp")
        auth.present(request, "tok-1")
        assert request.headers["Authorization"] == "DPoP tok-1"
        _header, claims = verified(request.headers["DPoP"])
        assert claims["htm"] == "POST"
        # Kept across a restart: the key and the binding are in the 0600 file.
        again = ServerAuth("https://mcp.example.com/mcp", auth_file_for(tmp_path, "u"), http)
        assert again.bound
        assert again.dpop is not None
        assert again.dpop.jwk == auth.dpop_key().jwk


def _rsa_pem() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
