"""The connection: a daemon that is not there, one that comes, one that restarts."""

import socket
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textual")

from mework_client.aio import connect
from mework_ui.app import MeworkApp
from textual.widgets import DataTable

from tests.common import fake
from tests.daemon_helpers import start_daemon
from tests.ui.conftest import UiDaemon
from tests.ui.helpers import add_servers, cell, move_to, text, until

pytestmark = pytest.mark.anyio


async def test_says_when_meworkd_restarts_and_reconnects(short_tmp: Path) -> None:
    app = MeworkApp(str(short_tmp / "run" / "d.sock"))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "retrying" in text(app, "#topbar"))  # no daemon yet
        async with start_daemon(short_tmp, {"kitchen": fake()}):
            table = app.screen.query_one(DataTable)
            await until(pilot, lambda: app.model.online and table.row_count == 1)
            assert "● connected" in text(app, "#topbar")
        await until(pilot, lambda: "↻ reconnecting" in text(app, "#topbar"))
        assert not app.model.online
        async with start_daemon(short_tmp):  # restarted on the same socket and settings
            await until(pilot, lambda: app.model.online)
            assert "● connected" in text(app, "#topbar")
            assert [r.value for r in table.rows] == ["kitchen"]


async def test_a_burst_of_status_events_is_one_reread(ui_daemon: UiDaemon) -> None:
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.model.online)
        calls: list[str] = []
        real = app.model.link.call

        async def counting(method: str, params: dict[str, Any] | None = None) -> Any:
            calls.append(method)
            return await real(method, params)

        app.model.link.call = counting  # type: ignore[method-assign]
        rounds = app.model.stale.rounds
        for _ in range(50):
            await app.model.on_event("server.status", {"server": "x", "status": "closed"})
        await until(pilot, lambda: app.model.stale.rounds >= rounds + 1)
        # One read for the burst (a second only if the shared daemon's own event came late).
        assert calls in (["servers.list"], ["servers.list"] * 2)


async def test_says_starting_while_the_socket_does_not_answer_yet(short_tmp: Path) -> None:
    """Socket activation: the socket accepts before meworkd runs; the UI says it is starting."""
    path = short_tmp / "run" / "d.sock"
    path.parent.mkdir(mode=0o700)
    app = MeworkApp(str(path))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as held:
        held.bind(str(path))
        held.listen()  # connections wait in the backlog, as under systemd's socket unit
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: "starting meworkd" in text(app, "#topbar"))
            assert not app.model.online


async def test_a_failure_at_discovery_shows_with_its_reason(ui_daemon: UiDaemon) -> None:
    """server.status failed while the UI runs; lastError for a UI started afterwards."""
    await add_servers(ui_daemon.socket, {"fl-broken": fake("--exit-at-start", "3")})
    await shows_the_failure(ui_daemon.socket, fail_meanwhile=True)
    await shows_the_failure(ui_daemon.socket, fail_meanwhile=False)


async def shows_the_failure(socket: Path, fail_meanwhile: bool) -> None:
    app = MeworkApp(str(socket))
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.screen.query_one(DataTable)
        await until(pilot, lambda: app.model.online and "fl-broken" in table.rows)
        if fail_meanwhile:
            async with connect(socket) as other:
                params = {"id": "fl-c1", "mcpServers": ["fl-broken"]}
                await other.call("conversations.create", params)
                turn = await other.call("turns.begin", {"conversationId": "fl-c1"})
                await other.call("turns.end", {"turnId": turn["turnId"]})
        await until(pilot, lambda: cell(table, "fl-broken", "status") == "✘ failed: exited")
        move_to(table, "fl-broken")
        await until(pilot, lambda: "stderr: kitchen: fatal" in text(app, "#note"))


async def test_a_fixed_command_no_longer_shows_the_old_failure(ui_daemon: UiDaemon) -> None:
    """The failure was the old definition's: fixing the entry (here through the daemon, as the
    detail page or an editor does) clears it in the UI without a Test connection or a turn."""
    await add_servers(ui_daemon.socket, {"fx-typo": {"command": "mcp-server-tiem"}})
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.screen.query_one(DataTable)
        await until(pilot, lambda: app.model.online and "fx-typo" in table.rows)
        async with connect(ui_daemon.socket) as other:
            await other.call("conversations.create", {"id": "fx-c", "mcpServers": ["fx-typo"]})
            turn = await other.call("turns.begin", {"conversationId": "fx-c"})
            await other.call("turns.end", {"turnId": turn["turnId"]})
            await until(pilot, lambda: cell(table, "fx-typo", "status").startswith("✘ failed"))
            fixed = {"command": fake()["command"], "args": fake()["args"]}
            await other.call("servers.update", {"name": "fx-typo", "patch": fixed})
        await until(pilot, lambda: not cell(table, "fx-typo", "status").startswith("✘"))
        assert "fx-typo" not in app.model.failures
