"""The settings file on disk: atomic writes that merge with hand edits, and hot reload.

Invariants: the file is only ever replaced atomically (temp file, fsync, swap, fsync of the
directory) keeping its mode; a write is based on a fresh read, and what its swap displaced is
checked against that read, so a hand edit meworkd has not seen is merged, never clobbered; a file
that does not parse is never overwritten; meworkd's own writes are recognised by content hash and
do not count as edits.
"""

import copy
import ctypes
import dataclasses
import errno
import hashlib
import os
import stat
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import msgspec
from anyio.abc import TaskStatus
from watchfiles._rust_notify import RustNotify  # see watch() for why not awatch

from meworkd.base.errors import InvalidSettings, SettingsUnreadable
from meworkd.base.events import EventBus
from meworkd.base.log import get_logger
from meworkd.settings.diff import SettingsDiff, diff_settings
from meworkd.settings.model import DEFAULT_DOCUMENT, Settings
from meworkd.settings.parse import check_depth, decode_document, duplicate_keys, parse_settings

__all__ = ["Listener", "SettingsStore"]

T = TypeVar("T")
Listener = Callable[[Settings, SettingsDiff], Awaitable[None]]

# watchfiles yields after STEP ms of quiet, at the latest after DEBOUNCE ms of continuous edits:
# an editor's save (often several writes) is applied once, well within a quarter second.
WATCH_STEP_MS = 30
WATCH_DEBOUNCE_MS = 300
WATCH_RUST_TIMEOUT_MS = 500  # bounds how long cancelling the watcher waits for its thread

log = get_logger("meworkd.settings")


def _digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _encode(doc: dict[str, Any]) -> bytes:
    return msgspec.json.format(msgspec.json.encode(doc), indent=2) + b"\n"


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
        if _digest(path.read_bytes()) != expect_digest:
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
    if _digest(tmp.read_bytes()) == expect_digest:
        return True
    # A second edit landing between the two swaps would be displaced by this one; that window
    # is two system calls wide, where the compare-then-rename one spanned a file read.
    _exchange(tmp, path)
    return False


