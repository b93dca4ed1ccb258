"""The settings file as people read and edit it: the document (secrets masked), a reload, the
``mcp.*`` options and the presets (named selections with an approval level).

Server entries are :class:`meworkd.core.servers.Servers`'; the store applies every edit as a
minimal edit of the file's text and refuses one that would leave it invalid.
"""

from typing import Any

import msgspec

from meworkd.base.errors import InvalidParams
from meworkd.settings import edits, masked_entry, safety
from meworkd.settings.store import SettingsStore

__all__ = ["SettingsFile"]


class SettingsFile:
    def __init__(self, store: SettingsStore) -> None:
        self._store = store

    def get(self) -> dict[str, Any]:
        """The document as stored (secrets masked), the options in force, what is wrong."""
        store = self._store
        doc = store.document()
        servers = edits.servers_of(doc)
        for name, entry in servers.items():
            if isinstance(entry, dict):
                servers[name] = masked_entry(entry)
        return {
            "path": str(store.path),
            "document": doc,
            "mcp": msgspec.to_builtins(store.settings.mcp),
            "errors": list(store.settings.errors),
            "serverErrors": dict(store.settings.server_errors),
            "unreadable": store.unreadable,
            "warnings": list(safety.inspect(store.path).warnings),
        }

    async def reload(self) -> dict[str, Any]:
        """Read the file again now; what changed, or why it was not applied."""
        diff = await self._store.reload("rpc")
        return {
            "applied": self._store.unreadable is None,
            "error": self._store.unreadable,
            **(diff.as_event() if diff is not None else {}),
        }

    async def set_mcp_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """Set the given ``mcp.*`` options (None values are left out); the options now."""
        given = {k: v for k, v in options.items() if v is not None}
        if not given:
            raise InvalidParams("give at least one option to change")
        parsed = await self._store.mutate(lambda doc: edits.set_mcp_options(doc, given))
        return {"mcp": msgspec.to_builtins(parsed)}

    # --- presets -------------------------------------------------------------------------

    def presets(self) -> dict[str, Any]:
        presets = self._store.settings.presets
        return {"presets": [{"name": n, **msgspec.to_builtins(p)} for n, p in presets.items()]}

    async def set_preset(self, name: str, preset: dict[str, Any]) -> dict[str, Any]:
        await self._store.mutate(lambda doc: edits.set_preset(doc, name, preset))
        return {"name": name, **msgspec.to_builtins(self._store.settings.presets[name])}

    async def remove_preset(self, name: str) -> dict[str, Any]:
        await self._store.mutate(lambda doc: edits.remove_preset(doc, name))
        return {"removed": name}
