"""OAuth when the authorization server misbehaves (issue 16 follow-ups), against the real AS of
tests/servers/oauth_as.py: a refresh that meets a 503 or a refused connection is retried with
a bounded backoff and never costs the login; a registration whose secret has expired
(``client_secret_expires_at``) is registered anew rather than presented.

As in test_oauth.py, expiry is reached by moving the stored absolute time into the past (what
time would do), never by sleeping; the backoff's waits are shortened to hundredths of a second.
"""

import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx2
import pytest

from meworkd.mcp.auth import BearerAuth, LoginRequired, RefreshUnavailable, ServerAuth
from meworkd.mcp.auth.machine import machine_grant
from meworkd.settings import OAuthConfig
from tests.servers.oauth_as import build, listening_socket, serve
from tests.test_oauth import Rig, call_all, expire, sessions

pytestmark = pytest.mark.anyio

QUICK_BACKOFF = (0.01, 0.02, 0.04)


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    sock = listening_socket()
    # Registrations expire after an hour: the tests move that moment into the past.
    app, auth_as, url = build(sock.getsockname()[1], access_ttl=30, registration_ttl=3600)
    with sock:
        async with anyio.create_task_group() as tg, httpx2.AsyncClient(timeout=10) as http:
            tg.start_soon(serve, app, sock)
            yield Rig(auth_as, url, tmp_path, http, tg, [])
            tg.cancel_scope.cancel()


async def logged_in(rig: Rig) -> ServerAuth:
    auth = rig.server_auth()
    auth.retry_delays = QUICK_BACKOFF
    await rig.login(auth)
    rig.auth_as.events.clear()
    rig.changes.clear()
    return auth


async def test_a_brief_outage_is_ridden_out_by_the_backoff(rig: Rig) -> None:
    auth = await logged_in(rig)
    async with sessions(auth, 2) as open_sessions:
        expire(auth)
        rig.auth_as.refresh_outage = 2
        assert await call_all(open_sessions, 2) == ["ok"] * 4
    # One refresh for the four calls, tried three times: two 503s, then success.
    assert rig.auth_as.events == ["refresh -> 503", "refresh -> 503", "refresh"]
    assert auth.status()["state"] == "authorized"
    assert "error" not in auth.status()
    assert "required" not in rig.changes


async def test_a_long_outage_keeps_the_login_and_spares_the_as(rig: Rig) -> None:
    auth = await logged_in(rig)
    refresh_token = auth.state["tokens"]["refresh_token"]
    async with sessions(auth, 3) as open_sessions:
        expire(auth)
        rig.auth_as.access.clear()  # the AS's copy expired too: the server answers 401
        rig.auth_as.refresh_outage = 1000
        results = await call_all(open_sessions, 2)
        assert "ok" not in results
        # Six calls, one refresh given up after four tries; the rest waited out the pause.
        assert rig.auth_as.events == ["refresh -> 503"] * (len(QUICK_BACKOFF) + 1)
        assert await call_all(open_sessions, 1) != ["ok"] * 3
        assert rig.auth_as.count("refresh") == len(QUICK_BACKOFF) + 1
        # Not a logout: the tokens are kept (on disk too), no login was started.
        assert auth.file.load()["tokens"]["refresh_token"] == refresh_token
        status = auth.status()
        assert status["state"] == "authorized"
        assert "HTTP 503" in status["error"]
        assert "the login is kept" in status["error"]
        assert "required" not in rig.changes
        assert "pending" not in rig.changes

        rig.auth_as.refresh_outage = 0
        auth.retry_not_before = 0.0  # the pause is over (what time would do)
        assert await call_all(open_sessions, 1) == ["ok"] * 3  # the same sessions recover
    assert rig.auth_as.events[-1] == "refresh"
    assert "error" not in auth.status()


async def test_retry_after_is_honoured(rig: Rig) -> None:
    auth = await logged_in(rig)
    rig.auth_as.refresh_outage = 1000
    rig.auth_as.outage_retry_after = 120  # longer than any wait of the backoff
    expire(auth)
    with pytest.raises(RefreshUnavailable):
        await auth.token()
    assert rig.auth_as.events == ["refresh -> 503"]  # asked to wait: not tried again at once
    assert auth.retry_not_before - time.monotonic() > 100  # paused as asked, not 30 s


