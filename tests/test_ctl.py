"""meworkctl: the command line against a real daemon (subprocesses), plus its pure formatting.

The daemon runs as a subprocess in a temporary XDG tree under /tmp (AF_UNIX paths are short);
the only wait on a condition is the bounded start-up poll until its socket answers. Everything
else synchronises on output the processes print.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mework_client import RpcError
from mework_client.ctl import Style, describe_rpc_error, format_table, main
from mework_client.ctl.approvals import (
    ApprovalWatcher,
    format_approval_request,
    format_approvals,
    format_audit,
)
from mework_client.ctl.conv import format_conversations
from mework_client.ctl.parser import GROUPS, all_commands
from mework_client.ctl.servers import format_import
from mework_client.ctl.servers_import import import_failed
from mework_client.ctl.servers_probe import _test_failed, format_test
from mework_client.ctl.turn import _call_failed, format_call, format_turn

from tests.daemons import start_meworkd, stop_meworkd
from tests.test_ctl_startup import STATUS, loaded_by, slow_modules

COMMANDS = all_commands()

REPO = Path(__file__).resolve().parent.parent
BIN = REPO / ".venv" / "bin"
MEWORKCTL = BIN / "meworkctl"
PYTHON = BIN / "python"
FAKE = [str(PYTHON), str(REPO / "tests" / "servers" / "fake.py")]
HEAVY = ("mcp", "meworkd", "anyio", "msgspec", "pydantic", "httpx", "structlog", "jsonrpcserver")
RUN_TIMEOUT = 30


# --- a real daemon ------------------------------------------------------------------------------


@dataclass
class Daemon:
    root: Path
    proc: subprocess.Popen[bytes]

    @property
    def socket(self) -> Path:
        return self.root / "run" / "mework" / "meworkd.sock"

    @property
    def settings(self) -> Path:
        return self.root / "cfg" / "mework" / "settings.json"

    def env(self) -> dict[str, str]:
        return xdg_env(self.root)


def xdg_env(root: Path) -> dict[str, str]:
    """This environment, with the XDG tree under ``root`` (and nothing else redirecting)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MEWORK_"))}
    return base | {
        "XDG_CONFIG_HOME": str(root / "cfg"),
        "XDG_RUNTIME_DIR": str(root / "run"),
        "XDG_STATE_HOME": str(root / "state"),
    }


