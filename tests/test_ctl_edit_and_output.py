"""meworkctl follow-ups against one real daemon: ``servers edit`` reads JSONC through meworkd
(``servers.replace``), and every command that dials a server shows the one shared spinner on a
terminal while stdout carries only the result.

The editor is test_ctl_interactive's step-following script; the terminal is a real
pseudo-terminal on stderr while stdout is a pipe, as in ``meworkctl servers prompts x | less``.
"""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from mework_client import Client, RpcError
from mework_client.ctl import main
from mework_client.ctl.layout import Style, format_table
from mework_client.ctl.parser import all_commands
from mework_client.ctl.requests import read_field
from mework_client.ctl.servers import DIALING

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
)
from tests.test_ctl_interactive import edit

# --- servers edit: JSONC, read by meworkd ------------------------------------------------------


def test_edit_takes_comments_and_trailing_commas_and_stores_no_comment(
    daemon: Daemon, tmp_path: Path
) -> None:
    add_kitchen(daemon, "j1")
    shown = ok_json(daemon, "servers", "show", "j1")["server"]
    lines = json.dumps({**shown, "description": "commented"}, indent=2).splitlines()
    jsonc = "\n".join(["// VS Code style", *lines[:-1]]) + ",  /* trailing comma */\n}\n"
    done, _ = edit(daemon, tmp_path, "j1", [jsonc])
    assert (done.returncode, done.stdout, done.stderr) == (0, "ok  saved j1\n", "")
    assert ok_json(daemon, "servers", "show", "j1")["server"] == {
        **shown,
        "description": "commented",
    }
    assert "VS Code style" not in daemon.settings.read_text()


def test_edit_adding_only_a_comment_changes_nothing(daemon: Daemon, tmp_path: Path) -> None:
    add_kitchen(daemon, "j2")
    shown = ok_json(daemon, "servers", "show", "j2")["server"]
    done, _ = edit(daemon, tmp_path, "j2", ["// just a note\n" + json.dumps(shown, indent=4)])
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == "no changes: j2 is left as it was\n"


def test_edit_error_points_at_the_line_in_the_reopened_file(daemon: Daemon, tmp_path: Path) -> None:
    add_kitchen(daemon, "j3")
    shown = ok_json(daemon, "servers", "show", "j3")["server"]
    broken = '{\n  // mine\n  "command": "x"\n  "args": []\n}\n'  # a comma missing on line 3
    done, seen = edit(daemon, tmp_path, "j3", [broken, json.dumps(shown)])
    assert done.returncode == 0, done.stderr
    reason = "the entry is not valid JSON: Expecting ',' delimiter"
    assert f"j3 was not saved, re-opening the editor: {reason}" in done.stderr
    reopened = seen[1].splitlines()
    assert seen[1].endswith(broken)  # the user's text, comment included, is kept
    where = re.search(r"at line (\d+), column (\d+)", reopened[0])
    assert where is not None, reopened[0]
    line, column = int(where[1]), int(where[2])
    assert line == 4 + len(reopened) - broken.count("\n")  # shifted below the error comments
    assert reopened[line - 1][column - 1 :] == '"args": []'


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[1, 2]", "the entry must be a JSON object: {...}"),
        ('{"command": "a", "command": "b"}', "'command' appears more than once in the entry"),
        ('{"command": "a", "env": {"K": "1", "K": "2"}}', "'env.K' appears more than once"),
        # line 3 of the reopened file: below the two error comments
        ('{"command": "a", /* open', "Unterminated /* comment at line 3, column 18"),
    ],
)
def test_edit_refuses_what_is_not_one_entry_and_keeps_the_text(
    daemon: Daemon, tmp_path: Path, text: str, problem: str
) -> None:
    if "j4" not in ok(daemon, "servers", "list"):
        add_kitchen(daemon, "j4")
    before = ok_json(daemon, "servers", "show", "j4")["server"]
    done, seen = edit(daemon, tmp_path, "j4", [text, ""])
    assert done.returncode == 0, done.stderr
    assert problem in seen[1].splitlines()[0]
    assert seen[1].endswith(text)
    assert ok_json(daemon, "servers", "show", "j4")["server"] == before