class SettingsStore:
    """Owns the settings document: the last good snapshot, reloads and every write."""

    def __init__(self, path: Path, events: EventBus) -> None:
        self.path = path
        self._events = events
        self._doc: dict[str, Any] = copy.deepcopy(DEFAULT_DOCUMENT)
        self._digest: bytes | None = None
        self._settings = Settings()
        self._unreadable: str | None = None
        self._lock = anyio.Lock()
        self._listeners: list[Listener] = []
        self._watch_stop = anyio.Event()
        # Injected in tests to simulate a crash between the temp-file write and the rename.
        self.before_rename: Callable[[Path], None] | None = None

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def unreadable(self) -> str | None:
        """Why the file on disk cannot be used right now, or None."""
        return self._unreadable

    def document(self) -> dict[str, Any]:
        return copy.deepcopy(self._doc)

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    # --- start-up ------------------------------------------------------------------------

    def open(self) -> None:
        """Create the file (0600, in a 0700 directory) if absent and load it. Synchronous."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # A daemon killed between writing a temp file and renaming it leaves the temp file.
        for stale in self.path.parent.glob(f".{self.path.name}.*.tmp"):
            stale.unlink(missing_ok=True)
        if not self.path.exists():
            self._write_file(_encode(DEFAULT_DOCUMENT), mode=0o600, exclusive=True)
            log.info("settings.created", path=str(self.path))
        data = self.path.read_bytes()
        self._apply_bytes(data)

    # --- reading -------------------------------------------------------------------------

    async def reload(self, source: str) -> SettingsDiff | None:
        """Re-read the file; apply it if it changed (``source`` is told in the event)."""
        async with self._lock:
            return await self._reload_locked(source, force=source != "file")

    async def _reload_locked(self, source: str, *, force: bool) -> SettingsDiff | None:
        try:
            data = await anyio.Path(self.path).read_bytes()
        except FileNotFoundError:
            # Deleted (or mid-replace by an editor): keep running on the last good settings.
            log.warning("settings.missing", path=str(self.path))
            return None
        if not force and _digest(data) == self._digest:
            return None
        diff = self._apply_bytes(data, source=source)
        if diff is not None:
            await self._notify(diff)
        return diff

    def _apply_bytes(self, data: bytes, source: str = "start") -> SettingsDiff | None:
        self._digest = _digest(data)
        try:
            doc = decode_document(data)
        except InvalidSettings as exc:
            self._unreadable = exc.message
            log.warning("settings.unreadable", error=exc.message, source=source)
            self._events.publish(
                "settings.invalid", {"source": source, "error": exc.message, "servers": {}}
            )
            return None
        self._unreadable = None
        self._doc = doc
        settings = parse_settings(doc, self._settings)
        if repeated := duplicate_keys(data):
            settings = dataclasses.replace(settings, errors=(*settings.errors, *repeated))
        return self._install(settings, source)

    def _install(self, new: Settings, source: str) -> SettingsDiff:
        old, self._settings = self._settings, new
        diff = diff_settings(old, new)
        if new.server_errors or new.errors:
            errors = dict(new.server_errors)
            log.warning("settings.invalid_entries", servers=errors, errors=list(new.errors))
            self._events.publish(
                "settings.invalid",
                {"source": source, "servers": errors, "errors": list(new.errors)},
            )
        if source != "start":
            log.info("settings.applied", source=source, **diff.as_event())
            self._events.publish("settings.reloaded", {"source": source, **diff.as_event()})
        return diff

    async def _notify(self, diff: SettingsDiff) -> None:
        for listener in self._listeners:
            await listener(self._settings, diff)

    # --- writing -------------------------------------------------------------------------

    async def mutate(self, change: Callable[[dict[str, Any]], T]) -> T:
        """Apply ``change`` to a fresh copy of the document and persist it before returning.

        ``change`` edits the document in place and may raise (nothing is written then). It may
        run twice when the file changes under us, so it must only touch the document it gets.
        """
        async with self._lock:
            while True:
                await self._reload_locked("file", force=False)
                if self._unreadable is not None:
                    raise SettingsUnreadable(
                        f"{self._unreadable}; fix the file first, meworkd will not overwrite it",
                        path=str(self.path),
                    )
                base_digest = self._digest
                doc = copy.deepcopy(self._doc)
                result = change(doc)
                check_depth(doc)  # e.g. a preset nested 600 deep would break every later write
                new = parse_settings(doc, self._settings)
                data = _encode(doc)
                if await anyio.to_thread.run_sync(self._replace_if_unchanged, data, base_digest):
                    break
                # A hand edit landed while we prepared ours: merge with it instead.
            self._digest = _digest(data)
            self._doc = doc
            diff = self._install(new, "write")
            await self._notify(diff)
            return result

    def _replace_if_unchanged(self, data: bytes, base_digest: bytes | None) -> bool:
        mode = 0o600
        try:
            st = self.path.stat()
            mode = stat.S_IMODE(st.st_mode)
        except FileNotFoundError:
            pass
        return self._write_file(data, mode=mode, expect_digest=base_digest)

    def _write_file(
        self,
        data: bytes,
        *,
        mode: int,
        exclusive: bool = False,
        expect_digest: bytes | None = None,
    ) -> bool:
        directory = self.path.parent
        fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=f".{self.path.name}.", suffix=".tmp")
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fchmod(f.fileno(), mode)
                os.fsync(f.fileno())
            if self.before_rename is not None:
                self.before_rename(tmp)
            if exclusive:
                # Another process may create the file at the same moment: never replace it then.
                if not _create(tmp, self.path):
                    return False
            elif expect_digest is not None:
                if not _swap_in_if_unchanged(tmp, self.path, expect_digest):
                    return False
            else:
                os.replace(tmp, self.path)
            dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
            return True
        finally:
            tmp.unlink(missing_ok=True)

    # --- watching ------------------------------------------------------------------------

    def stop_watching(self) -> None:
        """Let :meth:`watch` return at once (cancelling it waits for the watcher's thread)."""
        self._watch_stop.set()

    async def watch(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Reload whenever the file changes on disk, until cancelled.

        Uses watchfiles' ``RustNotify`` directly rather than ``awatch`` so that readiness can be
        reported once the inotify watch is in place (``awatch`` only starts it on first
        iteration, and an edit made in between would be missed).
        """
        stop = self._watch_stop
        name = self.path.name
        with RustNotify([str(self.path.parent)], False, False, 300, False, False) as watcher:
            task_status.started()
            try:
                while True:
                    raw = await anyio.to_thread.run_sync(
                        watcher.watch, WATCH_DEBOUNCE_MS, WATCH_STEP_MS, WATCH_RUST_TIMEOUT_MS, stop
                    )
                    if raw == "stop":
                        return
                    if isinstance(raw, str):  # "timeout" or "signal": nothing changed
                        continue
                    if any(os.path.basename(path) == name for _change, path in raw):
                        await self.reload("file")
            finally:
                stop.set()
