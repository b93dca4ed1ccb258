"""The UI's own logic without a daemon: coalesced re-reads, why a tool would be missing."""

import anyio
import pytest

pytest.importorskip("textual")

from mework_ui.app import MeworkApp
from mework_ui.model import Coalescer, Model, why_missing
from mework_ui.words import check_lines, check_summary, server_status

pytestmark = pytest.mark.anyio


async def test_a_burst_costs_one_reread_and_late_marks_one_more() -> None:
    stale, reads = Coalescer(), []
    entered, release = anyio.Event(), anyio.Event()

    async def reread(parts: set[str]) -> None:
        reads.append(parts)
        entered.set()
        if len(reads) == 1:
            await release.wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stale.run, reread)
        for _ in range(50):
            stale.mark("servers")
        stale.mark("settings")
        with anyio.fail_after(5):
            await entered.wait()
        for _ in range(20):  # while the first read runs: kept for exactly one more
            stale.mark("servers")
        release.set()
        with anyio.fail_after(5):
            while stale.rounds < 2:
                await anyio.lowlevel.checkpoint()
        tg.cancel_scope.cancel()
    assert reads == [{"servers", "settings"}, {"servers"}]


ENTRY = {"name": "gh", "status": "enabled", "enabled": True, "disabledTools": ["push"]}
CONV = {"id": "c1", "mcpServers": ["gh"]}


def test_why_a_tool_is_missing_check_by_check() -> None:
    failure = {"reason": "exited", "error": "exited with code 1", "stderrTail": ["no TOKEN"]}
    checks = why_missing("gh", ENTRY, CONV, failure, "push", ["pull", "push"])
    assert check_lines(checks) == [
        f"✓ {'server ' + repr('gh') + ' is valid':44} servers.list",
        f"✓ {'enabled':44} servers.list",
        f"✓ {'selected in this conversation':44} conversations.get",
        f"✘ {'tool ' + repr('push') + ' switched off':44} servers.list",
        f"✓ {'the server lists it':44} servers.tools",
        f"✘ {'failed: exited':44} server.status",
        "    exited with code 1",
        "    stderr: no TOKEN",
        f"? {'the chat model must support tool calling':44} outside meworkd",
    ]


def test_why_a_server_is_missing_in_one_line_or_by_what_stops_it() -> None:
    assert check_summary("gh", why_missing("gh", ENTRY, CONV, None)) == [
        "✓ gh: valid, enabled, selected, no failure seen"
    ]
    off = {**ENTRY, "enabled": False, "auth": {"state": "required"}}
    assert check_summary("gh", why_missing("gh", off, {"id": "c2"}, None)) == [
        "✘ gh: disabled in Settings → MCP (space)",
        "✘ gh: not selected in this conversation",
        "✘ gh: login required",
    ]
    assert check_summary("x", why_missing("x", None, CONV, None)) == [
        "✘ x: server 'x' is not registered"
    ]
    unknown = why_missing("gh", ENTRY, CONV, None, "pull", None)
    assert [c.ok for c in unknown][4] is None  # never tested: not known what it lists


def test_no_server_is_shown_connected_while_meworkd_is_away() -> None:
    model = Model(MeworkApp(), None, lambda: None)
    model.servers = {
        "a": {"name": "a", "status": "connected", "sessions": 2},
        "b": {"name": "b", "status": "disabled"},
    }
    model.set_connection("↻ reconnecting…", online=False)
    statuses = {name: server_status(entry, None) for name, entry in model.servers.items()}
    assert statuses == {"a": "? unknown", "b": "– disabled"}
