"""The settings store: the last good snapshot, hot reload, and every change made through meworkd.

Invariants: a write is based on a fresh read, and merged with a hand edit meworkd has not seen
rather than clobbering it (:mod:`meworkd.settings.files`, the one writer); a file that does not
parse is never overwritten; a write edits only what changed in the file's text, so the user's
comments and layout stay (:mod:`meworkd.settings.jsonc_edit`); meworkd's own writes are
recognised by content hash and do not count as edits. Whatever the path comes to name (a
directory, a FIFO, a dangling link, a file too big or not readable), the last good settings stay
in force and the reason is reported. The file is watched by :mod:`meworkd.settings.watch`.
"""

import copy
import dataclasses
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
from anyio.abc import TaskStatus

from meworkd.base.errors import InvalidSettings, SettingsUnreadable
from meworkd.base.events import EventBus
from meworkd.base.log import get_logger
from meworkd.settings.diff import SettingsDiff, diff_settings
from meworkd.settings.files import (
    digest,
    encode_document,
    read_settings,
    remove_stale_temp_files,
    size_problem,
    write_file,
)
from meworkd.settings.jsonc_edit import rewrite
from meworkd.settings.model import DEFAULT_DOCUMENT, Settings
from meworkd.settings.parse import check_depth, decode_document, duplicate_keys, parse_settings
from meworkd.settings.safety import UntrustedSettings, refuse_untrusted
from meworkd.settings.watch import watch_file

__all__ = ["Listener", "SettingsStore"]

T = TypeVar("T")
Listener = Callable[[Settings, SettingsDiff], Awaitable[None]]

log = get_logger("meworkd.settings")


class SettingsStore:
    """Owns the settings document: the last good snapshot, reloads and every write."""

    def __init__(self, path: Path, events: EventBus) -> None:
        self.path = path
        self._events = events
        self._doc: dict[str, Any] = copy.deepcopy(DEFAULT_DOCUMENT)
        self._digest: bytes | None = None
        self._text: bytes | None = None  # the text self._doc was read from: writes edit it
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
        remove_stale_temp_files(self.path)
        if not os.path.lexists(self.path):  # a dangling link is not created through
            write_file(
                self.path,
                encode_document(DEFAULT_DOCUMENT),
                exclusive=True,
                before_rename=self.before_rename,
            )
            log.info("settings.created", path=str(self.path))
        try:
            data = self._read()
        except SettingsUnreadable as exc:
            self._cannot_read(exc.message, "start")
            return
        if data is not None:
            self._apply_bytes(data)

    # --- reading -------------------------------------------------------------------------

    def _read(self) -> bytes | None:
        """The file's bytes, None when it does not exist; :class:`SettingsUnreadable` when the
        path names something meworkd cannot use. The one place the store reads the file."""
        return read_settings(self.path)

    async def reload(self, source: str) -> SettingsDiff | None:
        """Re-read the file; apply it if it changed (``source`` is told in the event)."""
        async with self._lock:
            return await self._reload_locked(source, force=source != "file")

    async def _reload_locked(self, source: str, *, force: bool) -> SettingsDiff | None:
        try:
            # Never blocks for long: read_settings opens without waiting and reads a bounded,
            # regular file.
            data = await anyio.to_thread.run_sync(self._read)
        except SettingsUnreadable as exc:
            self._cannot_read(exc.message, source)
            return None
        if data is None:
            # Deleted (or mid-replace by an editor): keep running on the last good settings.
            log.warning("settings.missing", path=str(self.path))
            if self._digest is None:
                self._unreadable = None  # what made the path unusable is gone with it
            return None
        if not force and digest(data) == self._digest:
            return None
        diff = self._apply_bytes(data, source=source)
        if diff is not None:
            await self._notify(diff)
        return diff

    def _apply_bytes(self, data: bytes, source: str = "start") -> SettingsDiff | None:
        self._digest = digest(data)
        try:
            refuse_untrusted(self.path)  # ssh's StrictModes: meworkd.settings.safety
            doc = decode_document(data)
        except InvalidSettings as exc:
            if isinstance(exc, UntrustedSettings):
                self._digest = None  # read again on its next change, be it only a chmod
            self._report_unreadable(exc.message, source)
            return None
        self._unreadable = None
        self._doc = doc
        self._text = data
        settings = parse_settings(doc, self._settings)
        if repeated := duplicate_keys(data):
            settings = dataclasses.replace(settings, errors=(*settings.errors, *repeated))
        return self._install(settings, source)

    def _cannot_read(self, message: str, source: str) -> None:
        if self._digest is None and message == self._unreadable and source == "file":
            return  # the watcher saw another change of the same unusable path: told already
        # Whatever is read next is applied, even the very bytes that were in force before.
        self._digest = None
        self._report_unreadable(message, source)

    def _report_unreadable(self, message: str, source: str) -> None:
        self._unreadable = message
        log.warning("settings.unreadable", error=message, source=source)
        self._events.publish(
            "settings.invalid", {"source": source, "error": message, "servers": {}}
        )

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
                data = self._render(doc)
                if problem := size_problem(len(data)):  # it could not be read back
                    raise InvalidSettings(f"the settings document would be {problem}")
                if await anyio.to_thread.run_sync(self._write, data, base_digest):
                    break
                # A hand edit landed while we prepared ours: merge with it instead.
            self._digest = digest(data)
            self._doc = doc
            self._text = data
            diff = self._install(new, "write")
            await self._notify(diff)
            return result

    def _render(self, doc: dict[str, Any]) -> bytes:
        """The file's text holding ``doc``: the current text with only what changed edited (the
        user's comments and layout stay), or, when that text cannot be edited, ``doc`` afresh."""
        if self._text is not None:
            edited = rewrite(self._text, self._doc, doc)
            if edited is not None:
                return edited
            log.info("settings.reformatted", reason="the file's text could not be edited in place")
        return encode_document(doc)

    def _write(self, data: bytes, base_digest: bytes | None) -> bool:
        return write_file(
            self.path, data, expect_digest=base_digest, before_rename=self.before_rename
        )

    # --- watching ------------------------------------------------------------------------

    def stop_watching(self) -> None:
        """Let :meth:`watch` return at once (cancelling it waits for the watcher's thread)."""
        self._watch_stop.set()

    async def watch(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Reload whenever the file changes on disk, until cancelled or :meth:`stop_watching`."""
        await watch_file(
            self.path, lambda: self.reload("file"), self._watch_stop, task_status=task_status
        )
