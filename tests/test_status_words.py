"""One status, the same words everywhere (issue 25.3, in part): a server's last failure shows
in ``servers list`` and ``servers show`` as in the UI, not only in ``--json``; a settings file
that is not in force is said with one sentence by meworkctl and the UI alike.
"""

from __future__ import annotations

import re

import pytest
from mework_client import Client
from mework_client.ctl.servers import format_server, format_servers
from mework_client.ctl.settings_state import settings_lines
from mework_protocol.wording import server_state, unreadable_settings

from tests.test_ctl import (
    FAKE,
    Daemon,
    daemon_fixture,  # noqa: F401  (the daemon fixture: one daemon for this module)
    ok,
    ok_json,
    run_ctl,
)

STATUS_LINE = re.compile(r"^status: +failed: command_not_found$", re.MULTILINE)
FAILURE = {"kind": "command_not_found", "error": "command not found: mcp-server-tiem"}


def entry(status: str, last: dict[str, str] | None) -> dict[str, object]:
    return {"name": "tiem", "type": "stdio", "enabled": True, "status": status, "lastError": last}


def test_a_last_failure_is_the_status_in_list_and_show() -> None:
    listed = format_servers({"servers": [entry("enabled", FAILURE)]})
    assert listed.splitlines()[1].split()[3:5] == ["failed:", "command_not_found"]
    shown = format_server({**entry("enabled", FAILURE), "server": {"command": "x"}})
    assert STATUS_LINE.search(shown), shown
    assert "last error: command not found: mcp-server-tiem" in shown
    # Connected now, or switched off: that is its state, whatever failed before.
    assert server_state(entry("connected", FAILURE)) == "connected"
    assert server_state(entry("disabled", FAILURE)) == "disabled"
    assert "last error" not in format_server({**entry("connected", FAILURE), "server": {}})


def test_the_ui_and_meworkctl_say_a_failure_and_a_broken_file_alike() -> None:
    pytest.importorskip("textual")
    from mework_ui.words import server_status, settings_banner

    assert server_state(entry("enabled", FAILURE)) in server_status(
        entry("enabled", FAILURE), FAILURE
    )
    said = unreadable_settings("not valid JSON at line 1")
    banner = settings_banner({"unreadable": "not valid JSON at line 1"})
    ctl = settings_lines({"settings": {"state": "unreadable", "error": "not valid JSON at line 1"}})
    assert said in banner
    assert ctl == [said]


def test_servers_list_shows_a_failure_a_turn_met(daemon: Daemon) -> None:
    ok(daemon, "servers", "add", "sw-tiem", "--", "mcp-server-tiem")
    ok(daemon, "conv", "create", "--id", "sw-c", "--server", "sw-tiem")
    begun = ok_json(daemon, "turn", "begin", "sw-c")
    assert [f["kind"] for f in begun["failures"]] == ["command_not_found"]
    row = next(r for r in ok(daemon, "servers", "list").splitlines() if r.startswith("sw-tiem"))
    assert "failed: command_not_found" in row
    assert STATUS_LINE.search(ok(daemon, "servers", "show", "sw-tiem"))


def test_test_connection_is_the_servers_latest_word(daemon: Daemon) -> None:
    """A fixed command whose Test connection succeeds no longer shows the old failure; a failed
    Test connection is recorded as the server's last error."""
    ok(daemon, "servers", "add", "sw-fix", "--", "mcp-server-tiem")
    ok(daemon, "conv", "create", "--id", "sw-c2", "--server", "sw-fix")
    ok_json(daemon, "turn", "begin", "sw-c2")
    assert ok_json(daemon, "servers", "show", "sw-fix")["lastError"]["conversation"] == "sw-c2"
    with Client(daemon.socket) as client:  # fixed by hand, as the UI's fields or an editor do
        patch = {"command": FAKE[0], "args": FAKE[1:]}
        client.call("servers.update", {"name": "sw-fix", "patch": patch})
    # The failure was the old command's: the fixed entry starts with none, test or not.
    assert ok_json(daemon, "servers", "show", "sw-fix")["lastError"] is None
    ok(daemon, "servers", "test", "sw-fix")
    assert ok_json(daemon, "servers", "show", "sw-fix")["lastError"] is None
    assert "failed" not in ok(daemon, "servers", "show", "sw-fix")

    ok(daemon, "servers", "add", "sw-bad", "--", "mcp-server-tiem")
    assert run_ctl(daemon, "servers", "test", "sw-bad").returncode == 1
    last = ok_json(daemon, "servers", "show", "sw-bad")["lastError"]
    assert (last["kind"], last["conversation"], last["test"]) == ("command_not_found", None, True)
    with Client(daemon.socket) as client:  # a change that is not its connection keeps it
        client.call("servers.update", {"name": "sw-bad", "patch": {"description": "typo"}})
    assert ok_json(daemon, "servers", "show", "sw-bad")["lastError"]["kind"] == "command_not_found"
    assert STATUS_LINE.search(ok(daemon, "servers", "show", "sw-bad"))
