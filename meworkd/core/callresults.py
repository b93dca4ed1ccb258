"""The results of calls that moved to the background, kept in the state database until a
frontend fetches them for the model (``calls.result``), across daemon restarts.

A result is the call's reply exactly as the model would have had it (its JSON bytes: size-checked
and redacted already). The newest ``MAX_KEPT`` are kept; a deleted conversation's go with it.
"""

import sqlite3

from meworkd.base.clock import wire_time
from meworkd.base.log import get_logger

__all__ = ["CALL_RESULTS_SCHEMA", "MAX_KEPT", "CallResultLog", "KeptResult"]

MAX_KEPT = 1000
log = get_logger("meworkd.callresults")

CALL_RESULTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS call_results (
    call_id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    result BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS call_results_conversation ON call_results (conversation_id);
"""

KeptResult = tuple[str, str, str, bytes]  # conversation id, turn id, finished at, result JSON


class CallResultLog:
    """The background results' methods of :class:`meworkd.core.state.StateDB`."""

    _db: sqlite3.Connection

    def keep_result(self, call_id: str, conversation_id: str, turn_id: str, result: bytes) -> None:
        """Keep a finished background call's result (a failed write is logged: the outcome is
        in the audit log and the ``call.finished`` event all the same)."""
        try:
            self._db.execute(
                "INSERT OR REPLACE INTO call_results VALUES (?, ?, ?, ?, ?)",
                (call_id, conversation_id, turn_id, wire_time(), result),
            )
            self._db.execute(
                "DELETE FROM call_results WHERE rowid NOT IN "
                "(SELECT rowid FROM call_results ORDER BY rowid DESC LIMIT ?)",
                (MAX_KEPT,),
            )
        except sqlite3.Error as exc:
            log.error("call_results.write_failed", call=call_id, error=str(exc))

    def kept_result(self, call_id: str) -> KeptResult | None:
        row = self._db.execute(
            "SELECT conversation_id, turn_id, finished_at, result FROM call_results "
            "WHERE call_id = ?",
            (call_id,),
        ).fetchone()
        return None if row is None else (row[0], row[1], row[2], bytes(row[3]))

    def forget_results(self, conversation_id: str) -> None:
        self._db.execute("DELETE FROM call_results WHERE conversation_id = ?", (conversation_id,))
