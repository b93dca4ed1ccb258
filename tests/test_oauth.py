"""OAuth against a real authorization server (tests/servers/oauth_as.py) on 127.0.0.1.

Each test logs in through meworkd's login (the SDK's provider inside) with a headless browser,
then talks through real Streamable HTTP sessions carrying meworkd's BearerAuth. Expiry is
reached by moving the stored absolute expiry into the past (what time would do), never by
sleeping.
"""

import logging
import os
import stat
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import ClientSession
from mcp.shared.auth import OAuthClientInformationFull

from meworkd.mcp.auth import (
    BearerAuth,
    LoginFailed,
    LoginRequired,
    ServerAuth,
    auth_file_for,
    login,
)
from meworkd.mcp.auth.machine import machine_grant
from meworkd.mcp.http import HttpErrors, open_http
from meworkd.settings import OAuthConfig, ServerConfig
from tests.servers.oauth_as import FakeAS, build, headless_browser, listening_socket, serve

pytestmark = pytest.mark.anyio


@dataclass
class Rig:
    auth_as: FakeAS
    url: str
    state_dir: Path
    http: httpx2.AsyncClient
    tg: Any
    changes: list[str]

    def server_auth(self) -> ServerAuth:
        """A ServerAuth as the daemon builds it at start: from the state file."""
        return ServerAuth(
            self.url,
            auth_file_for(self.state_dir, self.url),
            self.http,
            on_change=lambda a: self.changes.append(a.phase),
        )

    async def login(self, auth: ServerAuth, oauth: OAuthConfig | None = None) -> list[str]:
        urls: list[str] = []

        async def open_browser(url: str) -> None:
            urls.append(url)
            self.tg.start_soon(headless_browser, url)

        with anyio.fail_after(20):
            await login(auth, oauth, open_browser, wait_seconds=10)
        return urls


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    sock = listening_socket()
    app, auth_as, url = build(sock.getsockname()[1], access_ttl=30, rotate=True)
    with sock:
        async with anyio.create_task_group() as tg, httpx2.AsyncClient(timeout=10) as http:
            tg.start_soon(serve, app, sock)
            yield Rig(auth_as, url, tmp_path, http, tg, [])
            tg.cancel_scope.cancel()


@asynccontextmanager
async def sessions(auth: ServerAuth, count: int) -> AsyncIterator[list[ClientSession]]:
    """``count`` real MCP sessions of the server (one per conversation), sharing ``auth``."""
    config = ServerConfig(type="streamable_http", url=auth.server_url)
    async with AsyncExitStack() as stack:
        out = []
        for _ in range(count):
            read, write = await stack.enter_async_context(
                open_http(config, HttpErrors(), auth=BearerAuth(auth))
            )
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            out.append(session)
        yield out


async def call_all(sessions_: list[ClientSession], per_session: int) -> list[str]:
    results: list[str] = []

    async def one(session: ClientSession) -> None:
        try:
            reply = await session.call_tool("whoami", {})
            results.append("error" if reply.is_error else "ok")
        except Exception:
            results.append("failed")

    async with anyio.create_task_group() as tg:
        for session in sessions_:
            for _ in range(per_session):
                tg.start_soon(one, session)
    return results


def expire(auth: ServerAuth) -> None:
    auth.state["tokens"]["expires_at"] = time.time() - 1
    auth.save()


async def test_login_dcr_persists_0600_and_one_refresh_for_20_calls(rig: Rig) -> None:
    auth = rig.server_auth()
    urls = await rig.login(auth)
    assert len(urls) == 1
    assert "code_challenge_method=S256" in urls[0]
    assert rig.auth_as.events == [
        "register client_secret_post",
        "authorize scopes=mcp",
        "token(code)",
    ]
    assert auth.status()["state"] == "authorized"
    assert rig.changes == ["pending", "authorized"]
    mode = stat.S_IMODE(os.stat(auth.file.path).st_mode)
    assert mode == 0o600
    old_refresh = auth.state["tokens"]["refresh_token"]
    async with sessions(auth, 10) as open_sessions:
        expire(auth)
        rig.auth_as.events.clear()
        assert await call_all(open_sessions, 2) == ["ok"] * 20
    # Single-flight: 20 concurrent calls over 10 conversations, one refresh, token rotated.
    assert rig.auth_as.events == ["refresh"]
    assert auth.state["tokens"]["refresh_token"] != old_refresh
    assert old_refresh not in rig.auth_as.refresh  # the AS killed the old one