def start_daemon(root: Path) -> Daemon:
    (root / "run").mkdir(mode=0o700)
    proc, notices = start_meworkd(
        env=xdg_env(root), notify=root / "notify", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    notices.close()
    return Daemon(root, proc)


def stop_daemon(daemon: Daemon) -> None:
    stop_meworkd(daemon.proc)
    if daemon.proc.stderr is not None:
        daemon.proc.stderr.close()


@pytest.fixture(scope="module", name="daemon")
def daemon_fixture() -> Iterator[Daemon]:
    """One daemon per module that uses it (test_ctl_interactive imports it too); each test uses
    its own server and conversation names."""
    with tempfile.TemporaryDirectory(prefix="mw-", dir="/tmp") as d:
        running = start_daemon(Path(d))
        try:
            yield running
        finally:
            stop_daemon(running)


def run_ctl(
    daemon: Daemon | None, *args: str, input: str | None = None, socket_path: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``meworkctl --socket ...`` (the daemon's socket, or ``socket_path`` without a daemon)."""
    if socket_path is None:
        assert daemon is not None
        socket_path = daemon.socket
    env = daemon.env() if daemon is not None else dict(os.environ)
    done = subprocess.run(
        [str(MEWORKCTL), "--socket", str(socket_path), *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        env=env,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def ok(daemon: Daemon, *args: str, input: str | None = None) -> str:
    done = run_ctl(daemon, *args, input=input)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def ok_json(daemon: Daemon, *args: str) -> Any:
    return json.loads(ok(daemon, "--json", *args))


# --- start-up, help, completion -----------------------------------------------------------------


def test_import_loads_only_the_standard_library_and_mework_client() -> None:
    done = subprocess.run(
        [str(PYTHON), "-X", "importtime", "-c", "import mework_client.ctl"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=True,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "mework_client.ctl" in imported
    heavy = sorted(m for m in imported if m.split(".")[0] in HEAVY)
    assert heavy == [], heavy
    assert "mework_client.service" not in imported  # loaded by install-service only


def test_status_loads_only_what_it_needs(daemon: Daemon) -> None:
    """``meworkctl status`` answered by a daemon (bench B6): no argparse, typing, other groups."""
    loaded = loaded_by(["status"], daemon.env(), exit_code=0)
    assert {m for m in loaded if m.startswith("mework_client")} == STATUS
    assert slow_modules(loaded) == []


def help_paths() -> list[list[str]]:
    paths = [[], *(g.split() for g in GROUPS)]
    return paths + [c.path.split() for c in COMMANDS]


@pytest.mark.parametrize("path", help_paths(), ids=lambda p: " ".join(p) or "meworkctl")
def test_every_command_has_help(path: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*path, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: meworkctl")
    assert "example:" in out or not path  # every group and command shows one


def test_every_command_has_a_one_line_help_and_an_example() -> None:
    for command in COMMANDS:
        assert command.help, command.path
        assert "\n" not in command.help, command.path
        assert "meworkctl " in command.example, command.path


def test_usage_errors_exit_2(daemon: Daemon) -> None:
    assert run_ctl(daemon).returncode == 2
    assert run_ctl(daemon, "servers").returncode == 2
    assert run_ctl(daemon, "servers", "frobnicate").returncode == 2
    assert run_ctl(daemon, "settings", "set", "nope=1").returncode == 2
    done = run_ctl(daemon, "settings", "set", "max_reply_bytes=lots")
    assert done.returncode == 2
    assert "max_reply_bytes needs a number" in done.stderr
    done = run_ctl(daemon, "servers", "add", "x")
    assert done.returncode == 2
    assert "after --" in done.stderr
    assert (
        run_ctl(daemon, "servers", "add", "x", "--url", "http://h/mcp", "--", "cmd").returncode == 2
    )
    assert run_ctl(daemon, "servers", "add", "x", "--header", "A=b", "--", "cmd").returncode == 2
    assert run_ctl(daemon, "call", "turn", "tool", "[1, 2]").returncode == 2
    assert run_ctl(daemon, "call", "turn", "tool", "{oops").returncode == 2


def test_completion_script_is_valid_bash_and_completes(tmp_path: Path) -> None:
    script = subprocess.run(
        [str(MEWORKCTL), "completion", "bash"],
        capture_output=True,
        text=True,
        check=True,
        timeout=RUN_TIMEOUT,
    ).stdout
    path = tmp_path / "meworkctl.bash"
    path.write_text(script)
    subprocess.run(["bash", "-n", str(path)], check=True, timeout=RUN_TIMEOUT)
    probe = f"""
source {path}
t() {{ COMP_WORDS=("$@"); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); COMPREPLY=(); _meworkctl
      echo "${{COMPREPLY[*]}}"; }}
t meworkctl se
t meworkctl --socket /x servers a
t meworkctl servers import --on-conflict ''
t meworkctl servers auto-approve fs tool ''
t meworkctl conv create --l
t meworkctl tasks ''
t meworkctl tasks --o
t meworkctl tasks show --j
"""
    lines = subprocess.run(
        ["bash", "-c", probe], capture_output=True, text=True, check=True, timeout=RUN_TIMEOUT
    ).stdout.splitlines()
    assert lines == [
        "settings servers",
        "add auto-approve",
        "error replace skip",
        "on off",
        "--level",
        "show cancel",  # a command that is a group too: its commands
        "--open",
        "--json",
    ]


# --- the daemon is not there --------------------------------------------------------------------


def test_not_running_exits_3_with_a_clear_message(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "meworkd.sock"
    done = run_ctl(None, "status", socket_path=missing)
    assert done.returncode == 3
    assert done.stdout == ""
    assert done.stderr.strip() == (
        f"meworkctl: meworkd is not running (no daemon on {missing}). "
        "Start it with: meworkd  (or: systemctl --user start meworkd.socket)"
    )


# --- status, settings, servers ------------------------------------------------------------------


def test_status_human_and_json(daemon: Daemon) -> None:
    human = ok(daemon, "status")
    fields = dict(line.split(":", 1) for line in human.splitlines())
    assert fields["pid"].strip() == str(daemon.proc.pid)
    assert fields["socket"].strip() == str(daemon.socket)
    assert fields["settings"].strip() == str(daemon.settings)
    for key in ("version", "uptime", "servers", "sessions", "conversations"):
        assert key in fields
    status = ok_json(daemon, "status")
    assert status["pid"] == daemon.proc.pid
    assert status["socketPath"] == str(daemon.socket)
    # global options are accepted after the command too
    assert json.loads(ok(daemon, "status", "--json")).keys() == status.keys()


def test_settings_set_and_show(daemon: Daemon) -> None:
    out = ok(
        daemon,
        "settings",
        "set",
        "session_idle_minutes=12",
        "max_reply_bytes=131072",
        "mandatory_description_prefix=[ask] ",
    )
    assert "session_idle_minutes:" in out
    assert "12" in out
    assert '"[ask] "' in out  # strings are quoted so a trailing space shows
    mcp = json.loads(ok(daemon, "settings", "show"))["mcp"]
    assert mcp["session_idle_minutes"] == 12
    assert mcp["max_reply_bytes"] == 131072
    assert mcp["mandatory_description_prefix"] == "[ask] "
    assert ok_json(daemon, "settings", "reload")["applied"] is True


def server_row(listing: str, name: str) -> list[str]:
    rows = [line.split() for line in listing.splitlines()]
    return next(row for row in rows if row and row[0] == name)


def test_servers_add_list_show_reveal(daemon: Daemon) -> None:
    out = ok(
        daemon,
        "servers",
        "add",
        "s-fs",
        "--env",
        "TOKEN=hunter2-secret",
        "--description",
        "Local files",
        "--timeout",
        "90",
        "--",
        "npx",
        "-y",
        "pkg",
        "--",
        "/a b",
    )
    assert "added stdio server s-fs" in out
    ok(
        daemon,
        "servers",
        "add",
        "s-docs",
        "--url",
        "http://127.0.0.1:3000/mcp",
        "--header",
        "Authorization=Bearer sekrit-token",
        "--disabled",
    )
    listing = ok(daemon, "servers", "list")
    assert listing.splitlines()[0].split() == [
        "NAME", "TYPE", "ENABLED", "STATUS", "TOOLS", "DEFINITIONS", "COMMAND/URL"
    ]  # fmt: skip
    assert server_row(listing, "s-fs")[:4] == ["s-fs", "stdio", "yes", "enabled"]
    assert server_row(listing, "s-docs") == [
        "s-docs",
        "streamable_http",
        "no",
        "disabled",
        "-",  # no tools reported yet: nothing known of its cost
        "-",
        "http://127.0.0.1:3000/mcp",
    ]
    shown = ok(daemon, "servers", "show", "s-fs")
    assert "hunter2-secret" not in shown
    assert "TOKEN=" in shown
    assert "npx -y pkg -- '/a b'" in shown  # a second -- belongs to the command
    assert "90 s" in shown
    assert "hunter2-secret" in ok(daemon, "servers", "show", "s-fs", "--reveal")
    entry = ok_json(daemon, "servers", "show", "s-docs", "--reveal")["server"]
    assert entry["headers"] == {"Authorization": "Bearer sekrit-token"}
    assert entry["enabled"] is False
    assert "sekrit-token" not in ok(daemon, "servers", "show", "s-docs")


def test_servers_rename_enable_disable_rm(daemon: Daemon) -> None:
    ok(daemon, "servers", "add", "s-old", "--", "true")
    assert "renamed s-old to s-new" in ok(daemon, "servers", "rename", "s-old", "s-new")
    ok(daemon, "servers", "disable", "s-new")
    assert server_row(ok(daemon, "servers", "list"), "s-new")[2:4] == ["no", "disabled"]
    ok(daemon, "servers", "enable", "s-new")
    assert server_row(ok(daemon, "servers", "list"), "s-new")[2:4] == ["yes", "enabled"]
    ok(daemon, "servers", "tool-disable", "s-new", "write")
    ok(daemon, "servers", "auto-approve", "s-new", "move", "off")
    shown = ok_json(daemon, "servers", "show", "s-new")
    assert shown["disabledTools"] == ["write"]
    assert shown["disabledAutoApproveTools"] == ["move"]
    ok(daemon, "servers", "tool-enable", "s-new", "write")
    assert ok_json(daemon, "servers", "show", "s-new")["disabledTools"] == []
    ok(daemon, "servers", "rm", "s-new")
    done = run_ctl(daemon, "servers", "rm", "s-new")
    assert done.returncode == 1
    assert done.stderr.strip() == "meworkctl: no MCP server named 's-new'"


IMPORT_DOC = """{"mcpServers": {
  "i-a": {"command": "a"},
  "i-dup": {"command": "one"},
  "i-dup": {"command": "two"},
  "i-b": {"url": "http://127.0.0.1:9/mcp", "description": "B"}
}}"""


def test_import_from_file_and_stdin(daemon: Daemon, tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(IMPORT_DOC)
    done = run_ctl(daemon, "servers", "import", str(path))
    assert done.returncode == 1  # the duplicate was rejected
    assert "duplicate names in the document (not imported): i-dup" in done.stdout
    assert "1 entry was rejected" in done.stderr
    rows = {tuple(line.split()[:2]) for line in done.stdout.splitlines()}
    assert {("added", "i-a"), ("added", "i-b"), ("rejected", "i-dup")} <= rows
    # again from stdin: now every name is a conflict
    done = run_ctl(daemon, "servers", "import", "-", input='{"i-a": {"command": "new"}}')
    assert done.returncode == 1
    assert "already exists" in done.stdout
    assert ok_json(daemon, "servers", "show", "i-a")["command"] == "a"
    out = ok(
        daemon,
        "servers",
        "import",
        "-",
        "--on-conflict",
        "replace",
        input='{"servers": {"i-a": {"command": "new"}}}',
    )
    assert ("replaced", "i-a") in {tuple(line.split()[:2]) for line in out.splitlines()}
    assert ok_json(daemon, "servers", "show", "i-a")["command"] == "new"
    out = ok(
        daemon,
        "servers",
        "import",
        "-",
        "--on-conflict",
        "skip",
        input=IMPORT_DOC.replace('"i-dup": {"command": "two"},', ""),
    )
    assert "1 added, 0 replaced, 2 skipped, 0 rejected" in out  # i-dup is unique now
    done = run_ctl(daemon, "servers", "import", "-", input="{not json")
    assert done.returncode == 1
    assert "not valid JSON" in done.stderr
    assert "(invalid_params)" not in done.stderr  # a kind is for --json (issue 25.7)
    done = run_ctl(daemon, "servers", "import", str(tmp_path / "missing.json"))
    assert done.returncode == 1
    assert "cannot read" in done.stderr


def test_export_masks_unless_revealed(daemon: Daemon) -> None:
    ok(daemon, "servers", "add", "e-one", "--env", "KEY=very-secret-value", "--", "cmd")
    exported = json.loads(ok(daemon, "servers", "export"))["mcpServers"]
    assert exported["e-one"]["command"] == "cmd"
    assert exported["e-one"]["env"]["KEY"] != "very-secret-value"
    revealed = json.loads(ok(daemon, "servers", "export", "--reveal"))["mcpServers"]
    assert revealed["e-one"]["env"]["KEY"] == "very-secret-value"


# --- dialing servers: test, tools, logs ---------------------------------------------------------


def add_kitchen(daemon: Daemon, name: str) -> None:
    ok(daemon, "servers", "add", name, "--", *FAKE, "--stderr-lines", "2")


def test_servers_test_tools_and_logs(daemon: Daemon) -> None:
    add_kitchen(daemon, "kitchen")
    out = ok(daemon, "servers", "test", "kitchen")
    assert out.startswith("ok  kitchen")
    assert "Tools (" in out
    assert "Prompts (" in out
    assert "Resources (" in out
    echo_row = next(line for line in out.splitlines() if line.startswith("echo "))
    assert echo_row.split()[:2] == ["echo", "mcp__kitchen_3171d8__echo__092c79"]
    tools = ok(daemon, "servers", "tools", "kitchen")
    assert tools.splitlines()[0].split() == ["NAME", "BOUND", "AS", "DESCRIPTION"]
    assert "Prompts" not in tools
    logs = ok(daemon, "servers", "logs", "kitchen", "--tail", "1")
    assert logs.splitlines() == ["kitchen: stderr line 1"]
    ok(daemon, "servers", "add", "broken", "--", "/nonexistent/mcp-server")
    done = run_ctl(daemon, "servers", "test", "broken")
    assert done.returncode == 1
    assert done.stdout.startswith("broken: ")
    assert "cannot connect to broken" in done.stderr


def test_logs_follow_prints_new_lines(daemon: Daemon) -> None:
    add_kitchen(daemon, "k-logs")
    ok(daemon, "servers", "test", "k-logs")  # two stderr lines in the ring
    follow = subprocess.Popen(
        [
            str(MEWORKCTL),
            "--socket",
            str(daemon.socket),
            "servers",
            "logs",
            "k-logs",
            "--tail",
            "1",
            "-f",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=daemon.env(),
    )
    try:
        assert follow.stdout is not None
        # The tail is printed after subscribing, so its line means the stream is live.
        assert follow.stdout.readline() == "kitchen: stderr line 1\n"
        ok(daemon, "servers", "test", "k-logs")
        assert follow.stdout.readline() == "kitchen: stderr line 0\n"
        assert follow.stdout.readline() == "kitchen: stderr line 1\n"
        follow.send_signal(signal.SIGINT)
        _out, err = follow.communicate(timeout=RUN_TIMEOUT)
        assert follow.returncode == 0, err
        assert "Traceback" not in err
    finally:
        if follow.poll() is None:
            follow.kill()
            follow.communicate()


# --- conversations, turns, calls, approvals, audit ----------------------------------------------


def test_conversations(daemon: Daemon) -> None:
    add_kitchen(daemon, "k-conv")
    shown = ok(daemon, "conv", "create", "--id", "c-1", "--server", "k-conv", "--level", "plan")
    assert "id:" in shown
    assert "c-1" in shown
    listing = ok(daemon, "conv", "list")
    assert listing.splitlines()[0].split() == ["ID", "SERVERS", "LEVEL", "PRESET", "UPDATED"]
    row = next(line.split() for line in listing.splitlines() if line.startswith("c-1 "))
    assert row[:4] == ["c-1", "k-conv", "plan", "-"]
    ok(daemon, "conv", "level", "c-1", "full_access")
    ok(daemon, "conv", "select", "c-1")
    conv = ok_json(daemon, "conv", "show", "c-1")
    assert conv["approvalLevel"] == "full_access"
    assert conv["mcpServers"] == []
    ok(daemon, "presets", "set", "p-1", "--server", "k-conv", "--level", "allow_edits")
    created = ok_json(daemon, "conv", "create", "--preset", "p-1")
    assert created["mcpServers"] == ["k-conv"]
    assert created["approvalLevel"] == "allow_edits"
    assert "p-1" in ok(daemon, "presets", "list")
    ok(daemon, "conv", "rm", "c-1")
    done = run_ctl(daemon, "conv", "show", "c-1")
    assert done.returncode == 1
    assert "no conversation" in done.stderr


def test_turn_call_and_audit(daemon: Daemon) -> None:
    add_kitchen(daemon, "kitchen2")
    ok(daemon, "conv", "create", "--id", "c-call", "--server", "kitchen2", "--level", "full_access")
    human = ok(daemon, "turn", "begin", "c-call")
    assert human.startswith("turn:")
    assert any(line.split()[1:3] == ["kitchen2", "echo"] for line in human.splitlines()[2:])
    begun = ok_json(daemon, "turn", "begin", "c-call")
    turn = begun["turnId"]
    echo = next(name for name, b in begun["bindings"].items() if b["tool"] == "echo")
    add = next(name for name, b in begun["bindings"].items() if b["tool"] == "add")
    error = next(name for name, b in begun["bindings"].items() if b["tool"] == "error")
    assert ok(daemon, "call", turn, echo, '{"text": "hello there"}') == "hello there\n"
    assert json.loads(
        ok(daemon, "call", turn, add, "-", input='{"a": 2, "b": 3}').split("structured content:\n")[
            1
        ]
    ) == {"total": 5}
    done = run_ctl(daemon, "call", turn, error)
    assert done.returncode == 1
    assert "this tool always fails" in done.stdout
    assert "isError" in done.stderr
    done = run_ctl(daemon, "call", turn, "no_such_tool", "{}")
    assert done.returncode == 1  # the model gets isError with the available names
    audit = ok(daemon, "audit", "--conversation", "c-call")
    rows = [line.split() for line in audit.splitlines()]
    assert rows[0] == ["TIME", "CONV", "SERVER", "TOOL", "DECISION", "BY", "MS", "BYTES", "ERROR"]
    assert [r[3:6] for r in rows[1:]][:3] == [  # TIME is two words
        ["kitchen2", "echo", "allow"],
        ["kitchen2", "add", "allow"],
        ["kitchen2", "error", "allow"],
    ]
    assert "ended" in ok(daemon, "turn", "end", turn)
    done = run_ctl(daemon, "turn", "end", turn)
    assert done.returncode == 1
    assert "no active turn" in done.stderr


def test_turn_search(daemon: Daemon) -> None:
    add_kitchen(daemon, "k-search")
    ok(daemon, "servers", "add", "k-many", "--", *FAKE, "--tools", "40")
    ok(daemon, "conv", "create", "--id", "c-search", "--server", "k-search", "--server", "k-many")
    # Over 40 tools: the turn offers search_tools and says how many wait behind it.
    human = ok(daemon, "turn", "begin", "c-search")
    assert any(line.split()[1:3] == ["meworkd", "search_tools"] for line in human.splitlines())
    assert "74 more tools deferred behind search_tools: meworkctl turn search" in human
    turn = ok_json(daemon, "turn", "begin", "c-search")["turnId"]
    human = ok(daemon, "turn", "search", turn, "add two numbers", "--limit", "2")
    rows = [line.split() for line in human.splitlines()]
    assert rows[1][:3] == ["NAME", "SERVER", "TOOL"]
    # The best matches first: both servers' add (equal scores, in name order).
    assert [r[1:3] for r in rows[2:]] == [["k-many", "add"], ["k-search", "add"]]
    found = ok_json(daemon, "turn", "search", turn, "echo the text")
    assert found["tools"][0]["tool"] == "echo"
    assert ok(daemon, "turn", "search", turn, "zzyzx").strip() == "No tool matches 'zzyzx'."
    done = run_ctl(daemon, "turn", "search", turn, " ")
    assert done.returncode == 1
    assert "needs a query" in done.stderr


def test_approvals_watch_answers_a_request(daemon: Daemon) -> None:
    add_kitchen(daemon, "k-appr")
    ok(daemon, "conv", "create", "--id", "c-appr", "--server", "k-appr")  # request_approval
    begun = ok_json(daemon, "turn", "begin", "c-appr")
    turn = begun["turnId"]
    echo = next(name for name, b in begun["bindings"].items() if b["tool"] == "echo")
    assert ok(daemon, "approvals", "list") == "No pending approvals.\n"
    watch = subprocess.Popen(
        [str(MEWORKCTL), "--socket", str(daemon.socket), "approvals", "watch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=daemon.env(),
    )
    call = None
    try:
        assert watch.stdin is not None
        assert watch.stderr is not None
        watch.stdin.write("y\n")  # read when the prompt comes
        watch.stdin.flush()
        assert watch.stderr.readline().startswith("Waiting for approval requests")
        call = subprocess.Popen(
            [
                str(MEWORKCTL),
                "--socket",
                str(daemon.socket),
                "call",
                turn,
                echo,
                '{"text": "approved!"}',
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=daemon.env(),
        )
        out, err = call.communicate(timeout=RUN_TIMEOUT)
        assert (call.returncode, out) == (0, "approved!\n"), err
        watch.send_signal(signal.SIGINT)
        out, err = watch.communicate(timeout=RUN_TIMEOUT)
        assert watch.returncode == 0, err
        assert "k-appr / echo" in out
        assert '"text": "approved!"' in out
        assert "Allow? [y/N, a = always, or a reason to deny] allowed " in out
    finally:
        for proc in (watch, call):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.communicate()
    audit = ok_json(daemon, "audit", "--conversation", "c-appr")["entries"]
    assert [(e["decision"], e["decidedBy"]) for e in audit] == [("allow", "user")]


def test_events_prints_json_lines_and_ctrl_c_exits_0(daemon: Daemon) -> None:
    events = subprocess.Popen(
        [str(MEWORKCTL), "--socket", str(daemon.socket), "events", "settings.reloaded"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=daemon.env(),
    )
    try:
        assert events.stdout is not None
        assert events.stderr is not None
        assert events.stderr.readline().startswith("Listening for events")
        ok(daemon, "settings", "reload")
        event = json.loads(events.stdout.readline())
        assert event["topic"] == "settings.reloaded"
        assert event["data"]["source"] == "rpc"
        events.send_signal(signal.SIGINT)
        _out, err = events.communicate(timeout=RUN_TIMEOUT)
        assert events.returncode == 0
        assert "Traceback" not in err
    finally:
        if events.poll() is None:
            events.kill()
            events.communicate()


def test_unknown_topic_is_an_rpc_error(daemon: Daemon) -> None:
    done = run_ctl(daemon, "events", "bogus.topic")
    assert done.returncode == 1
    assert "unknown topics: bogus.topic" in done.stderr


def test_shutdown_stops_the_daemon() -> None:
    with tempfile.TemporaryDirectory(prefix="mw-", dir="/tmp") as d:
        own = start_daemon(Path(d))
        try:
            assert "meworkd is stopping" in ok(own, "shutdown")
            assert own.proc.wait(timeout=RUN_TIMEOUT) == 0
            assert run_ctl(own, "status").returncode == 3
        finally:
            stop_daemon(own)


# --- a daemon that lacks methods, or does not answer --------------------------------------------


class FakeDaemon:
    """A socket that answers every request with ``reply(request)`` (None: never answers)."""

    def __init__(self, path: Path, reply: Callable[[dict[str, Any]], dict[str, Any] | None]):
        self.reply = reply
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen()
        self.connections: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as reader:
            for line in reader:
                request = json.loads(line)
                answer = self.reply(request)
                if answer is not None and "id" in request:
                    conn.sendall(
                        json.dumps({"jsonrpc": "2.0", "id": request["id"], **answer}).encode()
                        + b"\n"
                    )

    def close(self) -> None:
        self.listener.close()
        for conn in self.connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


@pytest.fixture
def fake_socket(short_tmp: Path) -> Path:
    return short_tmp / "fake.sock"


def method_not_found(request: dict[str, Any]) -> dict[str, Any]:
    return {"error": {"code": -32601, "message": "Method not found", "data": request["method"]}}


@pytest.mark.parametrize(
    ("argv", "method"),
    [
        (["conv", "list"], "conversations.list"),
        (["conv", "create", "--id", "x"], "conversations.create"),
        (["turn", "begin", "c"], "turns.begin"),
        (["call", "t", "n", "{}"], "turns.callTool"),
        (["approvals", "list"], "approvals.list"),
        (["approvals", "allow", "a1"], "approvals.respond"),
        (["approvals", "watch"], "events.subscribe"),
        (["audit"], "audit.list"),
        (["tasks"], "tasks.list"),
        (["tasks", "show", "c1"], "tasks.get"),
        (["servers", "test", "x"], "servers.test"),
        (["servers", "logs", "x"], "servers.logs"),
        (["servers", "logs", "x", "-f"], "events.subscribe"),
    ],
)
def test_a_missing_method_is_reported_cleanly(
    fake_socket: Path, argv: list[str], method: str
) -> None:
    fake = FakeDaemon(fake_socket, method_not_found)
    try:
        done = run_ctl(None, *argv, socket_path=fake_socket)
    finally:
        fake.close()
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == f"meworkctl: this meworkd does not implement {method}\n"


def test_no_reply_times_out(fake_socket: Path) -> None:
    fake = FakeDaemon(fake_socket, lambda _request: None)
    try:
        done = run_ctl(None, "--timeout", "0.2", "status", socket_path=fake_socket)
    finally:
        fake.close()
    assert done.returncode == 1
    assert "no reply from meworkd within 0.2 s" in done.stderr


# --- install-service (in-process) ---------------------------------------------------------------


def test_install_and_uninstall_service(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exe = tmp_path / "bin" / "meworkd"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    units = tmp_path / "units"
    assert main(["install-service", "--exec", str(exe), "--unit-dir", str(units)]) == 0
    out = capsys.readouterr().out
    assert f"Wrote {units / 'meworkd.service'}" in out
    assert f"Wrote {units / 'meworkd.socket'}" in out
    assert "systemctl --user daemon-reload && systemctl --user enable --now meworkd.socket" in out
    assert f"ExecStart={exe} " in (units / "meworkd.service").read_text()
    assert main(["--json", "uninstall-service", "--unit-dir", str(units)]) == 0
    removed = json.loads(capsys.readouterr().out)["removed"]
    assert sorted(Path(p).name for p in removed) == ["meworkd.service", "meworkd.socket"]
    assert list(units.iterdir()) == []


# --- formatting (pure) --------------------------------------------------------------------------


def test_table_pads_columns_and_bolds_only_in_colour() -> None:
    table = format_table(["NAME", "N"], [["a", 1], ["longer", None], ["b", True]])
    assert table.splitlines() == ["NAME    N", "a       1", "longer  -", "b       yes"]
    coloured = format_table(["NAME"], [["x"]], Style(color=True))
    assert coloured.splitlines()[0] == "\x1b[1mNAME\x1b[0m"
    assert "\x1b" not in format_table(["NAME"], [["x"]])


class FakeTty:
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_without_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert Style.for_stream(FakeTty()).color  # type: ignore[arg-type]
    assert not Style.for_stream(sys.stdout).color or sys.stdout.isatty()
    monkeypatch.setenv("NO_COLOR", "1")
    assert not Style.for_stream(FakeTty()).color  # type: ignore[arg-type]


TEST_OK = {
    "ok": True,
    "server": "fs",
    "serverInfo": {"name": "secure-filesystem-server", "version": "0.2.0"},
    "protocolVersion": "2025-11-25",
    "tools": [
        {
            "name": "read_file",
            "boundName": "mcp__fs_abc123__read-file__def456",
            "description": "Read a file. " + "Very long. " * 20,
        },
        {"name": "list", "description": "List things"},
    ],
    "prompts": [{"name": "greet", "description": "Greet someone"}],
    "resources": [{"uri": "file:///a", "name": "a", "mimeType": "text/plain"}],
    "resourceTemplates": [{"uriTemplate": "file:///{p}", "name": "p"}],
    "durationMs": 123.4,
    "stderrTail": ["starting"],
    "problems": [
        {"tool": "read_file", "problem": "name_shortened", "detail": "offered as x"},
        "root-level anyOf in search",
    ],
}


def test_format_test_success() -> None:
    lines = format_test(TEST_OK).splitlines()
    assert lines[0] == "ok  secure-filesystem-server 0.2.0, protocol 2025-11-25, 123 ms"
    assert lines[1] == "Tools (2):"
    assert lines[2].split() == ["NAME", "BOUND", "AS", "DESCRIPTION"]
    assert lines[3].startswith("read_file  mcp__fs_abc123__read-file__def456  Read a file.")
    assert lines[3].endswith("…")
    assert len(lines[3].split("  ")[-1]) == 60
    assert lines[4].split() == ["list", "-", "List", "things"]
    assert "Prompts (1):" in lines
    assert "Resources (2):" in lines
    assert "  - read_file: offered as x" in lines  # the code is --json's
    assert "  - root-level anyOf in search" in lines
    tools_only = format_test(TEST_OK, tools_only=True)
    assert tools_only.splitlines()[0].split() == ["NAME", "BOUND", "AS", "DESCRIPTION"]
    assert "Prompts" not in tools_only


def test_format_test_failure() -> None:
    failed = {
        "ok": False,
        "server": "fs",
        "error": "command not found: npx",
        "stderrTail": ["line 1", "line 2"],
    }
    assert format_test(failed).splitlines() == [
        "fs: command not found: npx",
        "stderr (last lines):",
        "  line 1",
        "  line 2",
    ]
    assert _test_failed(failed) == "cannot connect to fs"
    assert _test_failed(TEST_OK) is None


def test_format_turn() -> None:
    result = {
        "turnId": "t-1",
        "tools": [
            {
                "name": "mcp__fs__read",
                "title": "Read",
                "description": "Read a file",
                "inputSchema": {"type": "object"},
            }
        ],
        "bindings": {"mcp__fs__read": {"server": "fs", "tool": "read_file", "annotations": {}}},
        "systemPrompt": "...",
        "failures": [{"server": "docs", "reason": "HTTP 401"}],
    }
    assert format_turn(result).splitlines() == [
        "turn:  t-1",
        "Tools (1):",
        "NAME           SERVER  TOOL       DESCRIPTION",
        "mcp__fs__read  fs      read_file  Read a file",
        "docs: HTTP 401",
    ]


def test_format_call() -> None:
    result = {
        "content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
            {"type": "resource_link", "uri": "file:///x", "name": "x"},
            {"type": "resource", "resource": {"uri": "mem://a", "text": "inline"}},
        ],
        "structuredContent": {"total": 5},
        "isError": False,
    }
    assert format_call(result).splitlines() == [
        "content:",
        "hello",
        "[image image/png, 8 bytes]",
        "[link file:///x x]",
        "[resource mem://a]",
        "inline",
        "structured content:",
        "{",
        '  "total": 5',
        "}",
    ]
    assert _call_failed(result) is None
    assert _call_failed({"content": [], "isError": True}) is not None


def test_format_approvals_and_request() -> None:
    approval = {
        "approvalId": "ap1",
        "conversationId": "c1",
        "turnId": "t1",
        "name": "mcp__x",
        "server": "fs",
        "tool": "write_file",
        "reason": "asks for every call",
        "arguments": {"path": "/tmp/x", "content": "y" * 500},
    }
    table = format_approvals({"approvals": [approval]}).splitlines()
    assert table[0].split() == ["ID", "CONV", "SERVER", "TOOL", "REASON", "ARGUMENTS"]
    assert table[1].split()[:4] == ["ap1", "c1", "fs", "write_file"]
    request = format_approval_request(approval)
    assert request.splitlines()[:3] == [
        "fs / write_file  (approval ap1, conversation c1, turn t1)",
        "reason: asks for every call",
        "arguments:",
    ]
    assert '    "path": "/tmp/x",' in request
    assert "… (300 more characters)" in request
    assert "y" * 201 not in request
    assert format_approvals({"approvals": []}) == "No pending approvals."
    from_view = format_approval_request({**approval, "origin": "app"}).splitlines()
    assert from_view[1] == "asked by the tool's view (MCP Apps), not by the model"


def test_format_audit_and_conversations() -> None:
    audit = {
        "entries": [
            {
                "time": "2026-01-02T03:04:05+00:00",
                "conversationId": "c1",
                "server": "fs",
                "tool": "read",
                "decision": "deny",
                "decidedBy": "user",
                "durationMs": 12.6,
                "replyBytes": None,
                "isError": None,
            }
        ]
    }
    rows = format_audit(audit).splitlines()
    assert rows[0].split() == [
        "TIME",
        "CONV",
        "SERVER",
        "TOOL",
        "DECISION",
        "BY",
        "MS",
        "BYTES",
        "ERROR",
    ]
    assert rows[1].split()[2:] == ["c1", "fs", "read", "deny", "user", "13", "-", "-"]
    conversations = {
        "conversations": [
            {
                "id": "c1",
                "mcpServers": ["a", "b"],
                "approvalLevel": "plan",
                "preset": None,
                "createdAt": 0,
                "updatedAt": "2026-01-02T03:04:05Z",
            }
        ]
    }
    rows = format_conversations(conversations).splitlines()
    assert rows[1].split()[:5] == ["c1", "a,", "b", "plan", "-"]


def test_format_import() -> None:
    result = {
        "format": "mcpServers",
        "duplicates": ["d"],
        "added": ["a"],
        "replaced": [],
        "skipped": [{"name": "s", "reason": "exists"}],
        "rejected": [{"name": "d", "reason": "the name appears more than once"}],
    }
    lines = format_import(result).splitlines()
    assert lines[0].split() == ["RESULT", "NAME", "REASON"]
    assert lines[1].split() == ["added", "a", "-"]
    assert lines[2].split() == ["skipped", "s", "exists"]
    assert lines[3].startswith("rejected  d     the name appears more than once")
    assert lines[4] == "duplicate names in the document (not imported): d"
    assert lines[5] == "1 added, 0 replaced, 1 skipped, 1 rejected (format: mcpServers)"
    assert import_failed(result) == "1 entry was rejected"


def test_describe_rpc_error() -> None:
    assert describe_rpc_error(RpcError(-32601, "Method not found", "turns.begin")) == (
        "this meworkd does not implement turns.begin"
    )
    error = RpcError(
        -32062, "invalid settings", {"kind": "invalid_settings", "errors": ["a: bad", "b: worse"]}
    )
    assert describe_rpc_error(error) == "invalid settings\n  a: bad\n  b: worse"
    assert describe_rpc_error(error, wire=True) == (  # --json: with the kind
        "invalid settings (invalid_settings)\n  a: bad\n  b: worse"
    )
    assert describe_rpc_error(RpcError(-32603, "Internal error"), wire=True) == (
        "Internal error (internal)"
    )


# --- approvals watch (with a fake control connection) -------------------------------------------


class FakeControl:
    def __init__(self, pending: list[str], respond_error: str | None = None) -> None:
        self.pending = pending
        self.respond_error = respond_error
        self.responses: list[dict[str, Any]] = []

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        if method == "approvals.list":
            return {"approvals": [{"approvalId": a} for a in self.pending]}
        assert method == "approvals.respond"
        assert params is not None
        if self.respond_error:
            raise RpcError(-32060, "no pending approval", {"kind": self.respond_error})
        self.responses.append(params)
        self.pending.remove(params["approvalId"])
        return {"approvalId": params["approvalId"], "decision": params["decision"]}


def watcher(control: FakeControl, answers: list[str | None]) -> tuple[ApprovalWatcher, list[str]]:
    written: list[str] = []
    replies = iter(answers)
    return ApprovalWatcher(control, written.append, lambda _prompt: next(replies)), written


def request(approval_id: str) -> dict[str, Any]:
    return {"approvalId": approval_id, "server": "fs", "tool": "rm", "arguments": {"p": "/"}}


def test_watcher_allows_and_denies() -> None:
    control = FakeControl(["a1", "a2"])
    watch, written = watcher(control, ["y", ""])
    assert watch.on_event("approval.requested", request("a1"))
    assert watch.on_event("approval.requested", request("a2"))
    assert watch.on_event("approval.requested", request("a2"))  # seen already: ignored
    assert control.responses == [
        {"approvalId": "a1", "decision": "allow"},
        {"approvalId": "a2", "decision": "deny"},
    ]
    assert written[1] == "allowed a1"
    assert written[3] == "denied a2"


class NoAlways(FakeControl):
    """Refuses scope "always", as meworkd does for a tool that asks every time."""

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        if method == "approvals.respond" and params and params.get("scope") == "always":
            raise RpcError(-32602, "echo cannot always be allowed", {"kind": "invalid_params"})
        return super().call(method, params)


def test_watcher_allows_always_and_once_where_always_is_refused() -> None:
    control = FakeControl(["a1"])
    watch, written = watcher(control, ["a"])
    assert watch.on_event("approval.requested", request("a1"))
    assert control.responses == [{"approvalId": "a1", "decision": "allow", "scope": "always"}]
    assert written[-1] == "allowed a1"
    strict = NoAlways(["m1"])
    watch, written = watcher(strict, ["always"])
    assert watch.on_event("approval.requested", request("m1"))
    assert strict.responses == [{"approvalId": "m1", "decision": "allow", "scope": "once"}]
    assert "cannot be allowed always: allowed once" in written[-2]


def test_watcher_skips_requests_answered_elsewhere() -> None:
    control = FakeControl([])  # resolved before its turn came
    watch, written = watcher(control, [])
    assert watch.on_event("approval.requested", request("gone"))
    assert written == ["gone: already answered"]
    race = FakeControl(["r1"], respond_error="approval_not_found")  # resolved while asking
    watch, written = watcher(race, ["y"])
    assert watch.on_event("approval.requested", request("r1"))
    assert written[-1] == "r1: already answered"
    watch.on_event(
        "approval.resolved", {"approvalId": "r1", "decision": "deny", "decidedBy": "timeout"}
    )
    assert written[-1] == "r1: answered elsewhere (deny timeout)"


def test_watcher_stops_at_end_of_input() -> None:
    control = FakeControl(["a1"])
    watch, written = watcher(control, [None])
    assert not watch.on_event("approval.requested", request("a1"))
    assert control.responses == []
    assert "leaving it unanswered" in written[-1]
