"""Broken settings and failures visible where people look (issue 15, points 4 and 5).

One real daemon: servers.list, servers.get and daemon.status carry the settings file's own
state (``settings: {state, error, errors, invalidServers, warnings}``) and meworkctl prints it;
messages say what to do (an unset ``${VAR}``, a command not on PATH) and keep their kind.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mework_client.aio import connect
from mework_client.ctl.daemon import format_status
from mework_client.ctl.servers import format_server, format_servers
from mework_client.ctl.servers_probe import format_test
from mework_client.ctl.turn import format_turn

from tests.daemon_helpers import begin_turn, envdump, start_daemon

pytestmark = pytest.mark.anyio

GOOD = json.dumps(envdump())


def settings_text(servers: str) -> str:
    return '{"assets": {"mcpServers": {' + servers + "}}}"


async def test_broken_settings_show_in_list_get_and_status(short_tmp: Path) -> None:
    path = short_tmp / "settings.json"
    # A duplicated name, and an entry that does not validate.
    path.write_text(
        settings_text(f'"ok": {GOOD}, "dup": {GOOD}, "dup": {GOOD}, "bad": {{"command": 5}}')
    )
    path.chmod(0o600)
    async with start_daemon(short_tmp) as (_daemon, sock), connect(sock) as c:
        listed = await c.call("servers.list")
        health = listed["settings"]
        assert health["state"] == "problems"
        assert health["error"] is None
        assert any("dup" in e for e in health["errors"]), health
        assert list(health["invalidServers"]) == ["bad"]
        assert health["path"] == str(path)
        text = format_servers(listed)
        assert "invalid" in text
        assert "bad" in text
        assert any("settings error:" in line and "dup" in line for line in text.splitlines())

        got = await c.call("servers.get", {"name": "bad"})
        assert got["status"] == "invalid"
        assert got["error"]
        assert got["settings"]["state"] == "problems"
        assert "error: " in format_server(got)

        status = await c.call("daemon.status")
        assert status["settings"]["invalidServers"].keys() == {"bad"}
        shown = format_status(status)
        assert "invalid entry bad:" in shown
        assert "settings error:" in shown

        # Not JSON: the file is not in force; every view says so, with the error.
        path.write_text("{ this is not json")
        await c.call("settings.reload")
        for result in (await c.call("servers.list"), await c.call("daemon.status")):
            assert result["settings"]["state"] == "unreadable"
            assert result["settings"]["error"]
        assert "settings file not in force:" in format_servers(await c.call("servers.list"))

        # Unsafe permissions: refused, and said so.
        path.write_text(settings_text(f'"ok": {GOOD}'))
        path.chmod(0o666)
        await c.call("settings.reload")
        unsafe = (await c.call("servers.list"))["settings"]
        assert unsafe["state"] == "unreadable"
        assert "writable" in unsafe["error"], unsafe
        assert "settings file not in force:" in format_status(await c.call("daemon.status"))

        path.chmod(0o600)
        await c.call("settings.reload")
        fixed = await c.call("servers.list")
        assert fixed["settings"]["state"] == "ok"
        assert [s["name"] for s in fixed["servers"]] == ["ok"]
        assert format_servers(fixed).count("\n") == 1  # the table only


async def test_messages_say_what_to_do_and_keep_their_kind(short_tmp: Path) -> None:
    servers = {
        "unset": envdump(env={"TOKEN": "${MW_SURELY_UNSET_VARIABLE}"}),
        "nopath": {"command": "mework-no-such-command"},
    }
    environ = {"PATH": "/mework/test/bin:/usr/bin", "HOME": str(short_tmp)}
    async with (
        start_daemon(short_tmp, servers, environ=environ) as (_daemon, sock),
        connect(sock) as c,
    ):
        unset = await c.call("servers.test", {"name": "unset"})
        assert unset["reason"] == "unset_variable"
        assert "meworkd's environment" in unset["error"]
        assert "systemctl --user set-environment MW_SURELY_UNSET_VARIABLE=" in unset["error"]
        assert "EnvironmentFile=" in unset["error"]
        assert "envFile" in unset["error"]
        assert "[unset_variable]" not in format_test(unset)  # a kind is for --json (issue 25.7)

        missing = await c.call("servers.test", {"name": "nopath"})
        assert missing["reason"] == "command_not_found"
        assert "PATH=/mework/test/bin:/usr/bin" in missing["error"]
        assert "[command_not_found]" not in format_test(missing)

        turn = await begin_turn(c, ["nopath", "unset"])
        kinds = {f["server"]: f["kind"] for f in turn["failures"]}
        assert kinds == {"nopath": "command_not_found", "unset": "unset_variable"}
        assert "nopath: command not found" in format_turn(turn)
