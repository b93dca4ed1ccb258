"""Shared fixtures: the anyio backend and short temporary directories (AF_UNIX paths are short)."""

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="mw-", dir="/tmp") as d:
        yield Path(d)
