"""Mistakes caught where they are made (issue 25.6), not when a conversation first uses the server.

A command meworkd will not find is said by ``servers add``; VS Code's own variables are named at
import with what to write instead; a misspelled key is named beside the error it causes; an
HTTP server's unset variable does not suggest envFile, which only stdio servers read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from meworkd.base.errors import InvalidSettings
from meworkd.settings.dialects import parse_import
from meworkd.settings.expand import UnsetVariable, expand_server
from meworkd.settings.parse import parse_server
from tests.test_ctl import (
    Daemon,
    daemon_fixture,  # noqa: F401  (the daemon fixture: one daemon for this module)
    ok,
    ok_json,
)

# --- servers add: a command meworkd will not find -------------------------------------------


def test_add_warns_at_once_about_a_command_not_on_the_daemons_path(daemon: Daemon) -> None:
    out = ok(daemon, "servers", "add", "typo", "--", "mcp-server-tiem", "--local-timezone", "UTC")
    added, warning = out.splitlines()
    assert added == "ok  added stdio server typo"  # stored all the same
    assert warning.startswith("warning: command 'mcp-server-tiem' is not on meworkd's PATH (")
    assert f"PATH={daemon.env()['PATH']}" in warning
    assert warning.index("is it a typo?") < warning.index("systemd")


def test_add_of_a_command_that_is_found_says_nothing_more(daemon: Daemon) -> None:
    assert ok(daemon, "servers", "add", "found", "--", sys.executable, "-V") == (
        "ok  added stdio server found\n"
    )
    result = ok_json(daemon, "servers", "add", "found2", "--", "sh", "-c", "true")
    assert result["warnings"] == []


def test_add_warns_about_a_full_path_that_does_not_exist(daemon: Daemon, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-server"
    out = ok(daemon, "servers", "add", "nopath", "--", str(missing))
    assert out.splitlines()[1] == f"warning: command {str(missing)!r} does not exist: is it a typo?"


# --- import: VS Code's own variables --------------------------------------------------------


def test_vscode_variables_are_named_at_import_with_what_to_write_instead() -> None:
    document = {
        "servers": {
            "fs": {
                "type": "stdio",
                "command": "npx",
                "args": ["-y", "server-filesystem", "${workspaceFolder}", "${userHome}/notes"],
                "env": {"SEP": "${pathSeparator}", "TOKEN": "${env:TOKEN}", "HOME2": "${HOME}"},
            }
        }
    }
    doc = parse_import(json.dumps(document))
    messages = {(w["field"], w["message"].split(":")[0]) for w in doc.warnings}
    assert messages == {
        ("args", "${workspaceFolder} is VS Code's, and unset for meworkd"),
        ("args", "${userHome} is VS Code's, and unset for meworkd"),
        ("env.SEP", "${pathSeparator} is VS Code's, and unset for meworkd"),
    }
    home = next(w["message"] for w in doc.warnings if "userHome" in w["message"])
    assert "write ${HOME}" in home
    assert doc.entries["fs"]["args"][2] == "${workspaceFolder}"  # imported as written


# --- a misspelled key -----------------------------------------------------------------------


def test_a_misspelled_key_is_named_with_the_closest_known_key() -> None:
    with pytest.raises(InvalidSettings) as caught:
        parse_server("fs", {"comand": "npx", "args": ["-y", "x"]})
    assert caught.value.errors == [
        "fs.command: required for a stdio server",
        'fs.comand: unknown key; did you mean "command"?',
    ]
    with pytest.raises(InvalidSettings) as caught:
        parse_server("fs", {"command": "npx", "timeoutSeconds": "soon", "Args": ["x"]})
    assert caught.value.errors[1] == 'fs.Args: unknown key; did you mean "args"?'


def test_a_valid_entry_with_another_hosts_key_is_left_alone() -> None:
    config = parse_server("fs", {"command": "npx", "autoApprove": ["read"]})
    assert config.command == "npx"


# --- an unset variable ----------------------------------------------------------------------


def test_an_http_servers_unset_variable_does_not_suggest_env_file() -> None:
    http = parse_server("docs", {"url": "https://x/mcp", "headers": {"A": "Bearer ${TOK}"}})
    with pytest.raises(UnsetVariable) as caught:
        expand_server("docs", http, {})
    assert "envFile" not in str(caught.value)
    assert "docs.headers.A: environment variable ${TOK} is not set" in str(caught.value)
    stdio = parse_server("fs", {"command": "npx", "env": {"A": "${TOK}"}})
    with pytest.raises(UnsetVariable) as caught:
        expand_server("fs", stdio, {})
    assert "the entry's envFile" in str(caught.value)
