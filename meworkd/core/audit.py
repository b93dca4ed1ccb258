"""The tool-call audit log, a part of the state database: requests at once, outcomes in batches.

A call's ``requested`` record is written before the call is sent (:meth:`AuditLog.record_request`;
if it cannot be, the call is refused); its outcome, like any other entry, is written by
:meth:`AuditLog.run_audit_writer` while that runs, in one transaction per batch, after the reply
that caused it has left: a tool call does not wait for its own outcome record. A crash loses at
most the outcomes of the last batch; the next start marks what was left ``requested`` as
``interrupted`` (:meth:`AuditLog.mark_interrupted`). A server's questions to a person
(elicitation, sampling) are on record too, as entries of their own (:func:`question_entry`).
"""

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskStatus

from meworkd.base.clock import wire_time
from meworkd.base.errors import AuditUnavailable
from meworkd.base.log import get_logger

__all__ = [
    "AUDIT_BATCH_DELAY",
    "INTERRUPTED",
    "REQUESTED",
    "AuditEntry",
    "AuditLog",
    "audit_view",
    "question_entry",
]

AUDIT_BATCH_DELAY = 0.02  # seconds; a crash may lose outcomes this recent, never a request
REQUESTED = "requested"  # the decision of a call whose outcome is not written yet
INTERRUPTED = "interrupted"  # ... and of one whose daemon stopped before it could be

log = get_logger("meworkd.state")


@dataclass(frozen=True, slots=True)
class AuditEntry:
    conversation_id: str
    turn_id: str
    call_id: str | None
    server: str
    tool: str
    name: str
    arguments_digest: str
    decision: str
    decided_by: str
    reason: str | None
    duration_ms: float | None
    reply_bytes: int | None
    is_error: bool | None
    # The call's ``requested`` record (record_request), which this outcome completes.
    request_id: int | None = None
    # Who asked for a tool call: "model" or "app" (a tool's view); None for a server's question
    # and for calls recorded before meworkd kept it.
    origin: str | None = None


_REQUEST_COLUMNS = (
    "time, conversation_id, turn_id, call_id, server, tool, name, arguments_digest, origin, "
    "decision, decided_by"
)


def audit_view(entry_id: int, time: str, entry: AuditEntry) -> dict[str, Any]:
    """``entry`` as audit.list shows it (and the ``call.finished`` event carries it)."""
    return {
        "id": entry_id,
        "time": time,
        "conversationId": entry.conversation_id,
        "turnId": entry.turn_id,
        "callId": entry.call_id,
        "server": entry.server,
        "tool": entry.tool,
        "name": entry.name,
        "argumentsDigest": entry.arguments_digest,
        "origin": entry.origin,
        "decision": entry.decision,
        "decidedBy": entry.decided_by or None,  # None while only requested
        "reason": entry.reason,
        "durationMs": entry.duration_ms,
        "replyBytes": entry.reply_bytes,
        "isError": entry.is_error,
    }


def question_entry(
    *,
    conversation_id: str | None,
    turn_id: str | None,
    call_id: str | None,
    server: str,
    method: str,
    request_digest: str,
    outcome: str,
    decided_by: str,
    reason: str | None,
    duration_ms: float,
) -> AuditEntry:
    """A server's question to a person, as its audit entry (written with the outcomes).

    ``method``: ``elicitation/create`` or ``sampling/createMessage`` (the entry's ``name``; its
    ``tool`` is empty). ``request_digest``: a digest of what the server asked; what the person
    answered is never recorded, nor digested (a form may hold a secret). ``outcome``: the
    elicitation's action or the sampling request's ``answered``/``refused``. A question outside
    a conversation or turn (background, inspection) has them empty.
    """
    return AuditEntry(
        conversation_id=conversation_id or "",
        turn_id=turn_id or "",
        call_id=call_id,
        server=server,
        tool="",
        name=method,
        arguments_digest=request_digest,
        decision=outcome,
        decided_by=decided_by,
        reason=reason,
        duration_ms=duration_ms,
        reply_bytes=None,
        is_error=None,
    )


def _outcome(entry: AuditEntry) -> tuple[Any, ...]:
    is_error = None if entry.is_error is None else int(entry.is_error)
    return (
        entry.decision,
        entry.decided_by,
        entry.reason,
        entry.duration_ms,
        entry.reply_bytes,
        is_error,
    )


