"""The MCP tasks servers created for calls, kept in the state database: enough to follow each
again after a restart (a Streamable HTTP server's), to list them for frontends, and to bound
how many one server may hold open.

A row is one call's task (a call starts at most one). The server's task id is kept here and
nowhere else: it may act as a bearer handle, so frontends know a task by its call id. Ended
tasks are kept (the newest ``MAX_KEPT_TASKS``) for ``tasks.list``; a deleted conversation's go
with it.
"""

import hashlib
import sqlite3
from dataclasses import dataclass
from typing import Any

from meworkd.base.clock import wire_time
from meworkd.base.log import get_logger

__all__ = ["ENDED", "MAX_KEPT_TASKS", "TASKS_SCHEMA", "TaskLog", "TaskRow", "endpoint_of"]

MAX_KEPT_TASKS = 1000
ENDED = ("completed", "failed", "cancelled")
log = get_logger("meworkd.tasklog")

TASKS_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    call_id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    name TEXT NOT NULL,
    arguments_digest TEXT NOT NULL,
    origin TEXT NOT NULL,
    audit_id INTEGER NOT NULL,
    requested_at TEXT NOT NULL,
    decided_by TEXT NOT NULL,
    legacy INTEGER NOT NULL,
    durable INTEGER NOT NULL,
    endpoint TEXT NOT NULL,
    status TEXT NOT NULL,
    message TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_conversation ON tasks (conversation_id);
"""


@dataclass(frozen=True, slots=True)
class TaskRow:
    """One call's task as recorded. ``durable``: its server is reached over Streamable HTTP,
    so the task outlives meworkd and is followed again when it restarts."""

    call_id: str
    task_id: str
    conversation_id: str
    turn_id: str
    server: str
    tool: str
    name: str
    arguments_digest: str
    origin: str
    audit_id: int
    requested_at: str
    decided_by: str
    legacy: bool
    durable: bool
    endpoint: str  # a digest of the server's URL: the task is that server's alone
    status: str
    message: str | None
    created_at: str
    updated_at: str

    @property
    def ended(self) -> bool:
        return self.status in ENDED

    def wire(self) -> dict[str, Any]:
        """How ``tasks.list``/``tasks.get`` and the ``task.*`` events show it (no task id)."""
        return {
            "callId": self.call_id,
            "conversationId": self.conversation_id,
            "turnId": self.turn_id,
            "server": self.server,
            "tool": self.tool,
            "name": self.name,
            "status": self.status,
            "message": self.message,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "resumable": self.durable,
        }


def endpoint_of(url: str | None) -> str:
    """What names a task's server across restarts: its URL, digested (it may hold a secret)."""
    return hashlib.sha256((url or "").encode()).hexdigest()[:32]


class TaskLog:
    """The tasks' methods of :class:`meworkd.core.state.StateDB`."""

    _db: sqlite3.Connection

    def record_task(self, row: TaskRow) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO tasks VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                row.call_id,
                row.task_id,
                row.conversation_id,
                row.turn_id,
                row.server,
                row.tool,
                row.name,
                row.arguments_digest,
                row.origin,
                row.audit_id,
                row.requested_at,
                row.decided_by,
                int(row.legacy),
                int(row.durable),
                row.endpoint,
                row.status,
                row.message,
                row.created_at,
                row.updated_at,
            ),
        )
        self._db.execute(
            "DELETE FROM tasks WHERE status IN (?, ?, ?) AND rowid NOT IN "
            "(SELECT rowid FROM tasks ORDER BY rowid DESC LIMIT ?)",
            (*ENDED, MAX_KEPT_TASKS),
        )

    def update_task(self, call_id: str, status: str, message: str | None) -> TaskRow | None:
        """The task's new status (a failed write is logged: events carry it all the same)."""
        try:
            self._db.execute(
                "UPDATE tasks SET status = ?, message = ?, updated_at = ? WHERE call_id = ?",
                (status, message, wire_time(), call_id),
            )
        except sqlite3.Error as exc:
            log.error("tasks.write_failed", call=call_id, error=str(exc))
        return self.task(call_id)

    def task(self, call_id: str) -> TaskRow | None:
        row = self._db.execute("SELECT * FROM tasks WHERE call_id = ?", (call_id,)).fetchone()
        return None if row is None else _row(row)

    def tasks(
        self, conversation_id: str | None = None, *, open_only: bool = False
    ) -> list[TaskRow]:
        """Newest first."""
        query, args = "SELECT * FROM tasks WHERE 1 = 1", []
        if conversation_id is not None:
            query += " AND conversation_id = ?"
            args.append(conversation_id)
        if open_only:
            query += " AND status NOT IN (?, ?, ?)"
            args += ENDED
        rows = self._db.execute(query + " ORDER BY rowid DESC", args).fetchall()
        return [_row(row) for row in rows]

    def open_tasks_of(self, server: str) -> int:
        (count,) = self._db.execute(
            "SELECT count(*) FROM tasks WHERE server = ? AND status NOT IN (?, ?, ?)",
            (server, *ENDED),
        ).fetchone()
        return int(count)

    def forget_tasks(self, conversation_id: str) -> None:
        self._db.execute("DELETE FROM tasks WHERE conversation_id = ?", (conversation_id,))


def _row(row: sqlite3.Row) -> TaskRow:
    values = dict(row)
    values["legacy"] = bool(values["legacy"])
    values["durable"] = bool(values["durable"])
    return TaskRow(**values)
