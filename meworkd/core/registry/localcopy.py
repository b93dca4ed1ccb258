"""One registry's servers kept on disk in the state directory, refreshed with ``updated_since``.

The registry's own advice is to keep a local copy and refresh it incrementally: the first
refresh reads every page of ``GET /v0.1/servers`` (latest versions), the later ones only what
changed since the newest ``updatedAt`` seen. The copy is what search ranks, so search works
offline from the last answers (with their age). A registry that pages forever, repeats a cursor
or sends more servers than any registry holds is refused, and the copy stays as it was.
"""

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio

from meworkd.base.errors import RegistryUnavailable
from meworkd.base.private import write_private
from meworkd.core.registry.ranking import OFFICIAL_META
from meworkd.mcp import get_json

__all__ = ["LocalCopy", "registry_url"]

PAGE_LIMIT = 100  # servers asked per page (the registry's maximum)
MAX_PAGES = 300  # 30 000 servers: several times the official registry today
PAGE_BYTES = 4 * 1024 * 1024  # one page of 100 server.json documents is far smaller
TIMEOUT_SECONDS = 15.0


def registry_url(base: str, *parts: str) -> str:
    """``base``/v0.1/``parts`` (each part URL-encoded whole: a server name holds a ``/``)."""
    return "/".join([base.rstrip("/"), "v0.1", *(quote(p, safe="") for p in parts)])


def _official(response: dict[str, Any]) -> dict[str, Any]:
    meta = response.get("_meta")
    found = meta.get(OFFICIAL_META) if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else {}


class LocalCopy:
    """The servers of the registry at ``base``, by name (latest version each)."""

    def __init__(self, base: str, state_dir: Path, timeout: float = TIMEOUT_SECONDS) -> None:
        self.base = base
        self.timeout = timeout
        digest = hashlib.sha256(base.encode()).hexdigest()[:16]
        self._path = state_dir / "registry" / f"{digest}.json"
        self.servers: dict[str, dict[str, Any]] = {}
        self.fetched_at: float | None = None  # when the registry last answered (local clock)
        self._updated_since: str | None = None  # the newest updatedAt seen (registry's clock)
        self._refreshing = anyio.Lock()  # one refresh at a time; the others wait for it
        self._load()

    def _load(self) -> None:
        try:
            saved = json.loads(self._path.read_bytes())
        except (OSError, ValueError, RecursionError):
            return  # none yet, or damaged: the next refresh reads everything again
        if isinstance(saved, dict) and saved.get("base") == self.base:
            servers = saved.get("servers")
            self.servers = servers if isinstance(servers, dict) else {}
            fetched = saved.get("fetchedAt")
            self.fetched_at = float(fetched) if isinstance(fetched, int | float) else None
            since = saved.get("updatedSince")
            self._updated_since = since if isinstance(since, str) else None

    def _save(self) -> None:
        self._path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = self._path.with_suffix(".tmp")
        document = {
            "base": self.base,
            "fetchedAt": self.fetched_at,
            "updatedSince": self._updated_since,
            "servers": self.servers,
        }
        write_private(temporary, json.dumps(document).encode())
        os.replace(temporary, self._path)

    def age(self) -> float | None:
        """Seconds since the registry last answered (None: never)."""
        return None if self.fetched_at is None else max(0.0, time.time() - self.fetched_at)

    async def refresh(self) -> int:
        """Read what changed since the last refresh (everything the first time); the number
        of servers read. Raises :class:`RegistryUnavailable`; the copy is then unchanged."""
        async with self._refreshing:
            return await self._refresh()

    async def _refresh(self) -> int:
        since = self._updated_since if self.servers else None
        changed = await self._read_pages(since)
        newest = self._updated_since
        for response in changed:
            server = response.get("server")
            name = server.get("name") if isinstance(server, dict) else None
            if not isinstance(name, str):
                continue
            official = _official(response)
            if official.get("isLatest") is False:
                continue  # an older version changed (e.g. its status): the latest stays
            self.servers[name] = response
            updated = official.get("updatedAt")
            if isinstance(updated, str) and (newest is None or updated > newest):
                newest = updated
        self._updated_since = newest
        self.fetched_at = time.time()
        try:
            await anyio.to_thread.run_sync(self._save)  # megabytes for a large registry
        except OSError:
            pass  # the copy in memory still answers; the next refresh saves it again
        return len(changed)

    async def _read_pages(self, since: str | None) -> list[dict[str, Any]]:
        url = registry_url(self.base, "servers")
        params = {"limit": str(PAGE_LIMIT), "version": "latest"}
        if since is not None:
            params["updated_since"] = since
        found: list[dict[str, Any]] = []
        seen_cursors: set[str] = set()
        for _page in range(MAX_PAGES):
            status, page = await get_json(url, params, within=self.timeout, max_bytes=PAGE_BYTES)
            items, cursor = self._page_items(url, status, page)
            found += items
            if not cursor:
                return found
            if cursor in seen_cursors:
                raise RegistryUnavailable(
                    f"{url} sent a page cursor it had sent before: its pages never end", url=url
                )
            seen_cursors.add(cursor)
            params["cursor"] = cursor
        raise RegistryUnavailable(
            f"{url} kept sending pages past {MAX_PAGES} ({MAX_PAGES * PAGE_LIMIT} servers): "
            "no registry is that large, so reading stopped",
            url=url,
        )

    @staticmethod
    def _page_items(url: str, status: int, page: Any) -> tuple[list[dict[str, Any]], str | None]:
        servers = page.get("servers") if isinstance(page, dict) else None
        if status == 404 or not isinstance(servers, list):
            raise RegistryUnavailable(
                f"{url} did not answer as an MCP registry (expected {{servers, metadata}}): "
                "check the URL in mcp.registries",
                url=url,
            )
        metadata = page.get("metadata")
        cursor = metadata.get("nextCursor") if isinstance(metadata, dict) else None
        items = [s for s in servers if isinstance(s, dict)]
        return items, cursor if isinstance(cursor, str) and cursor else None

    async def fetch(self, name: str, version: str | None) -> dict[str, Any] | None:
        """One server's response (``version`` or the latest) from the registry; None if it
        does not know it. Raises :class:`RegistryUnavailable`."""
        url = registry_url(self.base, "servers", name, "versions", version or "latest")
        status, found = await get_json(url, within=self.timeout, max_bytes=PAGE_BYTES)
        if status == 404:
            return None
        if not isinstance(found, dict) or not isinstance(found.get("server"), dict):
            raise RegistryUnavailable(f"{url} did not answer with a server", url=url)
        return found

    async def versions(self, name: str) -> list[dict[str, Any]] | None:
        """Every version of ``name`` the registry holds, newest first (None: unknown)."""
        url = registry_url(self.base, "servers", name, "versions")
        status, page = await get_json(url, within=self.timeout, max_bytes=PAGE_BYTES)
        if status == 404:
            return None
        items, _cursor = self._page_items(url, status, page)
        return items
