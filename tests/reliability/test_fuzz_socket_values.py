"""The control socket fuzzed with values (group "values" of the fuzz): random
bytes, arbitrary JSON values, and batches of requests and values (issue 8, part 3).

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
def test_fuzz_control_socket_with_values(fuzz_daemon: DaemonProc) -> None:
    run_fuzz(SocketPeer(fuzz_daemon), "values", "socket")


@pytest.mark.anyio
@pytest.mark.timeout(900 if figures.SOAK else 300)
async def test_fuzz_dispatcher_with_values(short_tmp: Path) -> None:
    async with in_process_peer(short_tmp) as peer:
        await anyio.to_thread.run_sync(run_fuzz, peer, "values", "in_process")


def test_the_fuzz_groups_hold_every_strategy_once() -> None:
    grouped = [name for names in figures.FUZZ_GROUPS.values() for name in names]
    assert sorted(grouped) == sorted(figures.FUZZ_EXAMPLES)
    for group in figures.FUZZ_GROUPS:  # each group is run by a file of its own
        assert Path(__file__).with_name(f"test_fuzz_socket_{group}.py").is_file(), group
