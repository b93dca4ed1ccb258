"""The settings file's one reader and one writer: reads that never block or crash on what the
path names, and atomic replacement that never clobbers an edit it has not read.

Reading opens without blocking (a FIFO would otherwise hang the reader) and uses only a regular
file of at most :data:`MAX_SETTINGS_BYTES`; anything else at the path (a directory, a FIFO, a
dangling link or a loop of links, a file meworkd may not read) is an error saying what it is.

Every write goes to a temp file in the same directory (fsynced, given the file's mode), which then
takes the file's place by ``renameat2(RENAME_EXCHANGE)``, or by a hard link when creating it, and
the directory is fsynced. What the swap displaced is checked against the content the write was
based on; a hand edit meworkd has not seen is swapped back, and the caller merges with it. When
the path is a symbolic link, the write goes to its target (the temp file in the target's
directory), so the link stays a link; through a dangling link nothing is written.
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

from meworkd.base.errors import SettingsUnreadable

__all__ = [
    "MAX_SETTINGS_BYTES",
    "digest",
    "encode_document",
    "read_settings",
    "remove_stale_temp_files",
    "size_problem",
    "write_file",
]

# No settings document comes near this; a bigger file is refused unread (it would cost memory
# and parse time on every change, and meworkd never writes one).
MAX_SETTINGS_BYTES = 4 * 1024 * 1024
_MIB = 1024 * 1024

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


def size_problem(size: int) -> str | None:
    """Why a settings document of ``size`` bytes is refused ("5.0 MiB, over ..."), or None."""
    if size <= MAX_SETTINGS_BYTES:
        return None
    return f"{size / _MIB:.1f} MiB, over the {MAX_SETTINGS_BYTES // _MIB} MiB limit"


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _open_failure(path: Path, exc: OSError) -> SettingsUnreadable:
    if exc.errno == errno.ELOOP:
        why = "is a loop of symbolic links"
    elif exc.errno in (errno.EACCES, errno.EPERM):
        why = "may not be read by meworkd (permission denied)"
    else:
        why = f"cannot be opened: {os.strerror(exc.errno or 0)}"
    return SettingsUnreadable(f"the settings file {path} {why}", path=str(path))


def _dangling(path: Path) -> SettingsUnreadable:
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    return SettingsUnreadable(
        f"the settings file {path} is a symbolic link to {target}, which does not exist",
        path=str(path),
    )


def _read_up_to(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit and (chunk := os.read(fd, limit - size)):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_settings(path: Path) -> bytes | None:
    """The bytes of the settings file; None when nothing has its name.

    Raises :class:`SettingsUnreadable` saying why when the name is taken by something that is
    not a readable regular file within the size limit. The type is checked on the opened
    descriptor, so a path swapped between a check and the open cannot slip through, and the
    open never blocks (``O_NONBLOCK``: opening a FIFO for reading waits for a writer).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        if os.path.islink(path):
            raise _dangling(path) from None
        return None  # deleted, or mid-replace by an editor
    except OSError as exc:
        raise _open_failure(path, exc) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = _file_kind(info.st_mode)
            raise SettingsUnreadable(
                f"the settings file {path} is {kind}, not a regular file", path=str(path)
            )
        # Refused unread when too big; else read one byte past the limit, as it may have grown.
        data = b"" if size_problem(info.st_size) else _read_up_to(fd, MAX_SETTINGS_BYTES + 1)
        if problem := size_problem(max(len(data), info.st_size)):
            raise SettingsUnreadable(f"the settings file {path} is {problem}", path=str(path))
        return data
    finally:
        os.close(fd)


def _real_file(path: Path) -> Path:
    """Where a write to ``path`` must go: ``path``, or the file its symbolic link points to."""
    if not os.path.islink(path):
        return path
    try:
        return Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:
        raise _dangling(path) from None
    except OSError as exc:
        raise _open_failure(path, exc) from None


def _temp_prefix(path: Path) -> str:
    return f".{path.name}."


def remove_stale_temp_files(path: Path) -> None:
    """A daemon killed between writing a temp file and renaming it leaves the temp file (next
    to the link's target when the path is a symbolic link)."""
    places = {path}
    try:
        places.add(_real_file(path))
    except SettingsUnreadable:
        pass  # nothing can have been written through a link that leads nowhere
    for place in places:
        for stale in place.parent.glob(f"{_temp_prefix(place)}*.tmp"):
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
    current = read_settings(path)
    if current is None:
        return _create(tmp, path)  # deleted by hand: recreate it
    if digest(current) != expect_digest:
        return False  # cheap early answer; the swap below is what makes it safe
    try:
        _exchange(tmp, path)
    except FileNotFoundError:
        return False  # removed between the read and the swap: start over
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOSYS):
            raise
        os.replace(tmp, path)  # a file system without RENAME_EXCHANGE: the old, narrow window
        return True
    try:
        displaced = read_settings(tmp)
    except SettingsUnreadable:
        displaced = None  # e.g. a FIFO put there meanwhile: not ours, swap it back
    if displaced is not None and digest(displaced) == expect_digest:
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
    simulate a crash there). A symbolic link is written through (:class:`SettingsUnreadable`
    when it leads nowhere).
    """
    path = _real_file(path)
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