def test_replace_over_rpc_checks_its_params(daemon: Daemon) -> None:
    add_kitchen(daemon, "j5")
    with Client(daemon.socket, 10) as client:
        with pytest.raises(RpcError) as missing:
            client.call("servers.replace", {"name": "nope", "text": '{"command": "x"}'})
        assert missing.value.kind == "server_not_found"
        with pytest.raises(RpcError) as no_text:
            client.call("servers.replace", {"name": "j5"})
        assert no_text.value.kind == "invalid_params"
        with pytest.raises(RpcError) as bad:
            client.call("servers.replace", {"name": "j5", "text": '{"command": 1}'})
        assert bad.value.kind == "invalid_settings"
        result = client.call("servers.replace", {"name": "j5", "text": '{"url": "http://h/mcp",}'})
    assert result["server"] == {"type": "streamable_http", "url": "http://h/mcp"}
    assert result["type"] == "streamable_http"


# --- the spinner of the commands that dial a server ---------------------------------------------

DIALS = {
    "servers.test",
    "servers.prompts",
    "servers.getPrompt",
    "servers.resources",
    "servers.readResource",
    "servers.complete",
    "servers.login",
}


def test_every_command_that_dials_a_server_has_the_one_spinner() -> None:
    dialing = [c for c in all_commands() if c.method in DIALS]
    # servers test, tools, prompts, prompt, resources, read, complete, login
    assert len(dialing) == 8
    assert {c.progress for c in dialing} == {DIALING}
    assert {c.path: c.progress for c in all_commands() if c.progress} == {
        **{c.path: DIALING for c in dialing},
        "servers logout": "logging out of {name}",
        "turn begin": "connecting the servers of {conversation}",
    }


SPINNER = re.compile(r"\r\x1b\[K(?:[|/\\-] connecting to \w+… \d+ s)?")


