"""The composition root builds every part in order and touches no file until it runs.

``Daemon(paths)`` builds the core's façades and the method table; ``run`` opens the settings file
and the state database and closes the database when it stops, so a request that outlives it is
told meworkd is not running rather than reaching a closed connection.
"""

from pathlib import Path

import pytest

from meworkd.app.daemon import Daemon, DaemonState
from meworkd.app.paths import Paths
from meworkd.base.errors import ShuttingDown
from tests.daemon_helpers import start_daemon

pytestmark = pytest.mark.anyio


def paths_under(root: Path) -> Paths:
    return Paths(
        settings=root / "settings.json", socket=root / "run" / "d.sock", state_dir=root / "state"
    )


async def test_building_the_daemon_opens_nothing(tmp_path: Path) -> None:
    paths = paths_under(tmp_path)
    daemon = Daemon(paths, environ={})
    assert daemon.state is DaemonState.CREATED
    assert not daemon.state_db.is_open
    assert not paths.database.exists()
    assert not paths.settings.exists()
    assert "turns.callTool" in daemon.methods.names()
    with pytest.raises(ShuttingDown):
        daemon.services.conversations.listing()


async def test_run_opens_the_state_database_and_closes_it_when_stopped(short_tmp: Path) -> None:
    async with start_daemon(short_tmp) as started:
        daemon = started.daemon
        assert daemon.state_db.is_open
        made = daemon.services.conversations.create(
            "c", preset=None, servers=None, level=None, roots=None
        )
        assert made["id"] == "c"
        assert daemon.lifecycle.status()["conversations"] == 1
    assert daemon.state is DaemonState.STOPPED
    assert not daemon.state_db.is_open
    with pytest.raises(ShuttingDown):
        daemon.services.conversations.listing()
