"""meworkd.state.StateDB on a real SQLite file: the conversation cache and the audit writer."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from meworkd.base.errors import ConversationNotFound
from meworkd.core.state import AuditEntry, StateDB

pytestmark = pytest.mark.anyio


def entry(call_id: str) -> AuditEntry:
    return AuditEntry(
        conversation_id="c",
        turn_id="t",
        call_id=call_id,
        server="s",
        tool="echo",
        name="s__echo",
        arguments_digest="0" * 16,
        decision="allow",
        decided_by="level",
        reason=None,
        duration_ms=1.0,
        reply_bytes=10,
        is_error=False,
    )


def calls(db: StateDB) -> list[str | None]:
    return [e["callId"] for e in db.audit(limit=1000)]


async def test_without_the_writer_entries_are_written_at_once(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "state.db").open()
    db.record(entry("a"))
    other = StateDB(tmp_path / "state.db").open()  # another reader sees it: it is on disk
    assert calls(other) == ["a"]


async def test_the_writer_writes_batches_and_what_is_left_when_it_stops(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "state.db").open()
    disk = StateDB(tmp_path / "state.db").open()
    async with anyio.create_task_group() as tg:
        await tg.start(partial(db.run_audit_writer, batch_delay=0))
        for i in range(50):  # recorded in one go, as many concurrent calls would
            db.record(entry(f"c{i}"))
        assert calls(disk) == []  # not yet: the call that recorded it has not yielded
        await anyio.lowlevel.checkpoint()  # one event-loop pass: the writer's turn
        assert len(calls(disk)) == 50
        db.record(entry("last"))
        tg.cancel_scope.cancel()
    assert calls(disk) == [*(f"c{i}" for i in range(50)), "last"]
    db.record(entry("after"))  # the writer is gone: written at once again
    assert calls(disk)[-1] == "after"


async def test_reading_the_audit_log_includes_what_is_not_written_yet(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "state.db").open()
    async with anyio.create_task_group() as tg:
        await tg.start(db.run_audit_writer)
        db.record(entry("fresh"))
        assert calls(db) == ["fresh"]
        tg.cancel_scope.cancel()


async def test_closing_writes_what_is_pending(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "state.db").open()
    async with anyio.create_task_group() as tg:
        await tg.start(db.run_audit_writer)
        db.record(entry("pending"))
        db.close()
        tg.cancel_scope.cancel()
    assert calls(StateDB(tmp_path / "state.db").open()) == ["pending"]


async def test_the_conversation_cache_follows_every_change(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "state.db").open()
    conv = db.create_conversation("c1", ["a"], "request_approval", None)
    assert db.get_conversation("c1") is db.get_conversation("c1")  # served from memory
    db.update_conversation("c1", approval_level="full_access", mcp_servers=["a", "b"])
    assert db.get_conversation("c1").approval_level == "full_access"
    assert db.get_conversation("c1").mcp_servers == ("a", "b")
    db.replace_server_in_selections("a", "z")
    assert db.get_conversation("c1").mcp_servers == ("z", "b")
    db.delete_conversation("c1")
    with pytest.raises(ConversationNotFound):
        db.get_conversation("c1")
    assert conv.id == "c1"


async def test_a_failing_audit_write_costs_the_batch_not_the_writer(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "state.db").open()
    async with anyio.create_task_group() as tg:
        await tg.start(partial(db.run_audit_writer, batch_delay=0))
        db._db.execute("PRAGMA query_only = ON")  # fault injection: every write fails now
        db.record(entry("lost"))
        await anyio.lowlevel.checkpoint()  # the writer's turn: it fails and carries on
        db._db.execute("PRAGMA query_only = OFF")
        db.record(entry("kept"))
        await anyio.lowlevel.checkpoint()
        assert calls(StateDB(tmp_path / "state.db").open()) == ["kept"]
        tg.cancel_scope.cancel()
