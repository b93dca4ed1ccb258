"""A pytest plugin that adds up the CPU time of each test file: the worker and its waited children.

Wall time on a shared 2-core machine says more about the neighbours than about the suite; CPU
time does not. Around every test (setup, call and teardown) this adds ``RUSAGE_SELF`` +
``RUSAGE_CHILDREN`` user and system time to the test's file, and at the end each process
appends ``cpu<TAB>wall<TAB>file`` lines to ``$SUITE_CPU_OUT``. A child counts once it has been
waited for (a daemon killed at a module's end counts then; an orphan never does).

    PYTHONPATH=bench SUITE_CPU_OUT=/tmp/cpu.tsv .venv/bin/python -m pytest -p suite_cpu \\
        -n 2 --dist loadfile -q
    sort -rn /tmp/cpu.tsv | head -30
"""

from __future__ import annotations

import os
import resource
import time
from collections import defaultdict
from collections.abc import Iterator

import pytest

_cpu: defaultdict[str, float] = defaultdict(float)
_wall: defaultdict[str, float] = defaultdict(float)


def _cpu_now() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    cpu, wall = _cpu_now(), time.monotonic()
    yield
    path = item.nodeid.split("::")[0]
    _cpu[path] += _cpu_now() - cpu
    _wall[path] += time.monotonic() - wall


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    out = os.environ.get("SUITE_CPU_OUT")
    if out and _cpu:
        with open(out, "a") as f:
            for path, cpu in _cpu.items():
                f.write(f"{cpu:.2f}\t{_wall[path]:.2f}\t{path}\n")
