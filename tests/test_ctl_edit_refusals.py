"""``meworkctl servers edit`` refuses at once, with the reason, when the edit could not succeed.

No terminal and no $VISUAL/$EDITOR: the terminal editor it would fall back on is not started.
A settings file meworkd cannot read: every write would be refused, so no editor opens. Against
a real daemon; the editors are small scripts that record being started.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.test_ctl import (
    MEWORKCTL,
    RUN_TIMEOUT,
    Daemon,
    add_kitchen,
    daemon_fixture,  # noqa: F401  (the daemon fixture: one daemon for this module)
    ok,
    ok_json,
    run_ctl,
)

# An editor that records it was started and fails, as nano or vi do without a terminal.
RECORDER = """#!{python}
import pathlib, sys
pathlib.Path({marker!r}).write_text(" ".join(sys.argv))
sys.exit(1)
"""


def recording_editor(folder: Path, name: str) -> Path:
    """An executable ``folder/name`` that leaves ``folder/started`` when it runs."""
    editor = folder / name
    editor.write_text(RECORDER.format(python=sys.executable, marker=str(folder / "started")))
    editor.chmod(0o755)
    return folder / "started"


def edit(daemon: Daemon, name: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MEWORKCTL), "--socket", str(daemon.socket), "servers", "edit", name],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        env=env,
        check=False,
    )


def test_without_a_terminal_or_an_editor_variable_no_editor_starts(
    daemon: Daemon, tmp_path: Path
) -> None:
    add_kitchen(daemon, "noterm")
    for name in ("editor", "nano", "vi"):  # the terminal editors it falls back on
        started = recording_editor(tmp_path, name)
    env = {k: v for k, v in daemon.env().items() if k not in ("VISUAL", "EDITOR")}
    env["PATH"] = f"{tmp_path}{os.pathsep}{env.get('PATH', '')}"
    done = edit(daemon, "noterm", env)
    assert not started.exists()
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert "neither $VISUAL nor $EDITOR is set" in line
    assert "without a terminal editor cannot run" in line


def test_with_an_unreadable_settings_file_no_editor_starts(daemon: Daemon, tmp_path: Path) -> None:
    add_kitchen(daemon, "unread")
    started = recording_editor(tmp_path, "editor.py")
    good = daemon.settings.read_text()
    daemon.settings.write_text("{ not json")
    try:
        assert "not applied" in run_ctl(daemon, "settings", "reload").stdout
        assert ok_json(daemon, "servers", "show", "unread")["settings"]["state"] == "unreadable"
        done = edit(daemon, "unread", daemon.env() | {"VISUAL": str(tmp_path / "editor.py")})
    finally:
        daemon.settings.write_text(good)
        ok(daemon, "settings", "reload")
    assert not started.exists()
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith(f"meworkctl: cannot edit unread: the settings file {daemon.settings}")
    assert "cannot be read" in line
    assert "fix the file first" in line