async def test_restart_refreshes_before_any_browser(rig: Rig) -> None:
    await rig.login(rig.server_auth())
    stale = rig.server_auth()
    expire(stale)
    restarted = rig.server_auth()  # SDK gap G2: its provider forgets the expiry and logs in again
    rig.auth_as.events.clear()
    async with sessions(restarted, 1) as (session,):
        assert (await session.call_tool("whoami", {})).is_error is False
    assert rig.auth_as.events == ["refresh"]


async def test_401_refreshes_first_and_invalid_grant_clears_once(rig: Rig) -> None:
    auth = rig.server_auth()
    await rig.login(auth)
    async with sessions(auth, 3) as open_sessions:
        rig.auth_as.access.clear()  # server-side revocation: the next request gets 401
        rig.auth_as.events.clear()
        assert await call_all(open_sessions, 2) == ["ok"] * 6
        assert rig.auth_as.events == ["refresh"]  # SDK gap G3: its provider would log in

        rig.auth_as.fail_refresh = True
        rig.auth_as.access.clear()
        rig.auth_as.events.clear()
        results = await call_all(open_sessions, 2)
        # Failed calls, live sessions, no browser (SDK gap G7), one refresh attempt, no loop.
        assert "ok" not in results
        assert rig.auth_as.events == ["refresh -> invalid_grant (revoked)"]
        assert auth.status()["state"] == "required"
        assert "tokens" not in auth.file.load()
        assert await call_all(open_sessions, 1) != ["ok"] * 3
        assert rig.auth_as.count("refresh") == 1

        rig.auth_as.fail_refresh = False
        rig.auth_as.events.clear()
        await rig.login(auth)
        assert "register" not in " ".join(rig.auth_as.events)  # the registration is reused
        assert await call_all(open_sessions, 1) == ["ok"] * 3  # re-login reaches live sessions


async def test_forgotten_registration_registers_again(rig: Rig) -> None:
    auth = rig.server_auth()
    await rig.login(auth)
    rig.auth_as.clients.clear()  # the AS forgot the client: refresh answers invalid_client
    with pytest.raises(LoginRequired):
        await auth.token(rejected=auth.current())
    assert "client" not in auth.state  # SDK gap G8: its provider keeps the dead client
    rig.auth_as.events.clear()
    await rig.login(auth)
    assert rig.auth_as.events[0] == "register client_secret_post"


async def test_registration_for_another_port_registers_again(rig: Rig) -> None:
    auth = rig.server_auth()
    await rig.login(auth)
    with listening_socket() as busy:  # the registered port is taken now... any other port
        port = busy.getsockname()[1]
    rig.auth_as.events.clear()
    await rig.login(auth, OAuthConfig(redirect_port=port))
    assert rig.auth_as.events[0] == "register client_secret_post"  # SDK gap G9


async def test_pre_registered_client_and_configured_scope(rig: Rig) -> None:
    with listening_socket() as probe:
        port = probe.getsockname()[1]
    redirect = f"http://127.0.0.1:{port}/callback"
    rig.auth_as.clients["pre-1"] = OAuthClientInformationFull(
        client_id="pre-1",
        client_secret="pre-secret-value",
        redirect_uris=[redirect],  # type: ignore[list-item]
        token_endpoint_auth_method="client_secret_post",
        scope="mcp admin",
    )
    auth = rig.server_auth()
    oauth = OAuthConfig(
        client_id="pre-1",
        client_secret="pre-secret-value",
        scopes=("mcp", "admin"),
        redirect_port=port,
        token_endpoint_auth_method="client_secret_post",  # as registered; this AS offers both
    )
    await rig.login(auth, oauth)
    # No registration; the configured scope reached /authorize (SDK gap G11 overwrites it).
    assert rig.auth_as.events == ["authorize scopes=mcp admin", "token(code)"]
    assert auth.status()["scopes"] == ["mcp", "admin"]


async def test_as_without_s256_is_refused_before_any_url(rig: Rig) -> None:
    rig.auth_as.hide_s256 = True
    auth = rig.server_auth()
    with pytest.raises(LoginFailed, match="S256"):
        await rig.login(auth)  # SDK gap G1: its provider goes on without PKCE support
    assert rig.changes == ["failed"]
    assert "authorize" not in " ".join(rig.auth_as.events)
    assert auth.status() == {
        "state": "failed",
        "error": "the authorization server does not offer PKCE with S256; refused",
    }