def ctl_on_a_terminal(daemon: Daemon, *args: str) -> tuple[int, str, str]:
    """meworkctl with stderr on a pseudo-terminal (the spinner's) and stdout a pipe."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [str(MEWORKCTL), "--socket", str(daemon.socket), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=follower,
        text=True,
        env=daemon.env(),
    )
    os.close(follower)
    shown = b""
    try:
        while chunk := _read(leader):  # until meworkctl exits and the terminal closes
            shown += chunk
        out, _ = proc.communicate(timeout=RUN_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        os.close(leader)
    return proc.returncode, out, shown.decode()


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 4096)
    except OSError:  # EIO: every writer has closed the terminal
        return b""


def test_only_the_result_reaches_stdout_when_stderr_is_a_terminal(daemon: Daemon) -> None:
    add_kitchen(daemon, "s1")
    code, out, shown = ctl_on_a_terminal(daemon, "servers", "read", "s1", "mem://hello")
    assert (code, out) == (0, "hello from kitchen\n")
    assert SPINNER.sub("", shown) == ""  # the terminal saw the spinner (if any) and nothing else


def test_a_slow_server_spins_on_the_terminal_and_leaves_stdout_empty(daemon: Daemon) -> None:
    ok(daemon, "servers", "add", "slow", "--timeout-seconds", "1", "--", *FAKE,
       "--hang-initialize")  # fmt: skip
    code, out, shown = ctl_on_a_terminal(daemon, "servers", "prompts", "slow")
    assert (code, out) == (1, "")
    assert re.search(r"connecting to slow… \d+ s", shown)  # the spinner ran while it hung
    last = shown.rsplit("\r\x1b[K", 1)[-1]  # its line was cleared before the error
    assert "meworkctl: timed out after 1 s" in last
    assert "connecting" not in last


# --- small things found running every command in a terminal ---------------------------------------


def test_a_table_on_a_narrow_terminal_cuts_its_last_column_to_fit() -> None:
    rows = [["echo", "Echoes back the input string"], ["x", "short"]]
    cut = format_table(["NAME", "DESCRIPTION"], rows, Style(width=30))
    assert cut.splitlines() == [
        "NAME  DESCRIPTION",
        "echo  Echoes back the input s…",
        "x     short",
    ]
    assert max(len(line) for line in cut.splitlines()) == 30
    whole = format_table(["NAME", "DESCRIPTION"], rows, Style(width=None))  # a pipe
    assert "Echoes back the input string" in whole
    narrow = format_table(["NAME", "DESCRIPTION"], rows, Style(width=10))
    assert "echo  Echoes back the inp…\n" in narrow  # never narrower than MIN_LAST_COLUMN (20)


def test_settings_set_takes_every_option_the_daemon_does(daemon: Daemon) -> None:
    shown = ok(daemon, "settings", "set", "max_live_sessions=8", "sampling=off",
               "question_timeout_seconds=90")  # fmt: skip
    assert "max_live_sessions:             8" in shown
    assert "sampling:                      no" in shown
    done = run_ctl(daemon, "settings", "set", "sampling=maybe")
    assert done.returncode == 2
    assert "sampling needs true or false, got 'maybe'" in done.stderr


def test_a_tool_flag_for_a_tool_the_server_did_not_list_warns(daemon: Daemon) -> None:
    add_kitchen(daemon, "w1")
    ok(daemon, "servers", "tools", "w1")  # the server reports its tools
    done = run_ctl(daemon, "servers", "tool-disable", "w1", "ecoh")
    assert (done.returncode, done.stdout) == (0, "ok  ecoh of w1 is disabled\n")
    assert done.stderr.startswith("warning: w1 did not list a tool named 'ecoh'")
    done = run_ctl(daemon, "servers", "auto-approve", "w1", "echo", "off")
    assert (done.returncode, done.stderr) == (0, "")


def test_a_form_asks_a_yes_no_field_again_rather_than_guess() -> None:
    answers = iter(["Ada", "NO"])
    asked: list[str] = []

    def ask(prompt: str) -> str | None:
        asked.append(prompt)
        return next(answers)

    assert read_field("notify", {"type": "boolean", "title": "Notify"}, ask) == (True, False)
    assert asked == ["Notify (boolean): ", "  y or n (empty: the default): "]
    assert read_field("notify", {"type": "boolean"}, lambda _p: "") == (False, None)


def test_install_service_refuses_an_exec_that_is_not_a_program(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    units = tmp_path / "units"
    plain_file = tmp_path / "meworkd.txt"
    plain_file.write_text("not a program\n")
    for missing in (tmp_path / "nope", plain_file):
        assert main(["install-service", "--exec", str(missing), "--unit-dir", str(units)]) == 1
        assert f"--exec {missing}: not an executable file; nothing was written" in (
            capsys.readouterr().err
        )
    assert not units.exists()
    assert main(["uninstall-service", "--unit-dir", str(units)]) == 0
    assert capsys.readouterr().out == "No meworkd units were installed; nothing to do.\n"


def test_removing_a_server_names_the_conversations_that_selected_it(daemon: Daemon) -> None:
    add_kitchen(daemon, "r1")
    add_kitchen(daemon, "r2")
    ok(daemon, "conv", "create", "--id", "c-r1", "--server", "r1")
    assert ok(daemon, "servers", "rm", "r1") == "ok  removed r1 (no longer selected by c-r1)\n"
    assert ok(daemon, "servers", "rm", "r2") == "ok  removed r2\n"


def test_a_preset_naming_an_unregistered_server_warns(daemon: Daemon) -> None:
    add_kitchen(daemon, "p1")
    done = run_ctl(daemon, "presets", "set", "pre-x", "--server", "p1", "--server", "nope")
    assert (done.returncode, done.stdout) == (0, "ok  preset pre-x saved\n")
    assert done.stderr == "warning: no server named nope is registered (yet)\n"
    refused = run_ctl(daemon, "conv", "create", "--id", "c-pre-x", "--preset", "pre-x")
    assert refused.returncode == 1  # why the warning matters
    assert refused.stderr == "meworkctl: no MCP server named 'nope'\n"


BASH_COMPLETE = """
source "$1"; shift
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _meworkctl
printf '%s\\n' "${COMPREPLY[@]}"
"""


def bash_completion(daemon: Daemon, tmp_path: Path) -> Callable[..., list[str]]:
    """What bash offers after ``meworkctl WORDS…`` (the last word is the one being typed),
    with meworkctl's own completion script and this daemon."""
    env = daemon.env() | {"PATH": f"{MEWORKCTL.parent}:{os.environ['PATH']}"}
    bash = tmp_path / "meworkctl.bash"
    bash.write_text(ok(daemon, "completion", "bash"))

    def offered(*words: str) -> list[str]:
        done = subprocess.run(
            ["bash", "-c", BASH_COMPLETE, "complete", str(bash), "meworkctl", *words],
            capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT, check=True,
        )  # fmt: skip
        return done.stdout.split()

    return offered