async def test_an_unreachable_token_endpoint_keeps_the_login(rig: Rig) -> None:
    auth = await logged_in(rig)
    with listening_socket() as closed:
        port = closed.getsockname()[1]
    auth.state["as"]["token_endpoint"] = f"http://127.0.0.1:{port}/token"  # refused now
    async with sessions(auth, 1) as (session,):
        # Due for an early refresh but still valid: the refresh fails, the token still works.
        auth.state["tokens"]["expires_at"] = time.time() + 2
        assert (await session.call_tool("whoami", {})).is_error is False
        assert "unreachable (ConnectError)" in auth.status()["error"]
        expire(auth)
        with pytest.raises(Exception, match="unreachable"):
            await auth.token()  # past its expiry and the AS paused: said plainly
    assert auth.file.load()["tokens"]
    assert auth.status()["state"] == "authorized"


async def test_the_backoff_stays_within_the_callers_timeout(rig: Rig) -> None:
    auth = await logged_in(rig)
    auth.retry_delays = (3600.0,)  # a wait no caller would sit out
    rig.auth_as.refresh_outage = 1000
    expire(auth)
    with anyio.move_on_after(0.5) as bounded:
        await auth.token()
    assert bounded.cancelled_caught
    assert rig.auth_as.events == ["refresh -> 503"]
    assert auth.file.load()["tokens"]
    # The next caller (a turn after the timed-out one) does not start over at the AS: the
    # interrupted wait still holds, and it fails at once with the reason.
    with anyio.fail_after(10), pytest.raises(RefreshUnavailable, match="HTTP 503"):
        await auth.token()
    assert rig.auth_as.events == ["refresh -> 503"]
    rig.auth_as.refresh_outage = 0
    auth.retry_not_before = 0.0  # the wait is over (what time would do)
    with anyio.fail_after(10):
        assert await auth.token()  # the lock was let go: the next caller refreshes
    assert rig.auth_as.events[-1] == "refresh"


async def test_client_credentials_ride_out_an_outage_too(rig: Rig) -> None:
    rig.auth_as.machine_secrets["svc"] = "svc-secret-value"
    auth = rig.server_auth()
    auth.retry_delays = QUICK_BACKOFF
    oauth = OAuthConfig(
        grant="client_credentials", client_id="svc", client_secret="svc-secret-value"
    )

    async def grant() -> None:
        await machine_grant(auth, oauth)

    auth.machine = grant  # as the registry wires a client_credentials entry
    rig.auth_as.refresh_outage = 2
    assert await auth.token()
    assert rig.auth_as.events == [
        "client_credentials -> 503",
        "client_credentials -> 503",
        "client_credentials basic scope=None",
    ]
    rig.auth_as.refresh_outage = 1000
    rig.auth_as.events.clear()
    expire(auth)
    with pytest.raises(RefreshUnavailable, match="HTTP 503"):
        await auth.token()
    assert rig.auth_as.events == ["client_credentials -> 503"] * (len(QUICK_BACKOFF) + 1)
    assert auth.status()["state"] == "authorized"  # not "failed": the credentials are fine
    assert BearerAuth(auth).unavailable() == auth.status()["error"]


def expire_registration(rig: Rig, auth: ServerAuth) -> None:
    """The registration's secret expiry passes, for the AS and for meworkd."""
    past = int(time.time()) - 1
    client_id = auth.state["client"]["client_id"]
    rig.auth_as.clients[client_id].client_secret_expires_at = past
    auth.state["client"]["client_secret_expires_at"] = past
    auth.save()


async def test_an_expired_registration_is_not_presented_for_a_refresh(rig: Rig) -> None:
    auth = await logged_in(rig)
    assert auth.state["client"]["client_secret_expires_at"] > time.time()
    expire_registration(rig, auth)
    expire(auth)
    with pytest.raises(LoginRequired, match="client registration expired"):
        await auth.token()
    assert rig.auth_as.events == []  # nothing sent with the dead secret
    assert auth.status() == {
        "state": "required",
        "error": "the client registration expired; log in again to register anew",
    }
    assert "client" not in auth.file.load()
    await rig.login(auth)
    assert rig.auth_as.events[0] == "register client_secret_post"
    async with sessions(auth, 1) as (session,):
        assert (await session.call_tool("whoami", {})).is_error is False


async def test_an_expired_registration_is_renewed_before_a_login(rig: Rig) -> None:
    auth = await logged_in(rig)
    old_client = auth.state["client"]["client_id"]
    await auth.logout()
    expire_registration(rig, auth)
    rig.auth_as.events.clear()
    # With the SDK's provider alone the old client goes on and /token refuses the secret.
    await rig.login(auth)
    assert rig.auth_as.events == [
        "register client_secret_post",
        "authorize scopes=mcp",
        "token(code)",
    ]
    assert auth.state["client"]["client_id"] != old_client
    assert auth.status()["state"] == "authorized"
