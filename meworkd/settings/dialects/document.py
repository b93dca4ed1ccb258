"""A pasted document: which host wrote it, its servers, and what import would do with each.

Accepted: ``{"mcpServers": {...}}`` (Claude Desktop, Claude Code's ``.mcp.json``, Cursor,
Windsurf, Cline, Roo, Gemini CLI), Continue's ``{"mcpServers": [...]}`` list, VS Code's
``{"servers": {...}, "inputs": [...]}`` (also inside its settings' ``"mcp"`` object), Zed's
``{"context_servers": {...}}``, Goose's ``{"extensions": {...}}`` (its YAML, converted to JSON),
a bare map of servers, and Claude Code's ``.claude/settings.json``, whose ``permissions`` rules
for MCP tools become per-tool rules (:mod:`.permissions`). Duplicate names are found in the
JSON text itself, because a JSON parser silently keeps the last one.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from meworkd.base.errors import InvalidParams
from meworkd.settings.dialects.fields import GEMINI_KEYS, Rejected, translate
from meworkd.settings.dialects.inputs import declared_inputs, references, substitute
from meworkd.settings.dialects.permissions import mcp_rule_count, read_permissions
from meworkd.settings.pasted import loads_pasted, plain_json

__all__ = ["ImportDocument", "parse_import"]

# Keys that mark an object as one server definition rather than a map of them.
_ENTRY_KEYS = frozenset({"command", "url", "type", "args", "serverUrl", "httpUrl", "cmd", "uri"})
# A YAML document's top-level key for servers (Goose, Continue), which JSON cannot start with.
_YAML_KEY = re.compile(r"^(?:extensions|mcpServers)\s*:", re.MULTILINE)
# The object holding the servers, by format (checked in this order).
_CONTAINERS = (
    ("mcpServers", "mcpServers"),
    ("servers", "vscode"),
    ("context_servers", "zed"),
    ("extensions", "goose"),
)


@dataclass(slots=True)
class ImportDocument:
    format: str
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    duplicates: list[str] = field(default_factory=list)
    rejected: list[dict[str, str]] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)
    needs_inputs: list[dict[str, Any]] = field(default_factory=list)
    # Claude Code's permission rules for MCP tools, by list (allow, deny, ask), resolved
    # against the server names when the import is applied.
    permissions: dict[str, list[str]] = field(default_factory=dict)


def parse_import(text: str, inputs: Mapping[str, str] | None = None) -> ImportDocument:
    """Find the servers in ``text``; raise :class:`InvalidParams` if it is not usable JSON.

    ``inputs`` supplies VS Code's ``${input:ID}`` values; an entry referring to one that is not
    supplied is left out and listed in ``needs_inputs``.
    """
    doc = _load(text)
    if isinstance(doc.get("mcp"), dict) and isinstance(doc["mcp"].get("servers"), dict):
        doc = doc["mcp"]  # VS Code's user settings.json keeps them under "mcp"
    permissions, permission_warnings = read_permissions(doc)
    if mcp_rule_count(permissions) and not any(key in doc for key, _fmt in _CONTAINERS):
        # Claude Code's settings.json: rules only, for servers registered already.
        result = ImportDocument(format="claudeSettings", permissions=permissions)
        result.warnings += permission_warnings
        return result
    fmt, container, servers = _servers_of(doc)
    if container in getattr(doc, "duplicates", ()):
        # json keeps the last block only: the servers of the others would vanish silently.
        raise InvalidParams(
            f'"{container}" appears more than once in the document; merge them into one',
            duplicates=[container],
        )
    result = ImportDocument(format=fmt, permissions=permissions)
    if isinstance(servers, list):
        servers = _named_list(servers, result)
    result.duplicates += list(getattr(servers, "duplicates", ()))
    dialect = fmt
    if fmt == "mcpServers" and any(
        isinstance(v, dict) and GEMINI_KEYS & v.keys() for v in servers.values()
    ):
        dialect = "gemini"
    for name, raw in servers.items():
        _read_entry(result, name, raw, dialect)
    _resolve_inputs(result, declared_inputs(doc.get("inputs")), inputs or {})
    result.warnings += permission_warnings
    return result


def _yaml_hint(text: str) -> str:
    if not _YAML_KEY.search(text):
        return ""
    return (
        "; it looks like YAML (Goose's or Continue's config.yaml): convert it to JSON first, "
        "e.g. with yq -o json"
    )


def _load(text: str) -> Any:
    doc = loads_pasted(text, "the document", _yaml_hint)
    if not isinstance(doc, dict):
        raise InvalidParams("expected a JSON object with mcpServers, servers, or a map of servers")
    return doc


def _servers_of(doc: dict[str, Any]) -> tuple[str, str | None, Any]:
    for key, fmt in _CONTAINERS:
        value = doc.get(key)
        if isinstance(value, dict):
            return fmt, key, value
        if key == "mcpServers" and isinstance(value, list):
            return "continue", key, value
    if doc and all(isinstance(v, dict) and _ENTRY_KEYS & v.keys() for v in doc.values()):
        return "map", None, doc
    if _ENTRY_KEYS & doc.keys():
        raise InvalidParams(
            "this looks like a single server definition; wrap it as "
            '{"mcpServers": {"<name>": {...}}} so it has a name'
        )
    raise InvalidParams(
        "found no servers: expected mcpServers, servers, context_servers, extensions, "
        "a map of servers, or Claude Code's permissions with mcp__ rules"
    )


def _named_list(items: list[Any], result: ImportDocument) -> dict[str, Any]:
    """Continue's list of ``{name, ...}`` as a map; unnamed and repeated names are reported."""
    named: dict[str, Any] = {}
    for index, item in enumerate(items):
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str):
            result.rejected.append({"name": f"#{index + 1}", "reason": "the entry has no name"})
        elif name in named:
            if name not in result.duplicates:
                result.duplicates.append(name)
        else:
            named[name] = {k: v for k, v in item.items() if k != "name"}
    return named


def _read_entry(result: ImportDocument, name: str, raw: object, dialect: str) -> None:
    if name in result.duplicates:
        result.rejected.append(
            {"name": name, "reason": "the name appears more than once in the document"}
        )
        return
    if not isinstance(raw, dict):
        result.rejected.append({"name": name, "reason": "expected an object"})
        return
    if dialect == "goose" and str(raw.get("name", "")).lower() == name.lower():
        raw = {k: v for k, v in raw.items() if k != "name"}  # the key again, as Goose writes it
    try:
        translated = translate(plain_json(raw), dialect=dialect)
    except Rejected as exc:
        result.rejected.append({"name": name, "reason": str(exc)})
        return
    except RecursionError:  # json.loads went deeper than plain_json can copy
        result.rejected.append({"name": name, "reason": "the entry is nested too deeply"})
        return
    result.entries[name] = translated.entry
    result.warnings += [
        {"name": name, "field": key, "message": message} for key, message in translated.warnings
    ]


def _resolve_inputs(
    result: ImportDocument, declared: dict[str, dict[str, Any]], supplied: Mapping[str, str]
) -> None:
    needed: dict[str, dict[str, Any]] = {}
    for name, entry in list(result.entries.items()):
        missing = [i for i in references(entry) if i not in supplied]
        if not missing:
            result.entries[name] = substitute(entry, supplied)
            continue
        del result.entries[name]
        for input_id in missing:
            info = declared.get(input_id, {"description": "", "password": False})
            needed.setdefault(input_id, {"id": input_id, **info, "servers": []})
            needed[input_id]["servers"].append(name)
    result.needs_inputs = list(needed.values())
