"""The state database (SQLite in the state dir): conversations and the tool-call audit log.

Queries are tiny and local, so they run on the event loop; WAL keeps writes cheap and readers
unblocked, and the schema is versioned with ``user_version``. Conversations are cached in memory
(this process is the database's only writer). While :meth:`StateDB.run_audit_writer` runs, audit
entries are written by it, in one transaction per batch, after the reply that caused them has
left: a tool call does not wait for its own audit record.
"""

import json
import sqlite3
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import anyio
import msgspec
from anyio.abc import TaskStatus
from mework_protocol.levels import DEFAULT_APPROVAL_LEVEL, ApprovalLevel

from meworkd.base.errors import ConflictError, ConversationNotFound
from meworkd.base.log import get_logger
from meworkd.core.dbfile import DatabaseDamaged, open_database

__all__ = ["AuditEntry", "Conversation", "StateDB", "now_iso"]

SCHEMA_VERSION = 1
AUDIT_BATCH_DELAY = 0.02  # seconds; also what a crash of the daemon may lose

log = get_logger("meworkd.state")
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    mcp_servers TEXT NOT NULL DEFAULT '[]',
    approval_level TEXT NOT NULL DEFAULT '{DEFAULT_APPROVAL_LEVEL}',
    preset TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    call_id TEXT,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    name TEXT NOT NULL,
    arguments_digest TEXT NOT NULL,
    decision TEXT NOT NULL,
    decided_by TEXT NOT NULL,
    reason TEXT,
    duration_ms REAL,
    reply_bytes INTEGER,
    is_error INTEGER
);
CREATE INDEX IF NOT EXISTS audit_conversation ON audit (conversation_id, id);
"""


def _prepare(db: sqlite3.Connection) -> None:
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(_SCHEMA)
    # Damage where every start reads is found now, before anything is written, not by the first
    # request. The conversations table is small; the audit is not, and is not checked (a failed
    # audit write is logged).
    problems = [row[0] for row in db.execute("PRAGMA quick_check(conversations)")]
    if problems != ["ok"]:
        raise DatabaseDamaged("; ".join(problems[:3]))
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")


def now_iso(timestamp: float | None = None) -> str:
    moment = datetime.now(UTC) if timestamp is None else datetime.fromtimestamp(timestamp, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class Conversation:
    id: str
    mcp_servers: tuple[str, ...]
    approval_level: ApprovalLevel
    preset: str | None
    created_at: str
    updated_at: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "mcpServers": list(self.mcp_servers),
            "approvalLevel": self.approval_level,
            "preset": self.preset,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
        }


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


class StateDB:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = open_database(path, _prepare)  # a damaged file is moved aside, not fatal
        self._conversations: dict[str, Conversation] = {}
        self._audit_pending: list[tuple[float, AuditEntry]] = []
        self._audit_wake: anyio.Event | None = None  # set while run_audit_writer runs

    def close(self) -> None:
        self.flush_audit()
        self._db.close()

    # --- conversations -------------------------------------------------------------------

    @staticmethod
    def _conversation(row: sqlite3.Row) -> Conversation:
        return Conversation(
            id=row["id"],
            mcp_servers=tuple(json.loads(row["mcp_servers"])),
            # Written only from validated params (and an unknown level would ask: policy.decide).
            approval_level=cast(ApprovalLevel, row["approval_level"]),
            preset=row["preset"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )

    def create_conversation(
        self,
        conversation_id: str | None,
        mcp_servers: list[str],
        approval_level: ApprovalLevel,
        preset: str | None,
    ) -> Conversation:
        cid = conversation_id or uuid.uuid4().hex
        stamp = now_iso()
        try:
            self._db.execute(
                "INSERT INTO conversations VALUES (?, ?, ?, ?, ?, ?)",
                (cid, json.dumps(mcp_servers), approval_level, preset, stamp, stamp),
            )
        except sqlite3.IntegrityError:
            raise ConflictError(
                f"a conversation {cid!r} already exists", conversationId=cid
            ) from None
        return self.get_conversation(cid)

    def get_conversation(self, conversation_id: str) -> Conversation:
        cached = self._conversations.get(conversation_id)
        if cached is not None:
            return cached  # read on every tool call for its approval level
        row = self._db.execute(
            "SELECT * FROM conversations WHERE id = ?", (conversation_id,)
        ).fetchone()
        if row is None:
            raise ConversationNotFound(conversation_id)
        conversation = self._conversations[conversation_id] = self._conversation(row)
        return conversation

    def list_conversations(self) -> list[Conversation]:
        rows = self._db.execute("SELECT * FROM conversations ORDER BY created_at, id").fetchall()
        return [self._conversation(r) for r in rows]

    def update_conversation(
        self,
        conversation_id: str,
        *,
        mcp_servers: list[str] | None = None,
        approval_level: ApprovalLevel | None = None,
        preset: str | msgspec.UnsetType | None = msgspec.UNSET,
    ) -> Conversation:
        """Change what is given; ``preset`` None clears the label, UNSET keeps it."""
        current = self.get_conversation(conversation_id)
        self._db.execute(
            "UPDATE conversations SET mcp_servers = ?, approval_level = ?, preset = ?, "
            "updated_at = ? WHERE id = ?",
            (
                json.dumps(list(current.mcp_servers) if mcp_servers is None else mcp_servers),
                approval_level or current.approval_level,
                current.preset if preset is msgspec.UNSET else preset,
                now_iso(),
                conversation_id,
            ),
        )
        self._conversations.pop(conversation_id, None)
        return self.get_conversation(conversation_id)

    def delete_conversation(self, conversation_id: str) -> None:
        cursor = self._db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))
        self._conversations.pop(conversation_id, None)
        if cursor.rowcount == 0:
            raise ConversationNotFound(conversation_id)

    def conversation_count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM conversations").fetchone()[0])

    def replace_server_in_selections(self, old: str, new: str | None) -> list[str]:
        """Rename (or, with ``new`` None, drop) a server in every selection; the ids touched."""
        touched: list[str] = []
        for conv in self.list_conversations():
            if old in conv.mcp_servers:
                names = [new if n == old else n for n in conv.mcp_servers]
                self.update_conversation(conv.id, mcp_servers=[n for n in names if n])
                touched.append(conv.id)
        return touched

    # --- audit ---------------------------------------------------------------------------

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
        rows = [
            (
                now_iso(stamp),
                entry.conversation_id,
                entry.turn_id,
                entry.call_id,
                entry.server,
                entry.tool,
                entry.name,
                entry.arguments_digest,
                entry.decision,
                entry.decided_by,
                entry.reason,
                entry.duration_ms,
                entry.reply_bytes,
                None if entry.is_error is None else int(entry.is_error),
            )
            for stamp, entry in pending
        ]
        self._db.execute("BEGIN")  # one transaction for the batch
        try:
            self._db.executemany(
                "INSERT INTO audit (time, conversation_id, turn_id, call_id, server, tool, name, "
                "arguments_digest, decision, decided_by, reason, duration_ms, reply_bytes, "
                "is_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
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
        return [
            {
                "id": r["id"],
                "time": r["time"],
                "conversationId": r["conversation_id"],
                "turnId": r["turn_id"],
                "callId": r["call_id"],
                "server": r["server"],
                "tool": r["tool"],
                "name": r["name"],
                "argumentsDigest": r["arguments_digest"],
                "decision": r["decision"],
                "decidedBy": r["decided_by"],
                "reason": r["reason"],
                "durationMs": r["duration_ms"],
                "replyBytes": r["reply_bytes"],
                "isError": None if r["is_error"] is None else bool(r["is_error"]),
            }
            for r in reversed(rows)
        ]
