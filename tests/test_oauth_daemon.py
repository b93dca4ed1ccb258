"""OAuth through the real daemon: servers.login/logout, the auth field, server.auth events,
a turn before and after the login (the AS of tests/servers/oauth_as.py, a headless browser)."""

import sys
from pathlib import Path

import anyio
import pytest
from mework_client.aio import AsyncClient, connect

from tests.daemon_helpers import begin_turn, call_tool, start_daemon, text_of, wait_event
from tests.servers.oauth_as import FakeAS, build, headless_browser, listening_socket, serve

pytestmark = pytest.mark.anyio


async def test_login_turn_logout(short_tmp: Path) -> None:
    sock = listening_socket()
    app, auth_as, url = build(sock.getsockname()[1], access_ttl=30)
    with sock:
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve, app, sock)
            async with (
                start_daemon(short_tmp, {"hosted": {"url": url}}) as running,
                connect(running.socket) as client,
            ):
                await _scenario(client, auth_as, tg)
                await _ctl_login_over_ssh(client, running.socket, tg)
            tg.cancel_scope.cancel()


async def _scenario(client: AsyncClient, auth_as: FakeAS, tg: anyio.abc.TaskGroup) -> None:
    await client.call("events.subscribe", {"topics": ["server.auth"]})
    before = await begin_turn(client, ["hosted"])
    assert before["failures"][0]["kind"] == "auth_required"
    # The turn did not wait, but a fresh URL went out at once.
    fresh = await wait_event(client, "server.auth", lambda e: "authorizationUrl" in e)
    assert fresh["name"] == "hosted"
    assert fresh["state"] == "pending"
    assert (await client.call("servers.get", {"name": "hosted"}))["auth"]["state"] == "pending"

    # servers.login joins the login already waiting for the browser.
    started = await client.call("servers.login", {"name": "hosted"})
    assert started == {"state": "pending", "authorizationUrl": fresh["authorizationUrl"]}
    assert "code_challenge_method=S256" in started["authorizationUrl"]
    tg.start_soon(headless_browser, started["authorizationUrl"])
    await wait_event(client, "server.auth", lambda e: e["state"] == "authorized")
    shown = (await client.call("servers.list"))["servers"][0]["auth"]
    assert shown["state"] == "authorized"
    assert shown["scopes"] == ["mcp"]
    assert "expiresAt" in shown

    # Logged in already: no browser step.
    assert await client.call("servers.login", {"name": "hosted"}) == {"state": "authorized"}
    turn = await begin_turn(client, ["hosted"], before["conversationId"])
    assert turn["failures"] == []
    assert text_of(await call_tool(client, turn, "hosted", "whoami")) == "ok"

    assert await client.call("servers.logout", {"name": "hosted"}) == {"revoked": True}
    assert auth_as.count("revoke") == 2
    gone = await client.call("servers.get", {"name": "hosted", "reveal": True})
    assert gone["auth"] == {"state": "none"}
    assert "at-" not in repr(gone)
    assert "rt-" not in repr(gone)


async def _ctl_login_over_ssh(client: AsyncClient, socket: Path, tg: anyio.abc.TaskGroup) -> None:
    """meworkctl servers login --no-browser --redirect-port: the URL on stderr, success once
    the (headless) browser came back; the port is kept in the entry."""
    with listening_socket() as probe:
        port = probe.getsockname()[1]
    meworkctl = Path(sys.executable).parent / "meworkctl"
    argv = [str(meworkctl), "--socket", str(socket), "servers", "login", "hosted"]
    async with await anyio.open_process(
        [*argv, "--no-browser", "--redirect-port", str(port)]
    ) as proc:
        try:
            await _drive_ctl(proc, port, tg)
        except BaseException:
            proc.kill()  # else leaving the block would wait for it
            raise
    entry = (await client.call("servers.get", {"name": "hosted"}))["server"]
    assert entry["oauth"] == {"redirectPort": port}


async def _drive_ctl(proc: anyio.abc.Process, port: int, tg: anyio.abc.TaskGroup) -> None:
    assert proc.stderr is not None
    assert proc.stdout is not None
    seen = b""
    with anyio.fail_after(20):
        while b"/authorize?" not in seen or not seen.endswith(b"\n"):
            seen += await proc.stderr.receive()
        url = next(w for w in seen.decode().split() if "/authorize?" in w)
        assert f"127.0.0.1%3A{port}%2Fcallback" in url
        tg.start_soon(headless_browser, url)
        assert await proc.wait() == 0
    assert b"hosted: logged in" in await proc.stdout.receive()