async def test_busy_redirect_port_is_a_clear_error(rig: Rig) -> None:
    with listening_socket() as busy, pytest.raises(LoginFailed, match="in use"):
        await rig.login(rig.server_auth(), OAuthConfig(redirect_port=busy.getsockname()[1]))


async def test_logout_revokes_and_no_token_in_logs(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    auth = rig.server_auth()
    await rig.login(auth)
    async with sessions(auth, 1) as (session,):
        expire(auth)
        await session.call_tool("whoami", {})
    status = repr(auth.status()) + repr(rig.changes)
    assert await auth.logout() is True
    assert rig.auth_as.count("revoke") == 2
    assert auth.status() == {"state": "none"}
    assert "tokens" not in auth.file.load()
    for text in (caplog.text, status):
        assert "at-" not in text
        assert "rt-" not in text


def _machine(auth: ServerAuth, oauth: OAuthConfig) -> None:
    """As the registry wires a client_credentials entry."""

    async def run() -> None:
        await machine_grant(auth, oauth)

    auth.machine = run


async def test_client_credentials_with_secret_and_with_private_key_jwt(rig: Rig) -> None:
    rig.auth_as.machine_secrets["svc"] = "svc-secret-value"
    auth = rig.server_auth()
    _machine(
        auth,
        OAuthConfig(
            grant="client_credentials",
            client_id="svc",
            client_secret="svc-secret-value",
            scopes=("mcp",),
        ),
    )
    async with sessions(auth, 1) as (session,):
        assert (await session.call_tool("whoami", {})).is_error is False
        expire(auth)  # no refresh token: the grant runs again, no person involved
        assert (await session.call_tool("whoami", {})).is_error is False
    # client_secret_basic: this AS's metadata offers both methods (RFC 8414's default).
    assert rig.auth_as.events == ["client_credentials basic scope=mcp"] * 2

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    rig.auth_as.machine_keys["signer"] = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    signer = ServerAuth(rig.url, auth_file_for(rig.state_dir / "jwt", rig.url), rig.http)
    _machine(signer, OAuthConfig(grant="client_credentials", client_id="signer", private_key=pem))
    assert await signer.token()
    assert rig.auth_as.events[-1] == "client_credentials jwt scope=None"

    refused = ServerAuth(rig.url, auth_file_for(rig.state_dir / "bad", rig.url), rig.http)
    _machine(
        refused, OAuthConfig(grant="client_credentials", client_id="svc", client_secret="wrong")
    )
    with pytest.raises(LoginFailed, match="refused the grant"):
        await refused.token()


async def test_step_up_on_403_insufficient_scope_retries_once(rig: Rig) -> None:
    auth = rig.server_auth()
    await rig.login(auth)
    urls: list[str] = []

    def request_login() -> anyio.Event:
        """What the registry does: a login with the union scope; here the browser is headless."""
        done = anyio.Event()

        async def run() -> None:
            try:
                urls.extend(await rig.login(auth))
            finally:
                done.set()

        rig.tg.start_soon(run)
        return done

    auth.request_login = request_login
    rig.auth_as.events.clear()
    async with sessions(auth, 1) as (session,):
        with anyio.fail_after(20):  # the call's own timeout bounds the step-up
            reply = await session.call_tool("admin_tool", {})
    assert reply.is_error is False
    assert rig.auth_as.events == [
        "403 insufficient_scope",
        "authorize scopes=mcp admin",  # the union of granted and challenged scopes
        "token(code)",
    ]
    assert "pending" in rig.changes
    assert auth.status()["scopes"] == ["mcp", "admin"]


async def test_metadata_less_2025_03_26_server(tmp_path: Path) -> None:
    sock = listening_socket()
    app, auth_as, url = build(sock.getsockname()[1], legacy=True)
    with sock:
        async with anyio.create_task_group() as tg, httpx2.AsyncClient(timeout=10) as http:
            tg.start_soon(serve, app, sock)
            rig = Rig(auth_as, url, tmp_path, http, tg, [])
            auth = rig.server_auth()
            await rig.login(auth)  # no metadata: S256 is the 2025-03-26 default, not refused
            assert auth_as.events == [
                "register client_secret_post",
                "authorize scopes=",
                "token(code)",
            ]
            base = url.removesuffix("/mcp")
            assert auth.state["as"]["token_endpoint"] == f"{base}/token"
            expire(auth)
            async with sessions(auth, 1) as (session,):
                assert (await session.call_tool("whoami", {})).is_error is False
            assert auth_as.events[-1] == "refresh"
            tg.cancel_scope.cancel()
