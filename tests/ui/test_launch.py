"""Starting the UI: without a terminal it refuses clearly instead of writing escape codes."""

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("textual")

BIN = Path(sys.executable).parent


@pytest.mark.parametrize("argv", [["mework-ui"], ["meworkctl", "ui"]])
def test_refuses_without_a_terminal(argv: list[str], short_tmp: Path) -> None:
    done = subprocess.run(
        [str(BIN / argv[0]), *argv[1:], "--socket", str(short_tmp / "none.sock")],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == b""  # nothing drawn
    assert b"needs a terminal" in done.stderr
    assert b"meworkctl servers list" in done.stderr
