"""Registries: finding servers in MCP registries and installing them as settings entries.

servers.search ranks the local copies (refreshed when older than a few minutes, or when asked);
a registry that does not answer leaves its last copy in use, and the result says so with the
copy's age. servers.registryGet asks the registries in order for one server.json.
servers.install makes an entry of it with the same preview, ``needsInputs`` and dry run as
servers.import; the entry remembers where it came from (``installedFrom``), which is what
servers.outdated and servers.update read.
"""

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from meworkd.base.errors import (
    InvalidParams,
    RegistryServerNotFound,
    RegistryUnavailable,
    ServerNotFound,
    UnusableServerJson,
)
from meworkd.core.registry.bundles import BundleInstaller
from meworkd.core.registry.localcopy import LocalCopy
from meworkd.core.registry.ranking import Hit, rank, status_of, summary
from meworkd.settings import edits, masked_entry
from meworkd.settings.dialects import choices_of, entry_name, plan_install
from meworkd.settings.store import SettingsStore

__all__ = ["Registries"]

REFRESH_AFTER_SECONDS = 300.0  # search as you type must not ask the registry at each key
MAX_LIMIT = 100
# The entry's fields servers.update replaces; the rest (tool rules, timeouts) are the user's.
_RUN_FIELDS = ("type", "command", "args", "env", "url", "headers", "description", "installedFrom")


