"""Where a login starts: from the server's answer to a real MCP request, never from a GET.

And how a pre-registered client authenticates at the token endpoint: from the authorization
server's metadata (``client_secret_basic`` unless only ``client_secret_post`` is offered),
or as the settings say. The official conformance suite covers the same ground against its own
servers (tests/conformance); these pin each class against the project's authorization server.
"""

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.shared.auth import OAuthClientInformationFull
from mework_client.aio import connect

from meworkd.mcp.auth import LoginFailed, ServerAuth, auth_file_for, login
from meworkd.mcp.auth.credentials import token_auth_method
from meworkd.mcp.auth.machine import machine_grant
from meworkd.settings import OAuthConfig
from tests.daemon_helpers import begin_turn, call_tool, start_daemon, text_of, wait_event
from tests.servers.oauth_as import FakeAS, build, headless_browser, listening_socket, serve

pytestmark = pytest.mark.anyio


@pytest.fixture
async def served(
    request: pytest.FixtureRequest,
) -> AsyncIterator[tuple[FakeAS, str, anyio.abc.TaskGroup]]:
    sock = listening_socket()
    app, auth_as, url = build(sock.getsockname()[1])
    with sock:
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve, app, sock)
            yield auth_as, url, tg
            tg.cancel_scope.cancel()


@pytest.mark.parametrize("get_status", [404, 405])
async def test_a_server_that_refuses_get_still_logs_in(
    served: tuple[FakeAS, str, anyio.abc.TaskGroup], short_tmp: Path, get_status: int
) -> None:
    auth_as, url, tg = served
    auth_as.get_status = get_status
    async with (
        start_daemon(short_tmp, {"hosted": {"url": url}}) as running,
        connect(running.socket) as client,
    ):
        await client.call("events.subscribe", {"topics": ["server.auth"]})
        before = await begin_turn(client, ["hosted"])
        assert before["failures"][0]["kind"] == "auth_required"
        pending = await wait_event(client, "server.auth", lambda e: "authorizationUrl" in e)
        tg.start_soon(headless_browser, pending["authorizationUrl"])
        await wait_event(client, "server.auth", lambda e: e["state"] == "authorized")
        turn = await begin_turn(client, ["hosted"], before["conversationId"])
        assert turn["failures"] == []
        assert text_of(await call_tool(client, turn, "hosted", "whoami")) == "ok"
        # An explicit login when logged in already: no browser, and still no GET needed.
        assert await client.call("servers.login", {"name": "hosted"}) == {"state": "authorized"}


async def test_a_401_to_a_tool_call_asks_for_a_login_too(
    served: tuple[FakeAS, str, anyio.abc.TaskGroup], short_tmp: Path
) -> None:
    """The session starts and lists its tools without a login; its first call meets the 401:
    the call says a login is needed (not a protocol error), and one starts at once."""
    auth_as, url, tg = served
    auth_as.anonymous = frozenset({"initialize", "tools/list"})
    async with (
        start_daemon(short_tmp, {"hosted": {"url": url}}) as running,
        connect(running.socket) as client,
    ):
        await client.call("events.subscribe", {"topics": ["server.auth"]})
        turn = await begin_turn(client, ["hosted"])
        assert turn["failures"] == []
        refused = await call_tool(client, turn, "hosted", "whoami")
        assert refused["isError"]
        assert "needs a login" in text_of(refused)
        pending = await wait_event(client, "server.auth", lambda e: "authorizationUrl" in e)
        tg.start_soon(headless_browser, pending["authorizationUrl"])
        await wait_event(client, "server.auth", lambda e: e["state"] == "authorized")
        assert text_of(await call_tool(client, turn, "hosted", "whoami")) == "ok"


async def test_an_explicit_login_before_any_session_probes_with_a_post(
    served: tuple[FakeAS, str, anyio.abc.TaskGroup], tmp_path: Path
) -> None:
    auth_as, url, tg = served
    auth_as.get_status = 405
    await _login(url, tmp_path, tg, None)
    assert "GET -> 405" not in auth_as.events
    assert auth_as.count("token(code)") == 1


