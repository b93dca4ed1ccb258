"""How meworkd's client authenticates at a token endpoint: which method, and the request parts.

One place for the choice (RFC 8414's default when the metadata says nothing) and for applying
it, shared by the login, refreshes, revocations and the grants with no person.
"""

import base64
from collections.abc import Sequence
from urllib.parse import quote

__all__ = ["secret_authentication", "token_auth_method"]


def token_auth_method(has_secret: bool, supported: Sequence[str] | None) -> str:
    """How a client with a secret authenticates at the token endpoint when nothing else says
    so: ``client_secret_basic``, the default of an AS whose metadata lists no methods (RFC
    8414 §2), unless only ``client_secret_post`` is offered; ``none`` without a secret."""
    if not has_secret:
        return "none"
    offered = supported or ("client_secret_basic",)
    if "client_secret_basic" not in offered and "client_secret_post" in offered:
        return "client_secret_post"
    return "client_secret_basic"


def secret_authentication(
    method: str, client_id: str, secret: str | None, data: dict[str, str]
) -> dict[str, str]:
    """Authenticate ``client_id`` by ``method``: the headers to send; ``data`` (the form)
    gains what goes in the body."""
    if method == "client_secret_basic" and secret:
        pair = f"{quote(client_id, safe='')}:{quote(secret, safe='')}"  # RFC 6749 §2.3.1
        return {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}
    data["client_id"] = client_id
    if secret and method != "none":
        data["client_secret"] = secret
    return {}
