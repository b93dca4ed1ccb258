"""meworkctl's start-up (bench B6): the command index, the plain-line reader, what a line loads.

The index lists every command without loading its module; these tests keep it equal to the
modules' own rows, keep the plain reader's namespace equal to argparse's, and check in fresh
interpreters which modules a command line loads (``sys.modules``, not times: no wall clock).
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
from mework_client import ctl
from mework_client.ctl.index import GROUPS, INDEX, TOP_WORDS, load
from mework_client.ctl.parser import all_commands, build_parser, parse_args
from mework_client.ctl.plain import read_plain

PYTHON = Path(sys.executable)
# Loaded by every command line; everything else of mework_client only by the commands using it.
CORE = {
    "mework_client",
    "mework_client.sync",
    "mework_client.ctl",
    "mework_client.ctl.command",
    "mework_client.ctl.index",
    "mework_client.ctl.layout",
    "mework_client.ctl.main",
    "mework_client.ctl.plain",
}
STATUS = CORE | {"mework_client.ctl.daemon", "mework_client.ctl.settings_state"}
# Never loaded by a plain line (``meworkctl status``): what argparse, typing, the daemon's
# libraries and the other commands cost at start-up.
SLOW = (
    "argparse",
    "typing",
    "socket",
    "selectors",
    "struct",
    "gettext",
    "locale",
    "shlex",
    "getpass",
    "termios",
    "unicodedata",
    "datetime",
    "textwrap",
    "shutil",
    "subprocess",
    "threading",
    "dataclasses",
    "inspect",
    "tempfile",
    "webbrowser",
    "mework_protocol.levels",
    "mework_protocol.params",
    "mework_ui",
    "meworkd",
    "mcp",
    "anyio",
    "msgspec",
    "pydantic",
    "httpx",
    "structlog",
    "jsonrpcserver",
)


def ctl_modules() -> list[str]:
    return [m.name for m in pkgutil.iter_modules(ctl.__path__) if m.name != "__main__"]


# --- the index is the modules' rows ---------------------------------------------------------------


def test_the_index_lists_every_command_of_the_modules_in_order() -> None:
    assert [(c.path, c.help) for c in all_commands()] == [(p, h) for p, h, _ in INDEX]
    with_rows = [
        m
        for m in ctl_modules()
        if hasattr(importlib.import_module(f"{ctl.__name__}.{m}"), "COMMANDS")
    ]
    assert sorted(with_rows) == sorted({m for _, _, m in INDEX})
    for module in with_rows:
        assert sorted(c.path for c in load(module)) == sorted(p for p, _, m in INDEX if m == module)


def test_every_group_in_the_index_has_its_help_and_no_more() -> None:
    groups = {p.split()[0] for p, _, _ in INDEX if " " in p}
    assert set(GROUPS) == groups
    assert len(set(TOP_WORDS)) == len(TOP_WORDS)
    assert all(len(p.split()) <= 2 for p, _, _ in INDEX)


def test_the_full_tree_and_a_partial_one_list_the_same_top_level_help() -> None:
    assert build_parser(["status"]).format_help() == build_parser().format_help()


# --- the plain reader gives what argparse gives ---------------------------------------------------


def plain_commands() -> list[str]:
    return [c.path for c in all_commands() if not (c.args or c.run or c.local)]


def test_plain_commands_are_the_ones_without_arguments() -> None:
    assert {"status", "shutdown", "servers list", "conv list", "settings show"} <= set(
        plain_commands()
    )


@pytest.mark.parametrize("path", plain_commands())
def test_a_plain_line_reads_as_argparse_reads_it(path: str) -> None:
    words = path.split()
    for line in (words, ["--json", *words], [*words, "--json"], ["--json", *words, "--json"]):
        plain = read_plain(line)
        assert plain is not None, line
        full = vars(parse_args(line))
        assert full.pop("leaf") is not None
        assert vars(plain) == {**full, "leaf": None}, line


@pytest.mark.parametrize(
    "line",
    [
        [],
        ["--json"],
        ["servers"],
        ["servers", "--json", "list"],
        ["status", "-h"],
        ["--help", "status"],
        ["status", "--timeout", "5"],
        ["--socket", "/tmp/x.sock", "status"],
        ["status", "x"],
        ["status", "--"],
        ["stat"],
        ["events"],
        ["servers", "show", "x"],
        ["servers", "show"],
        ["completion", "bash"],
        ["ui"],
    ],
    ids=lambda line: " ".join(line) or "empty",
)
def test_any_other_line_is_left_to_argparse(line: list[str]) -> None:
    assert read_plain(line) is None


# --- what a command line loads (fresh interpreters) ----------------------------------------------

LOADED = """\
import sys
from mework_client.ctl import main
code = main(sys.argv[1:])
print(f"@exit {code}", *sorted(sys.modules), sep="\\n", file=sys.stderr)
"""


NO_DAEMON = {"MEWORK_SOCKET": "/nonexistent/mework/meworkd.sock", "PATH": "/usr/bin:/bin"}


def loaded_by(line: list[str], env: dict[str, str], exit_code: int) -> set[str]:
    """The modules ``meworkctl LINE`` has loaded when it is done."""
    done = subprocess.run(
        [str(PYTHON), "-c", LOADED, *line],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()  # meworkctl's own messages, then the snippet's lines
    at = next(i for i, text in enumerate(lines) if text.startswith("@exit "))
    assert lines[at] == f"@exit {exit_code}", done.stderr
    return set(lines[at + 1 :])


def slow_modules(loaded: set[str]) -> list[str]:
    return sorted(m for m in loaded if m.split(".")[0] in SLOW or m in SLOW)


def test_status_without_a_daemon_loads_nothing_slow() -> None:
    """The same check with a daemon answering is in tests/test_ctl.py."""
    loaded = loaded_by(["status"], NO_DAEMON, exit_code=3)
    assert {m for m in loaded if m.startswith("mework_client")} == STATUS
    assert slow_modules(loaded) == []


def test_an_argparse_line_loads_only_its_own_group() -> None:
    loaded = loaded_by(["servers", "show", "x", "--json"], NO_DAEMON, exit_code=3)
    assert "argparse" in loaded
    ours = {m.rsplit(".", 1)[-1] for m in loaded if m.startswith("mework_client.ctl.")}
    groups = {m for _, _, m in INDEX}
    assert ours & groups == {
        "servers",
        "servers_edit",
        "servers_probe",
        "servers_inspect",
        "servers_registry",
        "auth",
    }
