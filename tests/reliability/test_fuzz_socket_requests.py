"""The control socket fuzzed with requests (group "requests" of the fuzz):
request-shaped objects with wrong types, half-written lines followed by EOF, and invalid UTF-8
(raw, inside strings, inside method names) (issue 8, part 3).

One daemon serves the module (conftest's ``fuzz_daemon``); the strategies and what every reply
must be are in tests/reliability/fuzzing.py (the other groups have files of their own, so that
pytest-xdist's workers share the fuzz).
"""

from __future__ import annotations

import pytest

from tests.reliability import figures
from tests.reliability.fuzzing import run_fuzz
from tests.reliability.harness import DaemonProc


# Hundreds of cases against a real daemon: on a busy 2-core machine this takes over a minute.
@pytest.mark.timeout(900 if figures.SOAK else 300)
def test_fuzz_control_socket_with_requests(fuzz_daemon: DaemonProc) -> None:
    run_fuzz(fuzz_daemon, "requests")
