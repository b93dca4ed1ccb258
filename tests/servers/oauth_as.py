"""A real OAuth authorization server + protected MCP server on one 127.0.0.1 origin, in process.

Built on the SDK's server-side auth (``mcp.server.auth``, part of the mcp dependency: no new
library): ``MCPServer(auth_server_provider=…)`` mounts the AS metadata, ``/authorize``,
``/token``, ``/register``, ``/revoke``, the protected-resource metadata and a bearer-checked
``/mcp``; :class:`FakeAS` is the provider, consenting at once (no login page), with knobs:
``access_ttl`` (seconds), ``rotate`` (refresh-token rotation), ``fail_refresh`` (refresh answered
``invalid_grant``), ``skew`` (tokens rejected this many seconds early). Every grant is logged
in ``events``. :func:`headless_browser` plays the user. ``hide_s256`` drops
``code_challenge_methods_supported`` from the AS metadata. The SDK's ``/token`` has no
client-credentials grant, so :class:`_Extras` answers it: ``machine_secrets`` (client id ->
secret) and ``machine_keys`` (client id -> PEM public key, for a signed JWT assertion).
``refresh_outage``: the next this many grants that renew a token (refresh, client credentials)
are answered ``503`` (a transient failure of the AS), with ``Retry-After: outage_retry_after``
when that is set. ``build(registration_ttl=…)``: dynamic
registrations get a secret that expires after that many seconds (``client_secret_expires_at``),
enforced at ``/token`` by the SDK.
"""

from __future__ import annotations

import base64
import json
import logging
import secrets
import socket
import time
from typing import Any
from urllib.parse import parse_qs, unquote

import httpx2
import jwt
import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

# Prefixes of every token this AS issues: tests grep logs and events for them.
ACCESS_PREFIX, REFRESH_PREFIX = "at-", "rt-"


