"""How meworkd reads an authorization server's answers: OAuth error codes (RFC 6749 §5.2),
which failures are passing (worth a retry), ``Retry-After``, and a registration's expiry; and
the challenge a server answered a session's request with."""

import time
from dataclasses import dataclass
from typing import Any

import httpx2

__all__ = ["Challenge", "oauth_error", "registration_expired", "retry_after", "transient_reply"]

_TRANSIENT_ERRORS = ("temporarily_unavailable", "server_error")  # RFC 6749 codes worth a retry


def registration_expired(client: dict[str, Any], within: float = 0.0) -> bool:
    """Whether a stored registration's secret expires within ``within`` seconds (RFC 7591:
    ``client_secret_expires_at`` 0 or absent means never; a client without a secret has none)."""
    expires_at = client.get("client_secret_expires_at")
    if not client.get("client_secret") or not expires_at:
        return False
    return float(expires_at) <= time.time() + within


def transient_reply(response: httpx2.Response) -> bool:
    """A token endpoint reply worth another try: 5xx, 429, or an RFC 6749 transient code."""
    if response.status_code >= 500 or response.status_code == 429:
        return True
    return response.status_code != 200 and oauth_error(response) in _TRANSIENT_ERRORS


def retry_after(response: httpx2.Response) -> float | None:
    """A ``Retry-After`` in seconds (RFC 9110; its HTTP-date form is not used by token
    endpoints in practice and is ignored)."""
    value = response.headers.get("retry-after", "").strip()
    return float(value) if value.isdigit() else None


def oauth_error(response: httpx2.Response) -> str | None:
    """The ``error`` code of an OAuth error reply (RFC 6749 §5.2), if it has one."""
    if not response.headers.get("content-type", "").startswith("application/json"):
        return None
    try:
        body = response.json()
    except ValueError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, str) else None


@dataclass(frozen=True, slots=True)
class Challenge:
    """What the server answered a session's real request when it asked for a login.

    A login starts from it (the SDK reads the ``WWW-Authenticate`` parameters: resource
    metadata, scope, error), so it never depends on how the server treats some other request.
    """

    status: int  # 401, or 403 with insufficient_scope
    www_authenticate: str | None
    protocol_version: str | None  # the MCP-Protocol-Version that request carried
