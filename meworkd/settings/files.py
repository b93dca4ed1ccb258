"""The settings file's one writer: atomic replacement that never clobbers an edit it has not read.

Every write goes to a temp file in the same directory (fsynced, given the file's mode), which then
takes the file's place by ``renameat2(RENAME_EXCHANGE)``, or by a hard link when creating it, and
the directory is fsynced. What the swap displaced is checked against the content the write was
based on; a hand edit meworkd has not seen is swapped back, and the caller merges with it.
"""

import ctypes
import errno
import hashlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

__all__ = ["digest", "encode_document", "remove_stale_temp_files", "write_file"]

_libc = ctypes.CDLL(None, use_errno=True)
_libc.renameat2.argtypes = [
    ctypes.c_int,
    ctypes.c_char_p,
    ctypes.c_int,
    ctypes.c_char_p,
    ctypes.c_uint,
]
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def digest(data: bytes) -> bytes:
    """What identifies one version of the file (meworkd's own writes are recognised by it)."""
    return hashlib.sha256(data).digest()


def encode_document(doc: dict[str, Any]) -> bytes:
    return msgspec.json.format(msgspec.json.encode(doc), indent=2) + b"\n"


def _temp_prefix(path: Path) -> str:
    return f".{path.name}."


def remove_stale_temp_files(path: Path) -> None:
    """A daemon killed between writing a temp file and renaming it leaves the temp file."""
    for stale in path.parent.glob(f"{_temp_prefix(path)}*.tmp"):
        stale.unlink(missing_ok=True)


def _exchange(a: Path, b: Path) -> None:
    """Atomically swap the files named ``a`` and ``b`` (Linux ``renameat2``)."""
    if _libc.renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE):
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(b))


def _create(tmp: Path, path: Path) -> bool:
    """Give ``tmp`` the name ``path`` unless something else has it (then False)."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    return True


def _swap_in_if_unchanged(tmp: Path, path: Path, expect_digest: bytes) -> bool:
    """Put ``tmp`` in place of ``path`` unless ``path`` no longer holds ``expect_digest``.

    A compare-then-rename leaves a window in which a hand edit is overwritten unseen. Swapping
    instead and reading what was displaced closes it: if that is not what our write was based
    on, the edit is swapped back and the caller merges with it.
    """
    try:
        if digest(path.read_bytes()) != expect_digest:
            return False  # cheap early answer; the swap below is what makes it safe
    except FileNotFoundError:
        return _create(tmp, path)  # deleted by hand: recreate it
    try:
        _exchange(tmp, path)
    except FileNotFoundError:
        return False  # removed between the read and the swap: start over
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOSYS):
            raise
        os.replace(tmp, path)  # a file system without RENAME_EXCHANGE: the old, narrow window
        return True
    if digest(tmp.read_bytes()) == expect_digest:
        return True
    # A second edit landing between the two swaps would be displaced by this one; that window
    # is two system calls wide, where the compare-then-rename one spanned a file read.
    _exchange(tmp, path)
    return False


def _current_mode(path: Path) -> int:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return 0o600


def write_file(
    path: Path,
    data: bytes,
    *,
    exclusive: bool = False,
    expect_digest: bytes | None = None,
    before_rename: Callable[[Path], None] | None = None,
) -> bool:
    """Put ``data`` at ``path`` atomically; False if that would lose something (nothing written).

    ``exclusive``: create the file, 0600, unless another process has just created it. Else
    replace it, keeping its mode, and with ``expect_digest`` only if it still holds that.
    ``before_rename`` runs with the fsynced temp file just before it takes its place (tests
    simulate a crash there).
    """
    directory = path.parent
    mode = 0o600 if exclusive else _current_mode(path)
    fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=_temp_prefix(path), suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        if before_rename is not None:
            before_rename(tmp)
        if exclusive:
            # Another process may create the file at the same moment: never replace it then.
            if not _create(tmp, path):
                return False
        elif expect_digest is not None:
            if not _swap_in_if_unchanged(tmp, path, expect_digest):
                return False
        else:
            os.replace(tmp, path)
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        return True
    finally:
        tmp.unlink(missing_ok=True)
