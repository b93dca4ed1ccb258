"""Files meworkd creates are its user's alone (0600) whatever the umask, never reached by a link.

The daemon keeps the umask it was started with, since the MCP servers and hooks it starts
inherit it and create the user's files; so each file of meworkd's own is made 0600 here.
"""

import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["private_file", "write_private"]

_NO_LINK = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def _restrict(path: str | Path, flags: int) -> int:
    fd = os.open(path, flags | _NO_LINK, 0o600)
    try:
        os.fchmod(fd, 0o600)
    except BaseException:
        os.close(fd)
        raise
    return fd


def private_file(path: Path, companions: Sequence[str] = ()) -> None:
    """Create ``path`` empty and 0600 unless it exists, and make it 0600 if it does; the same
    for each existing ``path`` + suffix in ``companions`` (e.g. SQLite's ``-wal``, ``-shm``,
    which SQLite creates with the mode of the database file)."""
    os.close(_restrict(path, os.O_RDWR | os.O_CREAT))
    for suffix in companions:
        try:
            os.close(_restrict(f"{path}{suffix}", os.O_RDONLY))
        except FileNotFoundError:
            pass


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (created or truncated), 0600."""
    with os.fdopen(_restrict(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "wb") as f:
        f.write(data)