class AuditLog:
    """The audit methods of :class:`meworkd.core.state.StateDB`, over its connection."""

    path: Path
    _db: sqlite3.Connection
    _audit_pending: list[tuple[float, AuditEntry]]
    _audit_wake: anyio.Event | None  # set while run_audit_writer runs

    def record_request(
        self,
        conversation_id: str,
        turn_id: str,
        call_id: str,
        server: str,
        tool: str,
        name: str,
        arguments_digest: str,
        *,
        origin: str = "model",
        at: str | None = None,
    ) -> int:
        """Write a call's ``requested`` record now, before it is sent; its id for the outcome.

        ``at``: the record's time (:func:`wire_time`), when the caller announces it too.

        Raises:
            AuditUnavailable: it could not be written (disk full, read-only, damaged): the
                call must not run (fail closed).
        """
        try:
            cursor = self._db.execute(
                f"INSERT INTO audit ({_REQUEST_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '')",
                (
                    at or wire_time(),
                    conversation_id,
                    turn_id,
                    call_id,
                    server,
                    tool,
                    name,
                    arguments_digest,
                    origin,
                    REQUESTED,
                ),
            )
        except sqlite3.Error as exc:
            log.error("audit.request_write_failed", error=str(exc))
            raise AuditUnavailable(
                "meworkd cannot write its audit log, so it refuses tool calls until it can "
                f"(free disk space or repair {self.path.name}): {exc}"
            ) from None
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def mark_interrupted(self) -> int:
        """Close the records an earlier run left ``requested`` (it stopped mid-call); how many.

        Those calls were waiting for approval or running when their daemon died: their outcome
        is unknown, and nothing of that run is still waiting or running now.
        """
        # Not those whose task a Streamable HTTP server still runs: that task is followed again
        # (meworkd.core.tasks) and its end is the call's outcome.
        cursor = self._db.execute(
            "UPDATE audit SET decision = ?, decided_by = ?, reason = ? WHERE decision = ? "
            "AND id NOT IN (SELECT audit_id FROM tasks WHERE durable = 1 "
            "AND status NOT IN ('completed', 'failed', 'cancelled'))",
            (
                INTERRUPTED,
                INTERRUPTED,
                "meworkd stopped while the call was waiting for approval or running",
                REQUESTED,
            ),
        )
        if cursor.rowcount:
            log.warning("audit.interrupted_calls", count=cursor.rowcount)
        return cursor.rowcount

    def record(self, entry: AuditEntry) -> None:
        """Add ``entry`` to the audit log: now, or by the audit writer once it runs."""
        self._audit_pending.append((time.time(), entry))
        if self._audit_wake is None:
            self.flush_audit()
        else:
            self._audit_wake.set()

    async def run_audit_writer(
        self,
        *,
        batch_delay: float = AUDIT_BATCH_DELAY,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Write recorded entries in batches until cancelled, then write what is left.

        A batch is written ``batch_delay`` seconds after its first entry: one transaction for
        all the calls of that moment instead of one per call.
        """
        try:
            self._audit_wake = anyio.Event()
            task_status.started()
            while True:
                await self._audit_wake.wait()
                if batch_delay > 0:
                    await anyio.sleep(batch_delay)
                self._audit_wake = anyio.Event()
                self._flush_audit_or_log()
        finally:
            self._audit_wake = None
            self._flush_audit_or_log()

    def _flush_audit_or_log(self) -> None:
        # A failing write (disk full, a damaged database) costs that batch, not the daemon.
        count = len(self._audit_pending)
        try:
            self.flush_audit()
        except sqlite3.Error as exc:
            log.error("audit.write_failed", entries=count, error=str(exc))

    def flush_audit(self) -> None:
        pending, self._audit_pending = self._audit_pending, []
        if not pending:
            return
        inserts = [
            (
                wire_time(stamp),
                entry.conversation_id,
                entry.turn_id,
                entry.call_id,
                entry.server,
                entry.tool,
                entry.name,
                entry.arguments_digest,
                entry.origin,
                *_outcome(entry),
            )
            for stamp, entry in pending
            if entry.request_id is None
        ]
        updates = [
            (*_outcome(entry), entry.request_id)
            for _stamp, entry in pending
            if entry.request_id is not None
        ]
        self._db.execute("BEGIN")  # one transaction for the batch
        try:
            self._db.executemany(
                f"INSERT INTO audit ({_REQUEST_COLUMNS}, reason, duration_ms, reply_bytes, "
                "is_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                inserts,
            )
            self._db.executemany(
                "UPDATE audit SET decision = ?, decided_by = ?, reason = ?, duration_ms = ?, "
                "reply_bytes = ?, is_error = ? WHERE id = ?",
                updates,
            )
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def audit(self, conversation_id: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        self.flush_audit()
        query = "SELECT * FROM audit"
        args: tuple[Any, ...] = ()
        if conversation_id is not None:
            query += " WHERE conversation_id = ?"
            args = (conversation_id,)
        query += " ORDER BY id DESC LIMIT ?"
        rows = self._db.execute(query, (*args, max(1, min(limit, 10_000)))).fetchall()
        return [audit_view(r["id"], r["time"], _entry(r)) for r in reversed(rows)]

    def recent_tools(self, conversation_id: str, turns: int) -> list[tuple[str, str]]:
        """The (server, tool) pairs the conversation called in its last ``turns`` turns with
        calls, most recent first: allowed or still running (a denied call used nothing)."""
        self.flush_audit()
        rows = self._db.execute(
            "SELECT turn_id, server, tool FROM audit WHERE conversation_id = ? AND tool != '' "
            "AND decision IN ('allow', ?) ORDER BY id DESC LIMIT 1000",
            (conversation_id, REQUESTED),
        ).fetchall()
        seen: set[str] = set()
        pairs: dict[tuple[str, str], None] = {}
        for turn_id, server, tool in rows:
            if turn_id not in seen:
                if len(seen) == turns:
                    break
                seen.add(turn_id)
            pairs.setdefault((server, tool), None)
        return list(pairs)


def _entry(row: sqlite3.Row) -> AuditEntry:
    return AuditEntry(
        conversation_id=row["conversation_id"],
        turn_id=row["turn_id"],
        call_id=row["call_id"],
        server=row["server"],
        tool=row["tool"],
        name=row["name"],
        arguments_digest=row["arguments_digest"],
        decision=row["decision"],
        decided_by=row["decided_by"],
        reason=row["reason"],
        duration_ms=row["duration_ms"],
        reply_bytes=row["reply_bytes"],
        is_error=None if row["is_error"] is None else bool(row["is_error"]),
        origin=row["origin"],
    )
