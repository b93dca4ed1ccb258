"""meworkctl's interactive commands against one real daemon: servers edit, call's approval wait.

The editor is a small Python script that follows a list of steps (one per time it is opened)
and records what it was shown; the terminal of ``call`` is a real pseudo-terminal. Processes
synchronise on the lines meworkctl prints, never on time.
"""

from __future__ import annotations

import json
import os
import pty
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

from tests.test_ctl import (
    FAKE,
    MEWORKCTL,
    RUN_TIMEOUT,
    Daemon,
    add_kitchen,
    daemon_fixture,  # noqa: F401  (the daemon fixture: one daemon for this module)
    ok,
    ok_json,
    run_ctl,
    start_daemon,
    stop_daemon,
)

EDITOR = """\
import json, pathlib, sys
here = pathlib.Path(sys.argv[0]).parent
steps = json.loads((here / "steps.json").read_text())
seen = json.loads((here / "seen.json").read_text()) if (here / "seen.json").exists() else []
target = pathlib.Path(sys.argv[1])
seen.append(target.read_text())
(here / "seen.json").write_text(json.dumps(seen))
step = steps[len(seen) - 1]
if step is not None:
    target.write_text(step)
"""


def edit(
    daemon: Daemon, tmp_path: Path, name: str, steps: list[str | None]
) -> tuple[Any, list[str]]:
    """``servers edit NAME`` with an editor that writes ``steps`` (``None``: leave it)."""
    (tmp_path / "steps.json").write_text(json.dumps(steps))
    (tmp_path / "editor.py").write_text(EDITOR)
    env = daemon.env() | {"VISUAL": f"{sys.executable} {tmp_path / 'editor.py'}"}
    done = subprocess.run(
        [str(MEWORKCTL), "--socket", str(daemon.socket), "servers", "edit", name],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        env=env,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    seen = json.loads((tmp_path / "seen.json").read_text())
    (tmp_path / "seen.json").unlink()
    return done, seen


def test_edit_reopens_with_the_error_then_saves_a_replacement(
    daemon: Daemon, tmp_path: Path
) -> None:
    ok(daemon, "servers", "add", "ed", "--env", "API_TOKEN=s3cret", "--description", "old",
       "--", *FAKE)  # fmt: skip
    shown = ok_json(daemon, "servers", "show", "ed")["server"]
    assert shown["env"] == {"API_TOKEN": "********"}
    wanted = {key: value for key, value in shown.items() if key != "description"}
    wanted["args"] = [*shown["args"], "--stderr-lines", "1"]
    done, seen = edit(
        daemon,
        tmp_path,
        "ed",
        ["{oops", json.dumps({**wanted, "timeoutSeconds": "soon"}), json.dumps(wanted)],
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok  saved ed\n"
    assert json.loads(seen[0]) == shown  # as servers.get shows it: the secret masked
    assert seen[1].startswith("// meworkctl: the entry is not valid JSON: ")
    assert seen[1].splitlines()[-1] == "{oops"  # the text is kept, the old error is not
    assert seen[2].startswith("// meworkctl: ")
    assert "timeoutSeconds" in seen[2].split("\n{")[0]
    assert seen[2].count("not valid JSON") == 0
    stored = ok_json(daemon, "servers", "show", "ed", "--reveal")["server"]
    assert "description" not in stored  # replace semantics: a removed key is removed
    assert stored["args"][-2:] == ["--stderr-lines", "1"]
    assert stored["env"] == {"API_TOKEN": "s3cret"}  # the mask kept the stored secret


def test_edit_unchanged_or_emptied_changes_nothing(daemon: Daemon, tmp_path: Path) -> None:
    add_kitchen(daemon, "ed2")
    before = ok_json(daemon, "servers", "show", "ed2")["server"]
    done, _ = edit(daemon, tmp_path, "ed2", [None])
    assert (done.returncode, done.stderr) == (0, "no changes: ed2 is left as it was\n")
    done, _ = edit(daemon, tmp_path, "ed2", ["{oops", "  \n"])
    assert done.returncode == 0
    assert done.stderr.splitlines()[-1] == "the file was emptied: ed2 is left as it was"
    assert ok_json(daemon, "servers", "show", "ed2")["server"] == before


def test_edit_of_an_unknown_server_or_without_an_editor(daemon: Daemon) -> None:
    done = run_ctl(daemon, "servers", "edit", "nope")
    assert done.returncode == 1
    assert "no MCP server named 'nope'" in done.stderr
    add_kitchen(daemon, "ed3")
    env = {k: v for k, v in daemon.env().items() if k not in ("VISUAL", "EDITOR")}
    done = subprocess.run(
        [str(MEWORKCTL), "--socket", str(daemon.socket), "servers", "edit", "ed3"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        env=env | {"VISUAL": "/nonexistent/editor"},
        check=False,
    )
    assert done.returncode == 1
    assert "cannot run the editor '/nonexistent/editor'" in done.stderr


# --- call: waiting for approval ----------------------------------------------------------------


def begin_echo(daemon: Daemon, name: str) -> tuple[str, str]:
    add_kitchen(daemon, name)
    ok(daemon, "conv", "create", "--id", f"c-{name}", "--server", name)  # request_approval
    begun = ok_json(daemon, "turn", "begin", f"c-{name}")
    echo = next(bound for bound, b in begun["bindings"].items() if b["tool"] == "echo")
    return begun["turnId"], echo


def start_call(daemon: Daemon, turn: str, tool: str, **streams: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(MEWORKCTL), "--socket", str(daemon.socket), "call", turn, tool, '{"text": "hi"}'],
        text=True,
        env=daemon.env(),
        **({"stdout": subprocess.PIPE, "stderr": subprocess.PIPE} | streams),
    )


def read_line(stream: IO[str] | None) -> str:
    assert stream is not None
    return stream.readline()


def close_call(call: subprocess.Popen[str], leader: int | None = None) -> None:
    """Killed if it still runs, its pipes (and the terminal's ``leader``) closed."""
    if call.poll() is None:
        call.kill()
    call.communicate()  # also when it ended by itself: its pipes are closed, not leaked
    if leader is not None:
        os.close(leader)


def test_call_off_a_terminal_says_it_waits_and_how_to_answer(daemon: Daemon) -> None:
    turn, echo = begin_echo(daemon, "kw1")
    call = start_call(daemon, turn, echo, stdin=subprocess.DEVNULL)
    try:
        assert read_line(call.stderr).startswith("Waiting for approval of echo on server kw1")
        hint = read_line(call.stderr)
        assert hint.startswith("Answer it elsewhere: meworkctl approvals allow ")
        ok(daemon, "approvals", "allow", hint.split()[6])
        out, err = call.communicate(timeout=RUN_TIMEOUT)
    finally:
        close_call(call)
    assert (call.returncode, out, err) == (0, "hi\n", "")


def test_ctrl_c_cancels_the_call_and_its_approval(daemon: Daemon) -> None:
    turn, echo = begin_echo(daemon, "kw2")
    call = start_call(daemon, turn, echo, stdin=subprocess.DEVNULL)
    try:
        assert read_line(call.stderr).startswith("Waiting for approval of echo")
        call.send_signal(signal.SIGINT)
        out, err = call.communicate(timeout=RUN_TIMEOUT)
    finally:
        close_call(call)
    assert call.returncode == 130
    assert out == ""
    assert "meworkctl: interrupted: cancelled the call ctl-" in err
    assert ok(daemon, "approvals", "list") == "No pending approvals.\n"
    audit = ok_json(daemon, "audit", "--conversation", "c-kw2")["entries"]
    assert [(e["decision"], e["decidedBy"]) for e in audit] == [("deny", "cancelled")]


def read_until(fd: int, marker: bytes) -> bytes:
    seen = b""
    while marker not in seen:
        chunk = os.read(fd, 4096)  # blocks until meworkctl writes; the test's timeout bounds it
        assert chunk, seen
        seen += chunk
    return seen


def test_call_on_a_terminal_asks_and_a_reason_denies(daemon: Daemon) -> None:
    turn, echo = begin_echo(daemon, "kw3")
    leader, follower = pty.openpty()
    call = start_call(daemon, turn, echo, stdin=follower, stderr=follower)
    os.close(follower)
    try:
        shown = read_until(leader, b"Allow? [y/N, a = always, or a reason to deny] ")
        assert b"Waiting for approval of echo on server kw3" in shown
        os.write(leader, b"not today\n")
        out, _ = call.communicate(timeout=RUN_TIMEOUT)
    finally:
        close_call(call, leader)
    assert call.returncode == 1  # a denial is the tool's isError
    assert "not today" in out
    audit = ok_json(daemon, "audit", "--conversation", "c-kw3")["entries"]
    assert [(e["decision"], e["decidedBy"], e["reason"]) for e in audit] == [
        ("deny", "user", "not today")
    ]


def test_approvals_watch_reconnects_after_a_daemon_restart() -> None:
    with tempfile.TemporaryDirectory(prefix="mw-", dir="/tmp") as d:
        root = Path(d)
        first = start_daemon(root)
        watch = subprocess.Popen(
            [str(MEWORKCTL), "--socket", str(first.socket), "approvals", "watch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=first.env(),
        )
        second: Daemon | None = None
        try:
            assert read_line(watch.stderr).startswith("Waiting for approval requests")
            stop_daemon(first)
            assert read_line(watch.stderr).startswith("meworkd went away; reconnecting")
            shutil.rmtree(root / "run")  # start_daemon makes it afresh
            second = start_daemon(root)
            assert read_line(watch.stderr).startswith("Reconnected to meworkd")
            assert watch.stdin is not None
            watch.stdin.write("y\n")  # read when the prompt comes
            watch.stdin.flush()
            turn, echo = begin_echo(second, "kr")
            call = start_call(second, turn, echo, stdin=subprocess.DEVNULL)
            out, _ = call.communicate(timeout=RUN_TIMEOUT)
            assert (call.returncode, out) == (0, "hi\n")
            assert read_line(watch.stdout).startswith("kr / echo")
        finally:
            watch.kill()
            watch.communicate()
            stop_daemon(first)
            if second is not None:
                stop_daemon(second)


def test_a_terminal_prompt_answered_elsewhere_goes_away(daemon: Daemon) -> None:
    turn, echo = begin_echo(daemon, "kw4")
    leader, follower = pty.openpty()
    call = start_call(daemon, turn, echo, stdin=follower, stderr=follower)
    os.close(follower)
    try:
        read_until(leader, b"Allow? [y/N, a = always, or a reason to deny] ")
        pending = ok_json(daemon, "approvals", "list")["approvals"]
        ok(daemon, "approvals", "allow", pending[0]["approvalId"])
        assert b"(answered elsewhere)" in read_until(leader, b"(answered elsewhere)")
        out, _ = call.communicate(timeout=RUN_TIMEOUT)
    finally:
        close_call(call, leader)
    assert (call.returncode, out) == (0, "hi\n")


ASKING = Path(__file__).resolve().parent / "servers" / "asking.py"


def asker_call(daemon: Daemon, name: str, *level: str) -> tuple[subprocess.Popen[str], int]:
    """``ask_prefs`` of a fresh asking.py server called on a terminal: the call and the pty's
    leader (stderr and stdin on the terminal, stdout piped)."""
    ok(daemon, "servers", "add", name, "--", sys.executable, str(ASKING))
    ok(daemon, "conv", "create", "--id", f"c-{name}", "--server", name, *level)
    begun = ok_json(daemon, "turn", "begin", f"c-{name}")
    tool = next(bound for bound, b in begun["bindings"].items() if b["tool"] == "ask_prefs")
    leader, follower = pty.openpty()
    call = subprocess.Popen(
        [str(MEWORKCTL), "--socket", str(daemon.socket), "call", begun["turnId"], tool, "{}"],
        text=True,
        env=daemon.env(),
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=follower,
    )
    os.close(follower)
    return call, leader


def fill_in_the_form(leader: int, name: bytes) -> None:
    """Accept, type the name, leave the other fields to their defaults (one line a prompt)."""
    for answer in (b"y\n", name + b"\n", b"\n", b"\n", b"\n"):
        if answer != b"y\n":
            read_until(leader, b"): ")
        os.write(leader, answer)


def test_call_on_a_terminal_fills_in_the_servers_form(daemon: Daemon) -> None:
    call, leader = asker_call(daemon, "asker", "--level", "full_access")
    try:
        shown = read_until(leader, b"Answer? [y = accept / d = decline / c = cancel] ")
        assert b"Waiting for an answer to asker's question" in shown
        assert b"Tell me your preferences" in shown
        fill_in_the_form(leader, b"Ada")
        out, _ = call.communicate(timeout=RUN_TIMEOUT)
    finally:
        close_call(call, leader)
    assert call.returncode == 0, out
    assert 'accepted {"color": "green", "count": 3, "name": "Ada", "notify": false}' in out


def test_an_approval_answered_here_then_the_servers_form_on_one_terminal(daemon: Daemon) -> None:
    """Two questions in one call: the approval typed here does not end the form's prompts."""
    call, leader = asker_call(daemon, "asker2")  # the default level asks for approval
    try:
        read_until(leader, b"Allow? [y/N, a = always, or a reason to deny] ")
        os.write(leader, b"y\n")
        shown = read_until(leader, b"Answer? [y = accept / d = decline / c = cancel] ")
        assert b"answered elsewhere" not in shown
        fill_in_the_form(leader, b"Grace")
        out, _ = call.communicate(timeout=RUN_TIMEOUT)
    finally:
        close_call(call, leader)
    assert call.returncode == 0, out
    assert '"name": "Grace"' in out
