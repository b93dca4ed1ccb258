"""Reading server definitions pasted from other MCP clients (``servers.import``).

Accepts Claude Desktop's / Cline's ``{"mcpServers": {...}}``, Claude Code's ``.mcp.json`` (same
shape), VS Code's ``{"servers": {...}}`` and a bare map of servers. Duplicate names are found in
the JSON text itself, because a JSON parser silently keeps the last one.
"""

import json
from dataclasses import dataclass, field
from typing import Any

from meworkd.base.errors import InvalidParams
from meworkd.settings.parse import loads_keyed

__all__ = ["ImportDocument", "parse_import"]

# Keys that mark an object as one server definition rather than a map of them.
_ENTRY_KEYS = frozenset({"command", "url", "type", "args"})
# Keys of the shared format that meworkd reads; others are kept as they are.
_VSCODE_ONLY = frozenset({"envFile", "inputs"})


@dataclass(slots=True)
class ImportDocument:
    format: str
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    duplicates: list[str] = field(default_factory=list)
    rejected: list[dict[str, str]] = field(default_factory=list)


def parse_import(text: str) -> ImportDocument:
    """Find the servers in ``text``; raise :class:`InvalidParams` if it is not usable JSON."""
    try:
        doc = loads_keyed(text)
    except json.JSONDecodeError as exc:
        raise InvalidParams(
            f"the document is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}",
            line=exc.lineno,
            column=exc.colno,
        ) from None
    except RecursionError:
        raise InvalidParams("the document is nested too deeply") from None
    if not isinstance(doc, dict):
        raise InvalidParams("expected a JSON object with mcpServers, servers, or a map of servers")
    if isinstance(doc.get("mcpServers"), dict):
        fmt, servers = "mcpServers", doc["mcpServers"]
    elif isinstance(doc.get("servers"), dict):
        fmt, servers = "vscode", doc["servers"]
    elif doc and all(isinstance(v, dict) and _ENTRY_KEYS & v.keys() for v in doc.values()):
        fmt, servers = "map", doc
    elif _ENTRY_KEYS & doc.keys():
        raise InvalidParams(
            "this looks like a single server definition; wrap it as "
            '{"mcpServers": {"<name>": {...}}} so it has a name'
        )
    else:
        raise InvalidParams("found no servers: expected mcpServers, servers, or a map of servers")
    container = {"mcpServers": "mcpServers", "vscode": "servers"}.get(fmt)
    if container in getattr(doc, "duplicates", ()):
        # json keeps the last block only: the servers of the others would vanish silently.
        raise InvalidParams(
            f'"{container}" appears more than once in the document; merge them into one',
            duplicates=[container],
        )
    result = ImportDocument(format=fmt, duplicates=list(servers.duplicates))
    for name, raw in servers.items():
        if name in result.duplicates:
            result.rejected.append(
                {"name": name, "reason": "the name appears more than once in the document"}
            )
            continue
        if not isinstance(raw, dict):
            result.rejected.append({"name": name, "reason": "expected an object"})
            continue
        try:
            result.entries[name] = _entry(raw)
        except RecursionError:  # json.loads went deeper than _plain can copy
            result.rejected.append({"name": name, "reason": "the entry is nested too deeply"})
    return result


def _entry(raw: dict[str, Any]) -> dict[str, Any]:
    entry = {k: v for k, v in raw.items() if k not in _VSCODE_ONLY}
    # Claude Code writes "timeout" in milliseconds in some tools and seconds in others; only
    # the explicit key is read, so nothing ambiguous is guessed.
    if entry.get("disabled") is True and "enabled" not in entry:
        entry["enabled"] = False  # Cline/Roo spell it "disabled"
    entry.pop("disabled", None)
    return _plain(entry)  # type: ignore[no-any-return]


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
