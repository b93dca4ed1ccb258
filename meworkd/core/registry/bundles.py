"""Installing an MCP bundle (``.mcpb``): its manifest checked, the zip unpacked safely into the
state directory, the entry added; the folder goes when the entry is removed.

Unpacking refuses what could write outside the bundle's folder or fill the disk: absolute
names, ``..``, a symbolic link whose target leaves the folder, more than :data:`MAX_FILES`
entries, more than :data:`MAX_BYTES` unpacked (counted while written, not trusted from the
zip's directory). It unpacks into a temporary folder that is renamed into place only when all
of it is written, and removed on any failure: nothing is left behind.
"""

import hashlib
import json
import os
import secrets
import shutil
import stat
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

import anyio

from meworkd.base.errors import ConflictError, InvalidParams, UnusableServerJson
from meworkd.base.private import write_private
from meworkd.mcp import get_bytes
from meworkd.settings import edits, masked_entry
from meworkd.settings.dialects.mcpb import Bundle, read_manifest
from meworkd.settings.store import SettingsStore

__all__ = ["MAX_BYTES", "MAX_FILES", "BundleInstaller", "bundle_folder_of"]

MAX_BYTES = 512 * 1024 * 1024  # unpacked; a bundle with its node_modules is far smaller
MAX_FILES = 20_000
MAX_ARCHIVE_BYTES = 256 * 1024 * 1024
MANIFEST_BYTES = 1024 * 1024
DOWNLOAD_SECONDS = 120.0
_CHUNK = 1024 * 1024


def _bad(path: str, message: str) -> UnusableServerJson:
    return UnusableServerJson(f"{path}: {message}; nothing was installed")


def bundle_folder_of(entry: object, bundles: Path) -> Path | None:
    """The unpacked folder an entry's ``installedFrom.bundle`` names, if it is one of ours."""
    origin = entry.get("installedFrom") if isinstance(entry, dict) else None
    folder = origin.get("bundle") if isinstance(origin, dict) else None
    if not isinstance(folder, str):
        return None
    path = Path(folder)
    return path if path.parent == bundles and path.name and path.is_dir() else None


class BundleInstaller:
    def __init__(
        self,
        store: SettingsStore,
        bundles: Path,
        environ: Mapping[str, str],
        found: Callable[[str], bool],
    ) -> None:
        self._store = store
        self._bundles = bundles
        self._environ = environ
        self._found = found

    async def install_from(
        self,
        url: str,
        digest: str,
        inputs: Mapping[str, str],
        entry_name: str | None,
        origin: Mapping[str, Any],
        *,
        dry_run: bool,
    ) -> dict[str, Any]:
        """Download the bundle at ``url``, check its SHA-256 against ``digest`` (the registry's
        ``fileSha256``; the registry itself does not), and install it as :meth:`install`."""
        data = await get_bytes(url, within=DOWNLOAD_SECONDS, max_bytes=MAX_ARCHIVE_BYTES)
        if hashlib.sha256(data).hexdigest() != digest:
            raise _bad(url, "its SHA-256 does not match the registry's fileSha256")
        self._bundles.mkdir(mode=0o700, parents=True, exist_ok=True)
        download = self._bundles / f".download-{secrets.token_hex(8)}.mcpb"
        try:
            write_private(download, data)
            return await self.install(
                str(download), inputs, entry_name, dry_run=dry_run, origin=origin
            )
        finally:
            download.unlink(missing_ok=True)

    async def install(
        self,
        path: str,
        inputs: Mapping[str, str],
        entry_name: str | None,
        *,
        dry_run: bool,
        origin: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        archive = _open(path)
        with archive:
            bundle = read_manifest(_manifest(path, archive), self._found)
            _check_members(path, archive)
            target = entry_name or bundle.name
            folder = self._bundles / f"{bundle.name}-{bundle.version}-{secrets.token_hex(4)}"
            entry, needs = bundle.plan(str(folder), inputs, self._environ)
            entry["installedFrom"] = {**(origin or {}), "bundle": str(folder)}
            written = not dry_run and not needs
            if written:
                if target in edits.servers_of(self._store.document()):
                    raise ConflictError(f"a server named {target!r} already exists", server=target)
                await anyio.to_thread.run_sync(_unpack, path, archive, folder)
        if written:
            try:
                await self._store.mutate(lambda doc: edits.add_server(doc, target, entry))
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
        return _result(bundle, target, entry, needs, dry_run=dry_run, written=written)


def _result(
    bundle: Bundle,
    target: str,
    entry: dict[str, Any],
    needs: list[dict[str, Any]],
    *,
    dry_run: bool,
    written: bool,
) -> dict[str, Any]:
    return {
        "name": target,
        "dryRun": dry_run,
        "installed": written,
        "bundle": {"name": bundle.manifest["name"], "version": bundle.version},
        "server": masked_entry(entry),
        "inputs": bundle.inputs,
        "needsInputs": needs,
        "warnings": [],
    }


def _open(path: str) -> zipfile.ZipFile:
    if not os.path.isabs(path):
        raise InvalidParams("bundle: expected an absolute path to the .mcpb file")
    try:
        info = os.stat(path)
    except OSError:
        raise InvalidParams(f"bundle: {path} cannot be read") from None
    if not stat.S_ISREG(info.st_mode):
        raise InvalidParams(f"bundle: {path} is not a regular file")
    if info.st_size > MAX_ARCHIVE_BYTES:
        raise _bad(path, f"over {MAX_ARCHIVE_BYTES // 2**20} MiB, more than a bundle needs")
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError):
        raise _bad(path, "not a zip archive, so not an MCP bundle") from None