class Registries:
    def __init__(
        self,
        store: SettingsStore,
        state_dir: Path,
        environ: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> None:
        self._store = store
        self._state_dir = state_dir
        self._environ = os.environ if environ is None else environ  # where runtimes are found
        self._timeout = timeout
        self._copies: dict[str, LocalCopy] = {}
        self._bundles = BundleInstaller(store, state_dir / "bundles", self._environ, self._found)

    def _copy(self, base: str) -> LocalCopy:
        if base not in self._copies:
            if self._timeout is None:
                self._copies[base] = LocalCopy(base, self._state_dir)
            else:
                self._copies[base] = LocalCopy(base, self._state_dir, self._timeout)
        return self._copies[base]

    def _bases(self) -> tuple[str, ...]:
        return self._store.settings.mcp.registries

    def _found(self, command: str) -> bool:
        path = self._environ.get("PATH", os.defpath)
        return shutil.which(command, path=path) is not None

    # --- search --------------------------------------------------------------------------

    async def search(
        self, query: str, limit: int, cursor: str | None, *, refresh: bool
    ) -> dict[str, Any]:
        """Servers matching ``query``, best first, ``limit`` at a time from ``cursor``."""
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidParams(f"limit: expected 1 to {MAX_LIMIT}")
        start = _offset(cursor)
        states = [await self._refreshed(base, refresh and cursor is None) for base in self._bases()]
        if states and all(not s["ok"] and s["ageSeconds"] is None for s in states):
            raise RegistryUnavailable(
                "no registry answered and none was read before, so there is nothing to search: "
                + "; ".join(str(s["error"]) for s in states)
            )
        hits: list[Hit] = []
        seen: set[str] = set()
        for base in self._bases():
            for name, response in self._copy(base).servers.items():
                if name not in seen:  # the first registry that has a name answers for it
                    seen.add(name)
                    hits.append((base, response))
        ranked = rank(query, hits)
        page = ranked[start : start + limit]
        more = start + limit < len(ranked)
        return {
            "servers": [summary(base, response) for base, response in page],
            "total": len(ranked),
            "nextCursor": str(start + limit) if more else None,
            "offline": any(not s["ok"] for s in states),
            "registries": states,
        }

    async def _refreshed(self, base: str, force: bool) -> dict[str, Any]:
        copy = self._copy(base)
        age = copy.age()
        if not force and age is not None and age < REFRESH_AFTER_SECONDS:
            return {"url": base, "ok": True, "error": None, "ageSeconds": round(age)}
        try:
            await copy.refresh()
        except RegistryUnavailable as exc:
            age = copy.age()
            return {
                "url": base,
                "ok": False,
                "error": exc.message,
                "ageSeconds": None if age is None else round(age),
            }
        return {"url": base, "ok": True, "error": None, "ageSeconds": 0}

    # --- one server ----------------------------------------------------------------------

    async def get(self, name: str, version: str | None) -> dict[str, Any]:
        """``name``'s server.json (``version`` or the latest) from the first registry that
        knows it; the last copy's when no registry answers and the latest was asked."""
        errors: list[str] = []
        for base in self._bases():
            try:
                response = await self._copy(base).fetch(name, version)
            except RegistryUnavailable as exc:
                errors.append(exc.message)
                kept = self._copy(base).servers.get(name)
                if kept is not None and version in (None, "latest", _version_of(kept)):
                    return _one(base, kept, offline=True, age=self._copy(base).age())
                continue
            if response is not None:
                return _one(base, response, offline=False, age=0.0)
        if errors and len(errors) == len(self._bases()):
            raise RegistryUnavailable("; ".join(errors))
        raise RegistryServerNotFound(name, version)

    # --- install, outdated, update -------------------------------------------------------

    async def install(
        self,
        name: str | None,
        bundle: str | None,
        version: str | None,
        choice: int | None,
        inputs: Mapping[str, str],
        entry: str | None,
        *,
        dry_run: bool,
    ) -> dict[str, Any]:
        """Add ``name`` from its registry as settings entry ``entry``; a dry run, or an install
        that still needs inputs, writes nothing and says what it would do."""
        if (name is None) == (bundle is None):
            raise InvalidParams("give either name (a registry's server) or bundle (a .mcpb file)")
        if bundle is not None:
            return await self._bundles.install(bundle, inputs, entry, dry_run=dry_run)
        assert name is not None
        found = await self._installable(name, version)
        server = found["server"]
        target = entry or entry_name(str(server.get("name")))
        plan = plan_install(server, choice, inputs, self._found)
        if found["status"] == "deprecated":
            plan.warnings.append(f"the registry marks {name} deprecated")
        origin = {
            "registry": found["registry"],
            "name": server.get("name"),
            "version": server.get("version"),
        }
        about = {
            "registry": found["registry"],
            "status": found["status"],
            "choices": choices_of(server, self._found),
            "choice": plan.choice,
        }
        if plan.bundle is not None:
            url, digest = plan.bundle
            done = await self._bundles.install_from(
                url, digest, inputs, entry, origin, dry_run=dry_run
            )
            return {**done, **about}
        plan.entry["installedFrom"] = origin
        exists = target in edits.servers_of(self._store.document())
        written = not dry_run and not plan.needs_inputs
        if written:
            stored = plan.entry
            await self._store.mutate(lambda doc: edits.add_server(doc, target, stored))
        return {
            "name": target,
            "dryRun": dry_run,
            "installed": written,
            "exists": exists,
            **about,
            "server": masked_entry(plan.entry),
            "inputs": plan.inputs,
            "needsInputs": plan.needs_inputs,
            "warnings": plan.warnings + _unused(inputs, plan.inputs),
        }

    async def _installable(self, name: str, version: str | None) -> dict[str, Any]:
        found = await self.get(name, version)
        if found["status"] == "deleted":
            raise UnusableServerJson(
                f"{name}: the registry marks it deleted (as it does malware and spam); "
                "it is not installed"
            )
        return found

    async def outdated(self) -> dict[str, Any]:
        """Entries installed from a registry whose registry has a newer latest version."""
        out: list[dict[str, Any]] = []
        errors: list[dict[str, str]] = []
        for name, config in self._store.settings.servers.items():
            origin = config.installed_from
            if origin is None or origin.registry is None or origin.name is None:
                continue
            try:
                latest = await self._copy(origin.registry).fetch(origin.name, None)
            except RegistryUnavailable as exc:
                errors.append({"name": name, "error": exc.message})
                continue
            newest = None if latest is None else _version_of(latest)
            if newest is not None and newest != origin.version:
                out.append(
                    {
                        "name": name,
                        "server": origin.name,
                        "registry": origin.registry,
                        "installed": origin.version,
                        "latest": newest,
                        "status": status_of(latest) if latest is not None else None,
                    }
                )
        return {"servers": out, "errors": errors}

    async def update(
        self, name: str, version: str | None, inputs: Mapping[str, str], *, dry_run: bool
    ) -> dict[str, Any]:
        """Move entry ``name`` to ``version`` (default the latest) of the server it came from;
        its environment and header values are kept, its own settings too."""
        stored = edits.servers_of(self._store.document()).get(name)
        config = self._store.settings.servers.get(name)
        if not isinstance(stored, dict) or config is None:
            raise ServerNotFound(name)
        origin = config.installed_from
        if origin is None or origin.registry is None or origin.name is None:
            raise InvalidParams(f"{name!r} was not installed from a registry", server=name)
        response = await self._copy(origin.registry).fetch(origin.name, version)
        if response is None:
            raise RegistryServerNotFound(origin.name, version)
        kept = {**_kept_values(stored), **inputs}
        plan = plan_install(response["server"], None, kept, self._found)
        if plan.bundle is not None or origin.bundle is not None:
            raise InvalidParams(
                f"{name!r} is a bundle: remove it and install the new version", server=name
            )
        new_version = _version_of(response)
        plan.entry["installedFrom"] = {
            "registry": origin.registry,
            "name": origin.name,
            "version": new_version,
        }
        entry = {k: v for k, v in stored.items() if k not in _RUN_FIELDS} | plan.entry
        written = not dry_run and not plan.needs_inputs
        if written:
            await self._store.mutate(lambda doc: edits.replace_server(doc, name, entry))
        return {
            "name": name,
            "dryRun": dry_run,
            "updated": written,
            "from": origin.version,
            "to": new_version,
            "server": masked_entry(entry),
            "needsInputs": plan.needs_inputs,
            "warnings": plan.warnings,
        }


def _offset(cursor: str | None) -> int:
    if cursor is None or cursor == "":
        return 0
    if not cursor.isdigit():
        raise InvalidParams("cursor: expected a nextCursor of an earlier servers.search")
    return int(cursor)


def _version_of(response: Mapping[str, Any]) -> str | None:
    server = response.get("server")
    version = server.get("version") if isinstance(server, dict) else None
    return version if isinstance(version, str) else None


def _one(
    base: str, response: dict[str, Any], *, offline: bool, age: float | None
) -> dict[str, Any]:
    return {
        "registry": base,
        "server": response["server"],
        "status": status_of(response),
        "meta": response.get("_meta") if isinstance(response.get("_meta"), dict) else {},
        "offline": offline,
        "ageSeconds": None if age is None else round(age),
    }


def _kept_values(stored: Mapping[str, Any]) -> dict[str, str]:
    """The entry's environment and header values, by name: what the user gave last time."""
    kept: dict[str, str] = {}
    for key in ("env", "headers"):
        values = stored.get(key)
        if isinstance(values, dict):
            kept.update({k: v for k, v in values.items() if isinstance(v, str)})
    return kept


def _unused(supplied: Mapping[str, str], inputs: list[dict[str, Any]]) -> list[str]:
    asked = {i["id"] for i in inputs}
    return [
        f"inputs.{key}: the server asks for no input of that name"
        for key in supplied
        if key not in asked
    ]
