"""A server's stored OAuth login through the real daemon and the real AS of
tests/servers/oauth_as.py (issue 16 follow-ups): an outage of the AS and the entry's renaming
and removal.

An outage makes a turn's failure ``auth_unavailable`` and keeps the login. servers.rename keeps
the login (it is the same server); a hand edit that drops the entry keeps it for a re-add (an
editor's cut-and-paste, a commented-out block); servers.remove revokes and deletes it, unless
another entry still logs in to the same URL.
"""

from pathlib import Path

import anyio
import httpx2
import pytest
from mework_client.aio import AsyncClient, connect

from meworkd.app.daemon import Daemon
from meworkd.mcp.auth import auth_file_for
from tests.daemon_helpers import (
    begin_turn,
    call_tool,
    drain_events,
    start_daemon,
    text_of,
    wait_event,
    write_settings,
)
from tests.servers.oauth_as import FakeAS, build, headless_browser, listening_socket, serve

pytestmark = pytest.mark.anyio


async def test_rename_keeps_hand_edit_keeps_remove_deletes(short_tmp: Path) -> None:
    sock = listening_socket()
    app, auth_as, url = build(sock.getsockname()[1], access_ttl=30)
    stored = auth_file_for(short_tmp / "state", url).path
    with sock:
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve, app, sock)
            async with (
                start_daemon(short_tmp, {"hosted": {"url": url}}) as running,
                connect(running.socket) as client,
            ):
                await _log_in(client, "hosted", tg)
                assert stored.exists()
                await _outage_is_not_a_logout(client, running.daemon, auth_as)
                await _rename_keeps(client, stored)
                await _hand_edit_keeps(client, short_tmp / "settings.json", url, stored)
                await _remove_deletes(client, auth_as, url, stored)
            tg.cancel_scope.cancel()


async def _auth_state(client: AsyncClient, name: str) -> str:
    return str((await client.call("servers.get", {"name": name}))["auth"]["state"])


async def _log_in(client: AsyncClient, name: str, tg: anyio.abc.TaskGroup) -> None:
    await client.call("events.subscribe", {"topics": ["server.auth"]})
    started = await client.call("servers.login", {"name": name})
    tg.start_soon(headless_browser, started["authorizationUrl"])
    await wait_event(client, "server.auth", lambda e: e["state"] == "authorized")


async def _outage_is_not_a_logout(client: AsyncClient, daemon: Daemon, auth_as: FakeAS) -> None:
    auth = daemon.auth.server("hosted", daemon.store.settings.servers["hosted"])
    assert auth is not None
    auth.retry_delays = (0.01, 0.01, 0.01)
    auth_as.refresh_outage = 1000
    auth_as.access.clear()  # the server answers 401: a refresh is due, and the AS is down
    drain_events(client)
    turn = await begin_turn(client, ["hosted"])
    (failure,) = turn["failures"]
    assert failure["kind"] == "auth_unavailable"
    assert "HTTP 503" in failure["reason"]
    shown = (await client.call("servers.get", {"name": "hosted"}))["auth"]
    assert shown["state"] == "authorized"
    assert "the login is kept" in shown["error"]
    assert all(e["state"] == "authorized" for e in drain_events(client, "server.auth"))

    auth_as.refresh_outage = 0  # back: a login asked for by a person tries the AS at once
    assert await client.call("servers.login", {"name": "hosted"}) == {"state": "authorized"}
    turn = await begin_turn(client, ["hosted"], turn["conversationId"])
    assert turn["failures"] == []  # the 401 was refreshed at once, not after the pause
    assert auth_as.events[-1] == "refresh"
    assert "error" not in (await client.call("servers.get", {"name": "hosted"}))["auth"]


async def _rename_keeps(client: AsyncClient, stored: Path) -> None:
    renamed = await client.call("servers.rename", {"name": "hosted", "newName": "cloud"})
    assert renamed["auth"]["state"] == "authorized"
    assert stored.exists()
    turn = await begin_turn(client, ["cloud"])
    assert turn["failures"] == []
    assert text_of(await call_tool(client, turn, "cloud", "whoami")) == "ok"


async def _hand_edit_keeps(client: AsyncClient, settings: Path, url: str, stored: Path) -> None:
    write_settings(settings, {})
    assert (await client.call("settings.reload"))["removed"] == ["cloud"]
    assert stored.exists()  # kept for a re-add: only servers.remove deletes
    write_settings(settings, {"again": {"url": url}})
    assert (await client.call("settings.reload"))["added"] == ["again"]
    assert await _auth_state(client, "again") == "authorized"  # no second login


async def _remove_deletes(client: AsyncClient, auth_as: FakeAS, url: str, stored: Path) -> None:
    """A removal that leaves another entry of the URL keeps the login; the last one deletes."""
    await client.call("servers.add", {"name": "twin", "server": {"url": url}})
    await client.call("servers.remove", {"name": "twin"})
    assert stored.exists()  # "again" still logs in to that URL
    assert await _auth_state(client, "again") == "authorized"
    assert auth_as.count("revoke") == 0

    await client.call("servers.remove", {"name": "again"})
    assert not stored.exists()
    assert auth_as.count("revoke") == 2  # the refresh and the access token
    await client.call("servers.add", {"name": "again", "server": {"url": url}})
    assert await _auth_state(client, "again") == "none"  # a fresh start, no leftover

    # Removed while its login waits for the browser: the login ends, nothing is stored.
    pending = await client.call("servers.login", {"name": "again"})
    await client.call("servers.remove", {"name": "again"})
    with pytest.raises(httpx2.ConnectError):
        await headless_browser(pending["authorizationUrl"])  # the redirect listener is gone
    assert not stored.exists()