@pytest.mark.parametrize(
    ("registered_as", "configured"),
    [("client_secret_basic", None), ("client_secret_post", "client_secret_post")],
)
async def test_a_pre_registered_client_authenticates_as_registered(
    served: tuple[FakeAS, str, anyio.abc.TaskGroup],
    tmp_path: Path,
    registered_as: str,
    configured: str | None,
) -> None:
    """This AS offers both methods and holds each client to the one it was registered with:
    basic is the default (RFC 8414), post is used when the settings say so."""
    auth_as, url, tg = served
    with listening_socket() as probe:
        port = probe.getsockname()[1]
    auth_as.clients["pre"] = OAuthClientInformationFull(
        client_id="pre",
        client_secret="pre-secret",
        redirect_uris=[f"http://127.0.0.1:{port}/callback"],  # type: ignore[list-item]
        token_endpoint_auth_method=registered_as,  # type: ignore[arg-type]
        scope="mcp",
    )
    oauth = OAuthConfig(
        client_id="pre",
        client_secret="pre-secret",
        redirect_port=port,
        token_endpoint_auth_method=configured,
    )
    auth = await _login(url, tmp_path, tg, oauth)
    assert auth.state["client"]["token_endpoint_auth_method"] == registered_as
    assert auth.status()["state"] == "authorized"


async def test_a_workload_logs_in_with_its_own_jwt(
    served: tuple[FakeAS, str, anyio.abc.TaskGroup], tmp_path: Path
) -> None:
    """grant jwt_bearer: the platform's token for this workload is the grant (RFC 7523), read
    afresh from assertionFile each time (platforms rotate it)."""
    auth_as, url, _tg = served
    token_file = tmp_path / "workload.jwt"
    token_file.write_text("workload-jwt-1\n")
    auth_as.workload_assertions.add("workload-jwt-1")
    oauth = OAuthConfig(grant="jwt_bearer", client_id="wl", assertion_file=str(token_file))
    await _machine_token(url, tmp_path, oauth)
    assert auth_as.events[-1] == "jwt-bearer workload client=wl"

    token_file.write_text("rotated-but-unknown")
    with pytest.raises(LoginFailed, match=r"refused the grant \(HTTP 400\) \(invalid_grant\)"):
        await _machine_token(url, tmp_path / "again", oauth)


async def test_an_enterprise_user_logs_in_through_the_identity_provider(
    served: tuple[FakeAS, str, anyio.abc.TaskGroup], tmp_path: Path
) -> None:
    """grant identity_assertion (SEP-990): the ID token becomes an ID-JAG at the identity
    provider (audience: this AS), which is the jwt-bearer grant at the AS."""
    auth_as, url, _tg = served
    auth_as.id_tokens["user-id-token"] = "jag-for-user"
    origin = url.removesuffix("/mcp")
    oauth = OAuthConfig(
        grant="identity_assertion",
        client_id="mework",
        client_secret="mework-secret",
        idp_token_endpoint=f"{origin}/idp/token",
        idp_client_id="idp-client",
        id_token="user-id-token",
    )
    await _machine_token(url, tmp_path, oauth)
    assert auth_as.events[-2:] == [
        f"idp exchange audience={origin}",
        f"jwt-bearer id-jag resource={url}",
    ]


def test_the_token_endpoint_method_follows_the_metadata() -> None:
    assert token_auth_method(False, ["client_secret_basic"]) == "none"
    assert token_auth_method(True, None) == "client_secret_basic"  # RFC 8414 §2 default
    assert token_auth_method(True, []) == "client_secret_basic"
    assert token_auth_method(True, ["client_secret_post"]) == "client_secret_post"
    both = ["client_secret_post", "client_secret_basic"]
    assert token_auth_method(True, both) == "client_secret_basic"
    assert token_auth_method(True, ["private_key_jwt"]) == "client_secret_basic"


async def _machine_token(url: str, state_dir: Path, oauth: OAuthConfig) -> None:
    async with httpx2.AsyncClient(timeout=10) as http:
        auth = ServerAuth(url, auth_file_for(state_dir, url), http)
        with anyio.fail_after(20):
            await machine_grant(auth, oauth)
        assert auth.status()["state"] == "authorized"


async def _login(
    url: str, state_dir: Path, tg: anyio.abc.TaskGroup, oauth: OAuthConfig | None
) -> ServerAuth:
    async with httpx2.AsyncClient(timeout=10) as http:
        auth = ServerAuth(url, auth_file_for(state_dir, url), http)

        async def open_browser(authorization_url: str) -> None:
            tg.start_soon(headless_browser, authorization_url)

        with anyio.fail_after(20):
            await login(auth, oauth, open_browser, wait_seconds=10)
        return auth
