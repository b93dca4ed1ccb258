"""The UI's own logic without a daemon: coalesced re-reads, why a tool would be missing, the
MCP tasks it keeps and their words."""

from datetime import UTC, datetime

import anyio
import pytest
from mework_protocol.wording import age, task_state

pytest.importorskip("textual")

from mework_ui.app import MeworkApp
from mework_ui.model import Coalescer, Model, why_missing
from mework_ui.taskbook import MAX_TASKS, TaskBook
from mework_ui.tasks import status_cell, task_note
from mework_ui.words import call_card, check_lines, check_summary, server_status

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


def task(call_id: str, status: str, created: str, conversation: str = "c") -> dict[str, object]:
    return {
        "callId": call_id,
        "status": status,
        "createdAt": created,
        "conversationId": conversation,
    }


def test_the_task_book_keeps_the_newest_state_and_drops_old_ended_tasks_first() -> None:
    book = TaskBook()
    book.load([task("a", "working", "2026-12-06T10:00:01Z"), {"status": "working"}])
    book.note(task("b", "input_required", "2026-12-06T10:00:02Z", "d"))
    assert [t["callId"] for t in book.newest_first()] == ["b", "a"]
    assert [t["callId"] for t in book.newest_first("c")] == ["a"]
    assert book.open_count() == 2
    book.note(task("a", "completed", "2026-12-06T10:00:01Z"))
    assert book.open_count() == 1
    assert book.of_call("a") == task("a", "completed", "2026-12-06T10:00:01Z")
    book.note({"status": "failed"})  # no call id: nothing to key it by
    for n in range(MAX_TASKS):
        book.note(task(f"open-{n}", "working", f"2026-12-06T11:{n // 60:02d}:{n % 60:02d}Z"))
    assert book.of_call("a") is None  # the ended one went first
    assert book.of_call("b") is not None
    assert len(book.tasks) == MAX_TASKS + 1  # open tasks are never dropped
    book.load([])
    assert book.newest_first() == []


def test_a_call_card_says_how_its_task_is_doing() -> None:
    card = {"server": "s", "tool": "t", "decision": "requested"}
    working = {"status": "working", "message": "half way"}
    assert call_card(card, False, working) == "⏵ s · t · task working: half way · t tasks"
    asking = {"status": "input_required"}
    said = call_card(card, False, asking)
    assert said == "⏵ s · t · task needs your answer · F4 to answer · t tasks"
    assert call_card(card, False, {"status": "completed"}) == "… s · t · running"
    assert call_card(card, False) == "… s · t · running"


def test_a_task_in_words_wherever_it_is_shown() -> None:
    now = datetime(2026, 12, 6, 10, 0, 0, tzinfo=UTC)
    assert age("2026-12-06T09:59:48.000Z", now) == "12 s"
    assert age("2026-12-06T09:55:00Z", now) == "5 min"
    assert age("2026-12-06T07:00:00Z", now) == "3 h"
    assert age("2026-12-04T10:00:00Z", now) == "2 d"
    assert age("2026-12-06T10:00:05Z", now) == "0 s"  # a clock a little ahead
    assert age("2026-12-06T10:00:00", now) == "0 s"  # no zone: read as UTC
    assert age(None, now) == "?"
    assert age("yesterday", now) == "?"
    assert task_state({"status": "input_required"}) == "needs your answer"
    assert task_state({"status": "sleeping"}) == "sleeping"
    assert task_state({}) == "?"
    ended = {"callId": "c1", "status": "cancelled", "server": "s", "tool": "t", "message": None}
    assert status_cell(ended) == "✘ cancelled"
    assert "x cancels" not in task_note(ended)
    assert "no message from the server" in task_note(ended)
    assert task_note(None).startswith("no MCP tasks yet")
    asking = {**ended, "status": "input_required"}
    assert "⚑ it asks you a question: F4 answers it" in task_note(asking)
    said = task_note(asking, {"callId": "c1", "message": "Which region?"})
    assert "⚑ it asks you: Which region? (F4 answers it)" in said
