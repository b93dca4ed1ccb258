"""The detail page's Rules tab and the cost of a server's tools, against a real daemon.

An approval answered "always" puts a rule in the server's alwaysAllowTools: the Rules tab lists
it with what it does, ``delete`` removes it, and the settings file no longer has it (its
comments stay). A rule written into the file by hand shows once meworkd has reloaded the file.
Each test runs a daemon of its own: its settings file holds comments, which the other UI tests'
JSON reading of the shared daemon's file would not take.
"""

from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("textual")

from mework_client.aio import AsyncClient, connect
from mework_ui.app import MeworkApp
from mework_ui.detail import DetailScreen
from mework_ui.dialogs import ImportDialog
from mework_ui.rules import NO_RULES, rule_matches
from mework_ui.servers import ServersScreen
from textual.pilot import Pilot
from textual.widgets import DataTable, TextArea

from tests.common import fake
from tests.daemon_fixture import replace_atomically
from tests.daemon_helpers import start_daemon
from tests.ui.helpers import cell, text, until

pytestmark = pytest.mark.anyio

SERVER = '{"command": "%s", "args": %s}'
SETTINGS = """{
  // my servers: every edit meworkd makes keeps this comment
  "assets": {
    "mcpServers": {
      "ru-fake": %s // the test server
    }
  }
}
"""
ALWAYS_ECHO = "alwaysAllowTools\x1fecho"


def settings_text(extra: str = "") -> str:
    entry = fake()
    args = str(entry["args"]).replace("'", '"')
    server = SERVER % (entry["command"], args)
    return SETTINGS % (server[:-1] + extra + "}")


def squeezed(text: str) -> str:
    """``text`` without white space: how meworkd lays out a list it edited is not the point."""
    return "".join(text.split())


async def begin(client: AsyncClient, conversation: str) -> tuple[str, str]:
    """A turn of ``conversation`` (on ru-fake) and the bound name of its echo tool."""
    await client.call("conversations.create", {"id": conversation, "mcpServers": ["ru-fake"]})
    turn = await client.call("turns.begin", {"conversationId": conversation})
    echo = next(n for n, b in turn["bindings"].items() if b["tool"] == "echo")
    return str(turn["turnId"]), echo


async def answer_always(pilot: Pilot[Any], app: MeworkApp, other: AsyncClient) -> None:
    """A call that asks, answered "always" by another frontend while the UI sees it wait."""
    turn, echo = await begin(other, "ru-c1")
    params = {"turnId": turn, "name": echo, "arguments": {"text": "hi"}}
    results: list[Any] = []

    async def call() -> None:
        results.append(await other.call("turns.callTool", params))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await until(pilot, lambda: len(app.model.questions) == 1)
        approval = next(iter(app.model.questions))
        answer = {"approvalId": approval, "decision": "allow", "scope": "always"}
        await other.call("approvals.respond", answer)
    assert results[0]["isError"] is False


async def open_rules(pilot: Pilot[Any], app: MeworkApp) -> DataTable[Any]:
    app.push_screen(DetailScreen("ru-fake", "rules"))
    await until(pilot, lambda: bool(app.screen.query("#rule-table")))
    table = app.screen.query_one("#rule-table", DataTable)
    table.focus()
    return table


def test_what_a_rule_matches_in_words() -> None:
    tools = ["read_file", "read_dir", "write_file", "stat", "rm"]
    assert rule_matches("stat", tools) == "this tool"
    assert rule_matches("read_*", tools) == "read_file, read_dir"
    assert rule_matches("*", tools) == "read_file, read_dir, write_file (+2)"
    assert rule_matches("Stat", tools) == "none listed"  # case-sensitive, as the daemon
    assert rule_matches("[rw]*", None) == "? not listed yet"


async def test_an_always_rule_shows_and_delete_removes_it(short_tmp: Path) -> None:
    settings = short_tmp / "settings.json"
    async with start_daemon(short_tmp, {}) as running, connect(running.socket) as other:
        replace_atomically(settings, settings_text())
        await other.call("settings.reload")
        app = MeworkApp(str(running.socket))
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: "ru-fake" in app.model.servers)
            await answer_always(pilot, app, other)
            assert '"alwaysAllowTools":["echo"]' in squeezed(settings.read_text())

            table = await open_rules(pilot, app)
            await until(pilot, lambda: ALWAYS_ECHO in table.rows)
            assert cell(table, ALWAYS_ECHO, "rule") == "echo"
            assert cell(table, ALWAYS_ECHO, "does") == "runs without asking"
            # Held against the tools the server last reported (the turn's discovery).
            await until(pilot, lambda: cell(table, ALWAYS_ECHO, "hits") == "this tool")

            await pilot.press("delete")
            await until(pilot, lambda: ALWAYS_ECHO not in table.rows)
            on_disk = settings.read_text()
            assert "alwaysAllowTools" not in on_disk
            assert "// my servers: every edit meworkd makes keeps this comment" in on_disk
            assert "// the test server" in on_disk
            assert text(app, "#rule-note") == NO_RULES

        # The daemon asks again: the rule is gone from what it decides by, not only the file.
        await other.subscribe(["approval.requested"])
        turn, echo = await begin(other, "ru-c2")
        call = {"turnId": turn, "name": echo, "arguments": {"text": "again"}}
        async with anyio.create_task_group() as tg:
            tg.start_soon(other.call, "turns.callTool", call)
            with anyio.fail_after(30):
                _topic, asked = await other.next_event("approval.requested")
            await other.call(
                "approvals.respond", {"approvalId": asked["approvalId"], "decision": "deny"}
            )


