"""Opening the state database so that a damaged file costs its contents, never the daemon.

A file SQLite cannot use (not a database, or a malformed one) would otherwise fail every start,
and systemd would restart meworkd into the same failure forever. It is moved aside instead (kept
for inspection, named with the time, with any ``-wal``/``-shm`` SQLite left) and a fresh
database takes its place. Errors that are not damage (a locked or unwritable file, a full disk)
still stop the start: moving a good database aside would lose it.
"""

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from meworkd.base.log import get_logger
from meworkd.base.private import private_file

__all__ = ["DatabaseDamaged", "open_database"]

log = get_logger("meworkd.state")

_DAMAGE = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
_COMPANIONS = ("-wal", "-shm", "-journal")


class DatabaseDamaged(Exception):
    """Raised by a ``prepare`` whose checks found damage SQLite reported as data, not an error."""


def open_database(path: Path, prepare: Callable[[sqlite3.Connection], None]) -> sqlite3.Connection:
    """Connect to ``path`` and run ``prepare`` on it (pragmas, schema, a first read).

    When that finds the file damaged, it is moved aside, logged, and a fresh one is prepared.
    """
    try:
        return _connect(path, prepare)
    except DatabaseDamaged as exc:
        error = str(exc)
    except sqlite3.DatabaseError as exc:
        if (exc.sqlite_errorcode & 0xFF) not in _DAMAGE:
            raise
        error = str(exc)
    moved = _move_aside(path)
    log.error(
        "state.database_corrupt",
        path=str(path),
        moved_to=str(moved),
        error=error,
        detail="the damaged database was kept aside and a new, empty one was created",
    )
    return _connect(path, prepare)


def _connect(path: Path, prepare: Callable[[sqlite3.Connection], None]) -> sqlite3.Connection:
    private_file(path, companions=("-wal", "-shm"))  # before SQLite copies its mode to them
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        prepare(db)
    except BaseException:
        db.close()
        raise
    return db


def _move_aside(path: Path) -> Path:
    """Rename the database and its companions to ``<name>.corrupt-<UTC time>[-n]``."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while os.path.lexists(aside):
        aside = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
        n += 1
    os.rename(path, aside)
    for suffix in _COMPANIONS:
        companion = path.with_name(path.name + suffix)
        if os.path.lexists(companion):
            # Named so that SQLite finds them next to the kept copy when it is opened.
            os.rename(companion, aside.with_name(aside.name + suffix))
    return aside
