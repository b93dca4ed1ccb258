"""Fixtures of the reliability suite, and the hook that writes the measured figures."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.reliability import figures
from tests.reliability.control_socket import hostile_daemon_proc
from tests.reliability.harness import DaemonProc, daemon_dir


@pytest.fixture
def spawn_daemon() -> Iterator[Callable[..., DaemonProc]]:
    """Make subprocess daemons under short /tmp dirs; every one is killed at teardown."""
    made: list[DaemonProc] = []
    with daemon_dir() as root:

        def make(name: str = "d") -> DaemonProc:
            d = DaemonProc(root / name)
            d.root.mkdir(parents=True, exist_ok=True)
            made.append(d)
            return d

        try:
            yield make
        finally:
            for d in made:
                d.kill()


@pytest.fixture(scope="module")
def fuzz_daemon() -> Iterator[DaemonProc]:
    """One hostile-input daemon per fuzz module (each group of the fuzz has a file of its own,
    so that pytest-xdist's workers share the fuzz)."""
    with hostile_daemon_proc() as d:
        yield d


@pytest.fixture
def rel_tmp() -> Iterator[Path]:
    with daemon_dir("mwt-") as root:
        yield root


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    figures.flush(write_doc=os.environ.get("MEWORKD_WRITE_RELIABILITY") == "1")