async def test_a_rule_written_by_hand_shows_after_the_reload(short_tmp: Path) -> None:
    settings = short_tmp / "settings.json"
    async with start_daemon(short_tmp, {}) as running, connect(running.socket) as other:
        replace_atomically(settings, settings_text())
        await other.call("settings.reload")
        app = MeworkApp(str(running.socket))
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: "ru-fake" in app.model.servers)
            table = await open_rules(pilot, app)
            await until(pilot, lambda: text(app, "#rule-note") == NO_RULES)

            # Saved from an editor: meworkd's watcher reloads it, no call from us.
            replace_atomically(settings, settings_text(', "disabledTools": ["t*", "add"]'))
            await until(pilot, lambda: len(table.rows) == 2)
            glob = "disabledTools\x1ft*"
            assert cell(table, glob, "does") == "never offered or callable"
            assert cell(table, glob, "hits") == "? not listed yet"  # no turn or test yet
            assert cell(table, "disabledTools\x1fadd", "rule") == "add"

            # The Tools tab's switch edits the same list: delete removes the pattern alone.
            table.move_cursor(row=table.get_row_index(glob))
            await pilot.press("delete")
            await until(pilot, lambda: glob not in table.rows)
            on_disk = settings.read_text()
            assert '"disabledTools":["add"]' in squeezed(on_disk)
            assert "// the test server" in on_disk


async def test_the_cost_of_a_servers_tools_shows(short_tmp: Path) -> None:
    settings = short_tmp / "settings.json"
    async with start_daemon(short_tmp, {}) as running, connect(running.socket) as other:
        replace_atomically(settings, settings_text())
        await other.call("settings.reload")
        await begin(other, "ru-cost")  # the turn's discovery: what the server reported
        cost = (await other.call("servers.get", {"name": "ru-fake"}))["cost"]
        said = (
            f"Turn cost: {cost['tools']} tools offered, {cost['bytes'] / 1024:.1f} KiB of "
            f"definitions, ~{cost['tokensEstimate']:,} tokens (estimate)"
        )
        app = MeworkApp(str(running.socket))
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: "ru-fake" in app.model.servers)
            assert isinstance(app.screen, ServersScreen)
            await until(pilot, lambda: said in text(app, "#note"))
            app.push_screen(DetailScreen("ru-fake"))
            await until(pilot, lambda: bool(app.screen.query("#cost")))
            await until(pilot, lambda: text(app, "#cost") == said)


async def test_claude_codes_rules_in_the_import_preview_then_the_rules_tab(short_tmp: Path) -> None:
    settings = short_tmp / "settings.json"
    async with start_daemon(short_tmp, {}) as running, connect(running.socket) as other:
        replace_atomically(settings, settings_text())
        await other.call("settings.reload")
        app = MeworkApp(str(running.socket))
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: "ru-fake" in app.model.servers)
            await pilot.press("a")
            await pilot.press("down", "enter")  # Add▾ → Import from JSON
            await until(pilot, lambda: isinstance(app.screen, ImportDialog))
            # Pasted from a .claude/settings.json (Claude Code's documented rule shapes).
            app.screen.query_one(TextArea).text = (
                '{"permissions": {"allow": ["mcp__ru-fake__echo"], '
                '"deny": ["mcp__ru-fake__t1*", "mcp__github"]}}'
            )
            await pilot.press("ctrl+e")
            await until(pilot, lambda: "would be set:" in text(app, "#report"))
            report = text(app, "#report")
            assert (
                "would be set: ru-fake alwaysAllowTools + echo "
                "(from permissions.allow mcp__ru-fake__echo)" in report
            )
            assert "would be set: ru-fake disabledTools + t1*" in report
            assert "! github.permissions.deny: mcp__github: no server named 'github'" in report
            assert "alwaysAllowTools" not in settings.read_text()  # a preview writes nothing
            await pilot.press("ctrl+s")
            await until(pilot, lambda: "set: ru-fake alwaysAllowTools" in text(app, "#report"))
            await pilot.press("escape")
            table = await open_rules(pilot, app)
            await until(pilot, lambda: len(table.rows) == 2)
            assert set(table.rows) == {ALWAYS_ECHO, "disabledTools\x1ft1*"}
            assert "// the test server" in settings.read_text()
