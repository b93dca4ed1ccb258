"""`meworkctl ui` after a plain install: Textual comes with meworkd; without it, one line.

The UI is the main frontend, so `pip install .` brings Textual; `meworkctl status` still starts
without it (only `meworkctl ui` imports the UI).
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from tests.test_ctl_startup import NO_DAEMON, loaded_by

ROOT = Path(__file__).resolve().parent.parent

# meworkctl ui in an environment where Textual cannot be imported (None in sys.modules makes
# `import textual` raise ModuleNotFoundError, as a missing package does).
WITHOUT_TEXTUAL = """\
import sys
sys.modules["textual"] = None
from mework_client.ctl import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_plain_install_brings_textual() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(dep.startswith("textual") for dep in project["dependencies"])


def test_status_still_starts_without_loading_textual() -> None:
    loaded = loaded_by(["status"], NO_DAEMON, exit_code=3)
    assert not {m for m in loaded if m.split(".")[0] in {"textual", "mework_ui", "rich"}}


def test_ui_without_textual_says_in_one_line_what_to_install(short_tmp: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_TEXTUAL, "ui", "--socket", str(short_tmp / "none.sock")],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert "needs Textual" in line
    assert f"{sys.executable} -m pip install 'textual" in line
