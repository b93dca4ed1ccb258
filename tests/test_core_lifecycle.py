"""core.Lifecycle in-process: what daemon.status reports and a stop asked for (daemon.*).

The wire of daemon.status stays tested in tests/test_rpc.py and tests/test_visible.py.
"""

import os
import sys

import anyio
import pytest

from meworkd import __version__
from tests.common import BOUND
from tests.core_parts import Core, core

pytestmark = pytest.mark.anyio
__all__ = ["core"]  # the fixture, used by name


async def test_status_counts_servers_sessions_conversations_and_connections(core: Core) -> None:
    entry = {"command": sys.executable, "args": ["-c", "pass"]}
    await core.servers.add("on", entry)
    await core.servers.add("off", {**entry, "enabled": False})
    core.conversations.create("c1", preset=None, servers=None, level=None, roots=None)
    with core.connections.held(), core.connections.held():
        status = core.lifecycle.status()
    assert (status["version"], status["pid"]) == (__version__, os.getpid())
    assert (status["servers"], status["serversEnabled"], status["sessions"]) == (2, 1, 0)
    assert (status["conversations"], status["turns"], status["connections"]) == (1, 0, 2)
    assert status["settingsPath"] == str(core.path)
    assert status["settings"]["state"] == "ok"
    assert status["settingsError"] is None
    assert status["uptimeSeconds"] >= 0
    assert core.lifecycle.status()["connections"] == 0
    assert core.lifecycle.status_line() == "2 servers (1 enabled), 0 sessions"


async def test_a_broken_settings_file_shows_in_the_status(core: Core) -> None:
    core.path.write_text("{ not json")
    await core.store.reload("test")
    status = core.lifecycle.status()
    assert status["settings"]["state"] == "unreadable"
    assert status["settingsError"] == status["settings"]["error"]
    assert status["settingsError"]


async def test_a_stop_asked_for_wakes_whoever_waits_for_it(core: Core) -> None:
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            tg.start_soon(core.lifecycle.stopping)
            core.lifecycle.request_shutdown()
