"""The control socket fuzzed with values (group "values" of the fuzz): random
bytes, arbitrary JSON values, and batches of requests and values (issue 8, part 3).

One daemon serves the module (conftest's ``fuzz_daemon``); the strategies and what every reply
must be are in tests/reliability/fuzzing.py (the other groups have files of their own, so that
pytest-xdist's workers share the fuzz).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability import figures
from tests.reliability.fuzzing import run_fuzz
from tests.reliability.harness import DaemonProc


# Hundreds of cases against a real daemon: on a busy 2-core machine this takes over a minute.
@pytest.mark.timeout(900 if figures.SOAK else 300)
def test_fuzz_control_socket_with_values(fuzz_daemon: DaemonProc) -> None:
    run_fuzz(fuzz_daemon, "values")


def test_the_fuzz_groups_hold_every_strategy_once() -> None:
    grouped = [name for names in figures.FUZZ_GROUPS.values() for name in names]
    assert sorted(grouped) == sorted(figures.FUZZ_EXAMPLES)
    for group in figures.FUZZ_GROUPS:  # each group is run by a file of its own
        assert Path(__file__).with_name(f"test_fuzz_socket_{group}.py").is_file(), group
