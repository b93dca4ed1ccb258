"""Fixtures of the terminal UI tests: one daemon shared by every Pilot test.

The Pilot tests share one in-process daemon on one event loop (anyio keeps its loop while a
package-scoped async fixture lives). Package scope, so the daemon and the servers it started
are gone before any test outside tests/ui runs, whatever the order. Each test adds the servers
and conversations it needs under names of its own, so the tests stay independent while paying
for one daemon start. The snapshot tests need a daemon process instead: ``snap_compare`` runs
each app in a loop of its own. That process logs to a file: a pipe nobody reads would fill and
stall it.
"""

import tempfile
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.daemon_fixture import make_env, xdg_environ
from tests.daemon_helpers import start_daemon
from tests.daemons import start_meworkd, stop_meworkd


class UiDaemon(NamedTuple):
    socket: Path
    settings: Path


@contextmanager
def meworkd_process(document: Mapping[str, Any]) -> Iterator[UiDaemon]:
    """A real meworkd on a temporary socket with ``document`` as its settings, until the end."""
    with tempfile.TemporaryDirectory(prefix="mw-", dir="/tmp") as d:
        env = make_env(Path(d), document)
        with (Path(d) / "meworkd.log").open("wb") as log:
            proc, notices = start_meworkd(
                env=xdg_environ(env), notify=Path(d) / "notify", stdout=log, stderr=log
            )
            notices.close()
            try:
                yield UiDaemon(env.socket, env.settings)
            finally:
                stop_meworkd(proc)


@pytest.fixture(scope="package")
def anyio_backend() -> str:
    return "asyncio"  # Textual runs on asyncio; package-wide, for the shared daemon


@pytest.fixture(scope="package")
async def ui_daemon() -> AsyncIterator[UiDaemon]:
    with tempfile.TemporaryDirectory(prefix="mw-", dir="/tmp") as d:
        root = Path(d)
        async with start_daemon(root, {}) as running:
            yield UiDaemon(running.socket, root / "settings.json")
