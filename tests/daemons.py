"""The one way a test runs a daemon in its own event loop: :func:`serve_daemon`.

The helpers with older names build on it: ``daemon_helpers.start_daemon`` (settings, socket and
state under one short directory), ``daemon_fixture.running_daemon`` (an XDG tree) and
``turn_helpers.Harness`` (which also restarts). A daemon as a process of its own is
:class:`tests.reliability.harness.DaemonProc` (it waits for ``READY=1``, not for the socket).

Tests that share one daemon do not interfere when each uses conversation ids and server names
of its own (``tests/ui`` and ``test_ctl.py`` share one per module that way).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import anyio

from meworkd.app.daemon import Daemon
from meworkd.app.paths import Paths
from tests.common import START_BOUND

__all__ = ["STOP_BOUND", "serve_daemon"]

STOP_BOUND = 15.0  # seconds stopping may take before the test fails (a bound, not a timing)


@asynccontextmanager
async def serve_daemon(
    paths: Paths, environ: Mapping[str, str], *, stop_bound: float = STOP_BOUND
) -> AsyncIterator[Daemon]:
    """Run a daemon in a task group of the current test (enter it inside the async test:
    anyio primitives need the running loop) until the block ends; fail if it does not start
    within START_BOUND or stop within ``stop_bound``."""
    daemon = Daemon(paths, environ=dict(environ))
    with anyio.CancelScope() as stopping:
        async with anyio.create_task_group() as tg:
            with anyio.fail_after(START_BOUND):
                await tg.start(daemon.run)
            try:
                yield daemon
            finally:
                daemon.request_shutdown()
                stopping.deadline = anyio.current_time() + stop_bound
    if stopping.cancelled_caught:
        raise TimeoutError(f"the daemon did not stop within {stop_bound} s")
