"""The state database (SQLite in the state dir): conversations and the tool-call audit log.

Queries are tiny and local, so they run on the event loop; WAL keeps writes cheap and readers
unblocked, and the schema is versioned with ``user_version``. A :class:`StateDB` is built with
the daemon and opened when it runs; closed (before it opens, after it closes) its queries raise
``ShuttingDown``. Conversations are cached in memory
(this process is the database's only writer). The audit log's methods are
:class:`meworkd.core.audit.AuditLog`'s, the background results'
:class:`meworkd.core.callresults.CallResultLog`'s, the MCP tasks'
:class:`meworkd.core.tasklog.TaskLog`'s.
"""

import json
import sqlite3
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio
import msgspec
from mework_protocol.levels import DEFAULT_APPROVAL_LEVEL, ApprovalLevel

from meworkd.base.clock import wire_time
from meworkd.base.errors import ConflictError, ConversationNotFound, NotFound, ShuttingDown
from meworkd.base.log import get_logger
from meworkd.core.audit import AuditEntry, AuditLog
from meworkd.core.callresults import CALL_RESULTS_SCHEMA, CallResultLog
from meworkd.core.dbfile import DatabaseDamaged, open_database
from meworkd.core.tasklog import TASKS_SCHEMA, TaskLog

__all__ = ["AuditEntry", "Conversation", "StateDB"]

SCHEMA_VERSION = 1

log = get_logger("meworkd.state")
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    mcp_servers TEXT NOT NULL DEFAULT '[]',
    approval_level TEXT NOT NULL DEFAULT '{DEFAULT_APPROVAL_LEVEL}',
    preset TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    roots TEXT NOT NULL DEFAULT '[]'
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
    is_error INTEGER,
    origin TEXT
);
CREATE INDEX IF NOT EXISTS audit_conversation ON audit (conversation_id, id);
"""


def _prepare(db: sqlite3.Connection) -> None:
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(_SCHEMA)
    db.executescript(CALL_RESULTS_SCHEMA)
    db.executescript(TASKS_SCHEMA)
    columns = {row[1] for row in db.execute("PRAGMA table_info(conversations)")}
    if "roots" not in columns:  # a database from before conversations had roots
        db.execute("ALTER TABLE conversations ADD COLUMN roots TEXT NOT NULL DEFAULT '[]'")
    if "origin" not in {row[1] for row in db.execute("PRAGMA table_info(audit)")}:
        db.execute("ALTER TABLE audit ADD COLUMN origin TEXT")  # from before MCP Apps
    # Damage where every start reads is found now, before anything is written, not by the first
    # request. The conversations table is small; the audit is not, and is not checked (a failed
    # audit write is logged).
    problems = [row[0] for row in db.execute("PRAGMA quick_check(conversations)")]
    if problems != ["ok"]:
        raise DatabaseDamaged("; ".join(problems[:3]))
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")


@dataclass(frozen=True, slots=True)
class Conversation:
    id: str
    mcp_servers: tuple[str, ...]
    approval_level: ApprovalLevel
    preset: str | None
    created_at: str
    updated_at: str
    roots: tuple[str, ...] = ()  # file:// URIs of the directories the servers may work in

    def root_list(self) -> list[dict[str, str]]:
        """The roots as ``roots/list`` answers them: ``{uri, name}``, the name the last segment."""
        return [{"uri": uri, "name": uri.rstrip("/").rsplit("/", 1)[-1]} for uri in self.roots]

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "mcpServers": list(self.mcp_servers),
            "approvalLevel": self.approval_level,
            "preset": self.preset,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "roots": list(self.roots),
        }


class _Closed:
    """The connection of a database not open: any use says meworkd is not running."""

    def __getattr__(self, name: str) -> Any:
        raise ShuttingDown("meworkd is not running")


_CLOSED = cast(sqlite3.Connection, _Closed())


class StateDB(AuditLog, CallResultLog, TaskLog):
    def __init__(self, path: Path) -> None:
        self.path = path
        # Not a flag checked per query: the call path reads no more than it did (bench B1).
        self._db = _CLOSED
        self._conversations: dict[str, Conversation] = {}
        self._audit_pending: list[tuple[float, AuditEntry]] = []
        self._audit_wake: anyio.Event | None = None  # set while run_audit_writer runs

    def open(self) -> "StateDB":
        """Open the file (a damaged one is moved aside and replaced, not fatal)."""
        if self._db is _CLOSED:
            self._db = open_database(self.path, _prepare)
        return self

    @property
    def is_open(self) -> bool:
        return self._db is not _CLOSED

    def close(self) -> None:
        if self._db is _CLOSED:
            return
        self.flush_audit()
        self._db.close()
        self._db = _CLOSED

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
            roots=tuple(json.loads(row["roots"])),
        )

    def create_conversation(
        self,
        conversation_id: str | None,
        mcp_servers: list[str],
        approval_level: ApprovalLevel,
        preset: str | None,
        roots: list[str] | None = None,
    ) -> Conversation:
        cid = conversation_id or uuid.uuid4().hex
        stamp = wire_time()
        try:
            self._db.execute(
                "INSERT INTO conversations (id, mcp_servers, approval_level, preset, created_at, "
                "updated_at, roots) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    cid,
                    json.dumps(mcp_servers),
                    approval_level,
                    preset,
                    stamp,
                    stamp,
                    json.dumps(roots or []),
                ),
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
        roots: list[str] | None = None,
    ) -> Conversation:
        """Change what is given; ``preset`` None clears the label, UNSET keeps it."""
        current = self.get_conversation(conversation_id)
        self._db.execute(
            "UPDATE conversations SET mcp_servers = ?, approval_level = ?, preset = ?, "
            "roots = ?, updated_at = ? WHERE id = ?",
            (
                json.dumps(list(current.mcp_servers) if mcp_servers is None else mcp_servers),
                approval_level or current.approval_level,
                current.preset if preset is msgspec.UNSET else preset,
                json.dumps(list(current.roots) if roots is None else roots),
                wire_time(),
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
        self.forget_results(conversation_id)
        self.forget_tasks(conversation_id)

    def conversation_count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM conversations").fetchone()[0])

    def roots_of(self, conversation_id: str) -> list[dict[str, str]]:
        """The conversation's roots as ``roots/list`` answers them; none while closed or unknown."""
        try:
            return self.get_conversation(conversation_id).root_list()
        except (NotFound, ShuttingDown):
            return []

    def replace_server_in_selections(self, old: str, new: str | None) -> list[str]:
        """Rename (or, with ``new`` None, drop) a server in every selection; the ids touched."""
        touched: list[str] = []
        for conv in self.list_conversations():
            if old in conv.mcp_servers:
                names = [new if n == old else n for n in conv.mcp_servers]
                self.update_conversation(conv.id, mcp_servers=[n for n in names if n])
                touched.append(conv.id)
        return touched