def _manifest(path: str, archive: zipfile.ZipFile) -> Any:
    try:
        info = archive.getinfo("manifest.json")
    except KeyError:
        raise _bad(path, "no manifest.json at the top of the archive") from None
    if info.file_size > MANIFEST_BYTES:
        raise _bad(path, "manifest.json is over 1 MiB")
    try:
        with archive.open(info) as f:
            return json.loads(f.read(MANIFEST_BYTES + 1))
    except (zipfile.BadZipFile, OSError, ValueError, RecursionError):
        raise _bad(path, "manifest.json is not readable JSON") from None


def _safe_name(path: str, name: str) -> PurePosixPath:
    relative = PurePosixPath(name)
    if not relative.parts or name.startswith("/") or "\\" in name or ":" in relative.parts[0]:
        raise _bad(path, f"the entry {name!r} has an absolute or non-portable path")
    if ".." in relative.parts:
        raise _bad(path, f"the entry {name!r} reaches outside the bundle's folder (..)")
    return relative


def _is_link(info: zipfile.ZipInfo) -> bool:
    return stat.S_ISLNK(info.external_attr >> 16)


def _check_members(path: str, archive: zipfile.ZipFile) -> None:
    members = archive.infolist()
    if len(members) > MAX_FILES:
        raise _bad(path, f"more than {MAX_FILES} files")
    if sum(m.file_size for m in members) > MAX_BYTES:
        raise _bad(path, f"more than {MAX_BYTES // 2**20} MiB unpacked")
    for member in members:
        relative = _safe_name(path, member.filename)
        if _is_link(member):
            target = archive.read(member).decode("utf-8", "replace")
            joined = PurePosixPath(*relative.parts[:-1], target)
            if target.startswith("/") or _escapes(joined):
                raise _bad(path, f"the link {member.filename!r} points outside the bundle")


def _escapes(path: PurePosixPath) -> bool:
    depth = 0
    for part in path.parts:
        depth += -1 if part == ".." else 0 if part == "." else 1
        if depth < 0:
            return True
    return False


def _unpack(path: str, archive: zipfile.ZipFile, folder: Path) -> None:
    folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = folder.parent / f".unpacking-{folder.name}"
    temporary.mkdir(mode=0o700)
    try:
        written = 0
        for member in archive.infolist():
            written = _unpack_one(path, archive, member, temporary, written)
        os.rename(temporary, folder)
    except (OSError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        shutil.rmtree(temporary, ignore_errors=True)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "a damaged entry"
        raise _bad(path, f"could not be unpacked ({reason})") from None
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


def _unpack_one(
    path: str, archive: zipfile.ZipFile, member: zipfile.ZipInfo, into: Path, written: int
) -> int:
    target = into / _safe_name(path, member.filename)
    if member.is_dir():
        target.mkdir(mode=0o755, parents=True, exist_ok=True)
        return written
    target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    if _is_link(member):
        os.symlink(archive.read(member).decode("utf-8"), target)
        return written
    with archive.open(member) as source, open(target, "xb") as out:
        while chunk := source.read(_CHUNK):
            written += len(chunk)
            if written > MAX_BYTES:  # the zip's directory may understate what it holds
                raise _bad(path, f"more than {MAX_BYTES // 2**20} MiB unpacked")
            out.write(chunk)
    mode = (member.external_attr >> 16) & 0o755
    os.chmod(target, mode or 0o644)
    return written