def test_completion_offers_the_daemons_names(daemon: Daemon, tmp_path: Path) -> None:
    add_kitchen(daemon, "comp-a")
    ok(daemon, "conv", "create", "--id", "comp-conv", "--server", "comp-a")
    ok(daemon, "presets", "set", "comp-pre", "--server", "comp-a")
    env = daemon.env() | {"PATH": f"{MEWORKCTL.parent}:{os.environ['PATH']}"}
    offered = bash_completion(daemon, tmp_path)

    assert offered("servers", "test", "comp") == ["comp-a"]
    assert offered("conv", "show", "comp") == ["comp-conv"]
    assert offered("conv", "create", "--preset", "comp") == ["comp-pre"]
    assert offered("turn", "begin", "comp") == ["comp-conv"]
    assert offered("servers", "add", "comp") == []  # a new name: nothing to offer
    fish = shutil.which("fish")
    if fish is not None:
        script = tmp_path / "meworkctl.fish"
        script.write_text(ok(daemon, "completion", "fish"))
        done = subprocess.run(
            [fish, "-c", f"source {script}; complete -C'meworkctl servers rm comp'"],
            capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT, check=True,
        )  # fmt: skip
        assert done.stdout.split() == ["comp-a"]


def test_servers_logs_says_when_there_is_nothing_to_show(daemon: Daemon) -> None:
    ok(daemon, "servers", "add", "quiet", "--", *FAKE)
    done = run_ctl(daemon, "servers", "logs", "quiet")
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        "",
        "no stderr lines from quiet (yet)\n",
    )
    assert ok_json(daemon, "servers", "logs", "quiet")["lines"] == []  # --json: the result only
    follow = subprocess.Popen(
        [str(MEWORKCTL), "--socket", str(daemon.socket), "servers", "logs", "quiet", "-f"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=daemon.env(),
    )  # fmt: skip
    try:
        assert follow.stderr is not None
        assert follow.stderr.readline() == "Following quiet's stderr (Ctrl-C to stop)…\n"
    finally:
        follow.terminate()
        follow.communicate(timeout=RUN_TIMEOUT)


def test_a_call_meworkd_refuses_is_not_blamed_on_the_tool(daemon: Daemon) -> None:
    ok(daemon, "conv", "create", "--id", "c-none")  # no servers: the turn dials nothing
    turn = ok_json(daemon, "turn", "begin", "c-none")["turnId"]
    done = run_ctl(daemon, "call", turn, "mcp__nope", "{}")
    assert done.returncode == 1
    assert done.stdout.startswith("Unknown tool 'mcp__nope'")
    assert done.stderr == "meworkctl: the call ended in an error (isError)\n"