class FakeAS:
    """OAuthAuthorizationServerProvider that consents automatically."""

    def __init__(self, issuer: str, access_ttl: int = 30, rotate: bool = True) -> None:
        self.issuer, self.access_ttl, self.rotate = issuer, access_ttl, rotate
        self.fail_refresh, self.skew, self.hide_s256 = False, 0, False
        self.refresh_outage = 0
        self.outage_retry_after: int | None = None
        self.machine_secrets: dict[str, str] = {}
        self.machine_keys: dict[str, str] = {}
        self.legacy = False
        # GET /mcp (only the optional SSE stream) answered with this status before any
        # authorization check, as some servers do (404, 405): a login must not depend on it.
        self.get_status: int | None = None
        # JSON-RPC methods served without a login (notifications too, when any is): the 401
        # then comes to a later request of the session (a tool call), not to its first.
        self.anonymous: frozenset[str] = frozenset()
        # Workload identity: the JWTs a platform issued, accepted as jwt-bearer grants.
        self.workload_assertions: set[str] = set()
        # The enterprise identity provider (/idp/token): ID token -> ID-JAG it exchanges.
        self.id_tokens: dict[str, str] = {}
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.events: list[str] = []

    def count(self, word: str) -> int:
        return sum(1 for e in self.events if e.startswith(word))

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        client_info.scope = (
            "mcp admin"  # /authorize allows registered scopes only: room for step-up
        )
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self.events.append(f"register {client_info.token_endpoint_auth_method}")

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        code = secrets.token_urlsafe(20)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["mcp"],
            expires_at=time.time() + 60,
            client_id=client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.events.append(f"authorize scopes={' '.join(params.scopes or [])}")
        return construct_redirect_uri(
            str(params.redirect_uri),
            code=code,
            state=params.state,
            iss=None if self.legacy else self.issuer,  # no metadata: no RFC 9207
        )

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(
        self, client_id: str, scopes: list[str], resource: str | None, old: str | None
    ) -> OAuthToken:
        at = ACCESS_PREFIX + secrets.token_hex(8)
        rt = old or REFRESH_PREFIX + secrets.token_hex(8)
        self.access[at] = AccessToken(
            token=at,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + self.access_ttl,
            resource=resource,
        )
        self.refresh[rt] = RefreshToken(
            token=rt, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=at, expires_in=self.access_ttl, scope=" ".join(scopes), refresh_token=rt
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]
        self.events.append("token(code)")
        return self._issue(
            client.client_id or "", authorization_code.scopes, authorization_code.resource, None
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        if found is None:
            self.events.append("refresh -> invalid_grant (unknown or rotated)")
        return found

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        if self.fail_refresh:
            self.events.append("refresh -> invalid_grant (revoked)")
            raise TokenError("invalid_grant", "refresh token revoked")
        if self.rotate:
            del self.refresh[refresh_token.token]
        self.events.append("refresh")
        return self._issue(
            client.client_id or "",
            scopes or refresh_token.scopes,
            refresh_token.resource,
            None if self.rotate else refresh_token.token,
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at or 0) - self.skew < time.time():
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.events.append("revoke")
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


def listening_socket() -> socket.socket:
    """A bound, listening socket on a free 127.0.0.1 port: connections queue until serving."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


def build(
    port: int, *, legacy: bool = False, registration_ttl: int | None = None, **knobs: Any
) -> tuple[Any, FakeAS, str]:
    """(ASGI app, AS, MCP URL): tools ``whoami`` (scope mcp) and ``admin_tool``.

    ``legacy``: a 2025-03-26 server: no metadata at all (every well-known answers 404), so a
    client falls back to ``/authorize``, ``/token`` and ``/register`` at the origin and may omit
    ``resource``.
    """
    base = f"http://127.0.0.1:{port}"
    provider = FakeAS(base, **knobs)
    provider.legacy = legacy
    server = MCPServer(
        "protected",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            required_scopes=["mcp"],
            validate_token_resource=not legacy,
            client_registration_options=ClientRegistrationOptions(
                enabled=True,
                valid_scopes=["mcp", "admin"],
                client_secret_expiry_seconds=registration_ttl,
            ),
            revocation_options=RevocationOptions(enabled=True),
        ),
    )

    @server.tool()
    async def whoami() -> str:
        return "ok"

    @server.tool()
    async def admin_tool() -> str:
        return "admin ok"

    logging.getLogger().setLevel(logging.WARNING)  # MCPServer() switched root logging to INFO
    return (
        _Extras(server.streamable_http_app(host="127.0.0.1"), provider),
        provider,
        f"{base}/mcp",
    )


class _Extras:
    """ASGI wrapper: ``hide_s256``; the client-credentials grant at ``/token``."""

    def __init__(self, app: Any, provider: FakeAS) -> None:
        self.app, self.provider = app, provider

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        status = self.provider.get_status
        http_get = scope["type"] == "http" and scope["method"] == "GET"
        if status and http_get and scope["path"] == "/mcp":
            self.provider.events.append(f"GET -> {status}")
            return await _reply(send, status, {"error": "no SSE stream here"})
        if scope["type"] == "http" and scope["path"] == "/token" and scope["method"] == "POST":
            body = await _read_body(receive)
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            grant = form.get("grant_type", "")
            if grant in ("refresh_token", "client_credentials") and self.provider.refresh_outage:
                self.provider.refresh_outage -= 1
                self.provider.events.append(f"{grant.replace('_token', '')} -> 503")
                pause = self.provider.outage_retry_after
                extra = [] if pause is None else [(b"retry-after", str(pause).encode())]
                return await _reply(send, 503, {"error": "temporarily_unavailable"}, extra)
            basic = dict(scope["headers"]).get(b"authorization", b"")
            if grant == "client_credentials":
                return await _reply(send, *self._machine_token(form, basic))
            if grant == JWT_BEARER_GRANT:
                return await _reply(send, *self._jwt_bearer(form, basic))
            return await self.app(scope, _replay(body, receive), send)
        if scope["type"] == "http" and scope["path"] == "/idp/token":
            body = await _read_body(receive)
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            return await _reply(send, *self._token_exchange(form))
        if scope["type"] == "http" and scope["path"] == "/mcp" and scope["method"] == "POST":
            body = await _read_body(receive)
            if self._needs_admin(scope, body):
                return await self._insufficient_scope(send)
            if self.provider.anonymous and _method(body, self.provider.anonymous):
                scope = self._as_anyone(scope)
            return await self.app(scope, _replay(body, receive), send)
        await self._metadata(scope, receive, send)

    def _jwt_bearer(self, form: dict[str, str], basic: bytes) -> tuple[int, dict[str, Any]]:
        """RFC 7523: a workload's JWT, or an ID-JAG (with the client's Basic credentials)."""
        assertion = form.get("assertion", "")
        if assertion in self.provider.workload_assertions:
            self.provider.events.append(f"jwt-bearer workload client={form.get('client_id')}")
        elif assertion.startswith("jag-") and basic.startswith(b"Basic "):
            self.provider.events.append(f"jwt-bearer id-jag resource={form.get('resource')}")
        else:
            self.provider.events.append("jwt-bearer -> invalid_grant")
            return 400, {"error": "invalid_grant"}
        token = self.provider._issue("workload", ["mcp"], form.get("resource"), None)
        return 200, token.model_dump(exclude_none=True, exclude={"refresh_token"})

    def _token_exchange(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """The identity provider's RFC 8693 exchange: ID token -> ID-JAG for the audience."""
        subject = form.get("subject_token", "")
        if form.get("requested_token_type") != ID_JAG or subject not in self.provider.id_tokens:
            self.provider.events.append("idp -> invalid_grant")
            return 400, {"error": "invalid_grant"}
        self.provider.events.append(f"idp exchange audience={form.get('audience')}")
        jag = self.provider.id_tokens[subject]
        return 200, {"access_token": jag, "issued_token_type": ID_JAG, "token_type": "N_A"}

    def _as_anyone(self, scope: Any) -> Any:
        """``scope`` carrying a token of its own, if it carries none (``anonymous``)."""
        headers = dict(scope["headers"])
        if b"authorization" in headers:
            return scope
        resource = f"{self.provider.issuer}/mcp"
        token = self.provider._issue("anyone", ["mcp"], resource, None).access_token
        headers[b"authorization"] = f"Bearer {token}".encode()
        return {**scope, "headers": list(headers.items())}

    def _needs_admin(self, scope: Any, body: bytes) -> bool:
        """A tools/call of ``admin_tool`` with a token lacking the ``admin`` scope."""
        if b'"admin_tool"' not in body:
            return False
        bearer = dict(scope["headers"]).get(b"authorization", b"")[7:].decode()
        token = self.provider.access.get(bearer)
        return token is not None and "admin" not in token.scopes

    async def _insufficient_scope(self, send: Any) -> None:
        self.provider.events.append("403 insufficient_scope")
        challenge = (
            'Bearer error="insufficient_scope", scope="mcp admin", resource_metadata='
            f'"{self.provider.issuer}/.well-known/oauth-protected-resource/mcp"'
        )
        headers = [(b"www-authenticate", challenge.encode()), (b"content-length", b"0")]
        await send({"type": "http.response.start", "status": 403, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    def _machine_token(self, form: dict[str, str], basic: bytes) -> tuple[int, dict[str, Any]]:
        client_id, secret = form.get("client_id", ""), form.get("client_secret")
        via_header = basic.startswith(b"Basic ")  # client_secret_basic: every AS supports it
        if via_header:
            pair = base64.b64decode(basic[6:]).decode()
            client_id, secret = (unquote(part) for part in pair.split(":", 1))
        trusted = self.provider.machine_secrets.get(client_id) == secret
        key = self.provider.machine_keys.get(client_id)
        if key and form.get("client_assertion"):
            try:
                claims = jwt.decode(
                    form["client_assertion"],
                    key,
                    algorithms=["RS256"],
                    audience=self.provider.issuer,
                )
                trusted = claims["sub"] == client_id
            except jwt.PyJWTError:
                trusted = False
        if not trusted:
            self.provider.events.append("client_credentials -> invalid_client")
            return 401, {"error": "invalid_client"}
        how = "jwt" if form.get("client_assertion") else "basic" if via_header else "secret"
        self.provider.events.append(f"client_credentials {how} scope={form.get('scope')}")
        token = self.provider._issue(client_id, ["mcp"], form.get("resource"), None)
        return 200, token.model_dump(exclude_none=True, exclude={"refresh_token"})

    async def _metadata(self, scope: Any, receive: Any, send: Any) -> None:
        if self.provider.legacy and scope["type"] == "http" and "/.well-known/" in scope["path"]:
            return await _reply(send, 404, {"error": "not_found"})
        wanted = scope["type"] == "http" and scope["path"].startswith(
            "/.well-known/oauth-authorization-server"
        )
        if not (wanted and self.provider.hide_s256):
            return await self.app(scope, receive, send)
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(self.app)) as client:
            reply = await client.get(f"{self.provider.issuer}{scope['path']}")
        body = reply.json()
        body.pop("code_challenge_methods_supported", None)
        data = json.dumps(body).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(data)).encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": data})


def _method(body: bytes, among: frozenset[str]) -> bool:
    try:
        method = json.loads(body).get("method", "")
    except (ValueError, AttributeError):
        return False
    return bool(method in among or method.startswith("notifications/"))


async def _read_body(receive: Any) -> bytes:
    """A request's whole body (ASGI ``http.request`` messages until ``more_body`` is false)."""
    body, more = b"", True
    while more:
        message = await receive()
        body, more = body + message.get("body", b""), message.get("more_body", False)
    return body


def _replay(body: bytes, receive: Any) -> Any:
    sent = False

    async def replay() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _reply(
    send: Any, status: int, body: dict[str, Any], extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    headers += extra or []
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


async def serve(app: Any, sock: socket.socket) -> None:
    """Serve ``app`` on ``sock`` (already listening, so no start-up wait) until cancelled."""
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    await server.serve(sockets=[sock])


async def headless_browser(url: str) -> int:
    """Plays the user: follows the authorization URL's redirects to the loopback receiver."""
    async with httpx2.AsyncClient(follow_redirects=True, timeout=10) as browser:
        return (await browser.get(url)).status_code
