"""Shared fixtures: the anyio backend and short temporary directories (AF_UNIX paths are short)."""

import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# A suite started in the background by a shell without job control (`.ci/run &`) inherits
# SIGINT ignored, and so would every meworkctl it starts: the tests that press Ctrl-C on a
# streaming command then wait for an exit that never comes. Those tests need Ctrl-C delivered.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="mw-", dir="/tmp") as d:
        yield Path(d)
