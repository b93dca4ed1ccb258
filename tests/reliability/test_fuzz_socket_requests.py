"""The control socket fuzzed with requests (group "requests" of the fuzz):
request-shaped objects with wrong types, half-written lines followed by EOF, and invalid UTF-8
(raw, inside strings, inside method names) (issue 8, part 3).

Most cases go to an in-process daemon's dispatcher (tests/reliability/in_process.py), a few
hundred through the real socket of one subprocess daemon (conftest's ``fuzz_daemon``); the
strategies and what every reply must be are in tests/reliability/fuzzing.py (the other groups
have files of their own, so that pytest-xdist's workers share the fuzz).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.reliability import figures
from tests.reliability.control_socket import SocketPeer
from tests.reliability.fuzzing import run_fuzz
from tests.reliability.harness import DaemonProc
from tests.reliability.in_process import in_process_peer


# Hundreds of cases against a real daemon: on a busy 2-core machine this takes a while.
@pytest.mark.timeout(900 if figures.SOAK else 300)
def test_fuzz_control_socket_with_requests(fuzz_daemon: DaemonProc) -> None:
    run_fuzz(SocketPeer(fuzz_daemon), "requests", "socket")


@pytest.mark.anyio
@pytest.mark.timeout(900 if figures.SOAK else 300)
async def test_fuzz_dispatcher_with_requests(short_tmp: Path) -> None:
    async with in_process_peer(short_tmp) as peer:
        await anyio.to_thread.run_sync(run_fuzz, peer, "requests", "in_process")
