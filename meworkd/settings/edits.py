"""Server registration as edits of the settings document (pure functions on the raw dict).

Every function validates what it writes, raises a :mod:`meworkd.base.errors` error instead of
writing something invalid, and leaves keys it does not own untouched (including unknown keys
inside an entry), so they can run inside :meth:`SettingsStore.mutate`.
"""

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from meworkd.base.errors import (
    ConflictError,
    InvalidParams,
    MeworkError,
    PresetNotFound,
    ServerNotFound,
)
from meworkd.settings.dialects import ToolRule
from meworkd.settings.model import McpOptions
from meworkd.settings.parse import canonical_type, parse_mcp_options, parse_preset, parse_server
from meworkd.settings.secrets import carries_mask, restore_masked

__all__ = [
    "OnConflict",
    "add_server",
    "add_tool_rules",
    "import_servers",
    "record_server_info",
    "remove_preset",
    "remove_server",
    "rename_server",
    "replace_server",
    "servers_of",
    "set_mcp_options",
    "set_preset",
    "set_tool_flag",
    "update_server",
]

OnConflict = Literal["error", "replace", "skip"]


def servers_of(doc: dict[str, Any]) -> dict[str, Any]:
    """The ``assets.mcpServers`` object of ``doc``, created if absent."""
    assets = doc.get("assets")
    if not isinstance(assets, dict):
        assets = doc["assets"] = {}
    servers = assets.get("mcpServers")
    if not isinstance(servers, dict):
        servers = assets["mcpServers"] = {}
    return servers


def _entry(doc: dict[str, Any], name: str) -> dict[str, Any]:
    entry = servers_of(doc).get(name)
    if entry is None:
        raise ServerNotFound(name)
    if not isinstance(entry, dict):
        raise InvalidParams(f"{name}: the stored entry is not an object; fix the settings file")
    return entry


def normalized(
    name: str, raw: Mapping[str, Any], stored: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Validate an entry and spell its ``type`` canonically; other keys are kept as given.

    A value sent back masked (as ``servers.get`` showed it) keeps the ``stored`` secret; any
    other mask or redaction is refused, so no secret is ever written back in redacted form.
    """
    out = restore_masked(raw, stored)
    where = carries_mask(out, stored)
    if where is not None:
        raise InvalidParams(
            f"{name}.{where}: holds a masked or redacted value, not the value itself; "
            "send the real value (or the mask exactly as servers.get shows it to keep it)"
        )
    parse_server(name, out)
    out["type"] = canonical_type(out)
    # Keep the key order people expect when they open the file: type first.
    return {"type": out.pop("type"), **out}


def add_server(doc: dict[str, Any], name: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    _check_name(name)
    servers = servers_of(doc)
    if name in servers:
        raise ConflictError(f"a server named {name!r} already exists", server=name)
    servers[name] = normalized(name, sandboxed_by_default(doc, raw))
    return servers[name]  # type: ignore[no-any-return]


def sandboxed_by_default(doc: Mapping[str, Any], raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """A new entry as it is stored: with ``mcp.sandbox_default`` on, a stdio entry that says
    nothing of a sandbox gets ``"sandbox": {"enabled": true}``."""
    mcp = doc.get("mcp")
    default = isinstance(mcp, dict) and mcp.get("sandbox_default") is True
    if not default or "sandbox" in raw or not isinstance(raw, Mapping):
        return raw
    try:
        stdio = canonical_type(raw) == "stdio"
    except ValueError:
        return raw  # (refused with its reason by normalized)
    return {**raw, "sandbox": {"enabled": True}} if stdio else raw


def update_server(doc: dict[str, Any], name: str, patch: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``patch`` into the entry; a ``null`` value removes that key."""
    entry = dict(_entry(doc, name))
    for key, value in patch.items():
        if value is None:
            entry.pop(key, None)
        else:
            entry[key] = value
    if "url" in patch and "type" not in patch and entry.get("command") is None:
        entry.pop("type", None)  # re-infer the transport from the new shape
    servers_of(doc)[name] = normalized(name, entry, _entry(doc, name))
    return servers_of(doc)[name]  # type: ignore[no-any-return]


def replace_server(doc: dict[str, Any], name: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """Store ``entry`` as the whole entry: keys it leaves out are removed (masks keep secrets)."""
    stored = _entry(doc, name)
    servers_of(doc)[name] = normalized(name, entry, stored)
    return servers_of(doc)[name]  # type: ignore[no-any-return]


def remove_server(doc: dict[str, Any], name: str) -> None:
    servers = servers_of(doc)
    if name not in servers:
        raise ServerNotFound(name)
    del servers[name]
    _rename_in_presets(doc, name, None)


def rename_server(doc: dict[str, Any], name: str, new_name: str) -> None:
    """Rename in place: the entry keeps its position and every other field."""
    _check_name(new_name)
    servers = servers_of(doc)
    if name not in servers:
        raise ServerNotFound(name)
    if new_name == name:
        return
    if new_name in servers:
        raise ConflictError(f"a server named {new_name!r} already exists", server=new_name)
    rebuilt = {(new_name if k == name else k): v for k, v in servers.items()}
    servers.clear()
    servers.update(rebuilt)
    _rename_in_presets(doc, name, new_name)


def _rename_in_presets(doc: dict[str, Any], old: str, new: str | None) -> None:
    presets = doc.get("presets")
    if not isinstance(presets, dict):
        return
    for preset in presets.values():
        if isinstance(preset, dict) and isinstance(preset.get("mcpServers"), list):
            names = preset["mcpServers"]
            preset["mcpServers"] = [
                n for n in ((new if x == old else x) for x in names) if n is not None
            ]


def set_tool_flag(
    doc: dict[str, Any],
    name: str,
    tool: str,
    *,
    key: Literal["disabledTools", "disabledAutoApproveTools", "alwaysAllowTools"],
    on: bool,
) -> list[str]:
    """Add ``tool`` to (``on``) or remove it from the entry's list ``key``."""
    entry = _entry(doc, name)
    current = [t for t in entry.get(key) or [] if isinstance(t, str)]
    if on and tool not in current:
        current.append(tool)
    if not on:
        current = [t for t in current if t != tool]
    if current:
        entry[key] = current
    else:
        entry.pop(key, None)
    return current


def record_server_info(doc: dict[str, Any], name: str, info: Mapping[str, Any]) -> None:
    """Store what Test connection learned (name, version, testedAt) in the entry."""
    _entry(doc, name)["serverInfo"] = {k: v for k, v in info.items() if v is not None}


def set_mcp_options(doc: dict[str, Any], options: Mapping[str, Any]) -> McpOptions:
    current = doc.get("mcp")
    merged = {**(current if isinstance(current, dict) else {}), **options}
    parsed = parse_mcp_options(merged)
    doc["mcp"] = merged
    return parsed


def set_preset(doc: dict[str, Any], name: str, preset: Mapping[str, Any]) -> None:
    if not name:
        raise InvalidParams("a preset needs a name")
    parse_preset(name, dict(preset))
    presets = doc.get("presets")
    if not isinstance(presets, dict):
        presets = doc["presets"] = {}
    presets[name] = dict(preset)


def remove_preset(doc: dict[str, Any], name: str) -> None:
    presets = doc.get("presets")
    if not isinstance(presets, dict) or name not in presets:
        raise PresetNotFound(name)
    del presets[name]


def import_servers(
    doc: dict[str, Any], entries: Mapping[str, Mapping[str, Any]], on_conflict: OnConflict
) -> dict[str, list[Any]]:
    """Add already-parsed entries; each is added, replaced, skipped or rejected with a reason."""
    servers = servers_of(doc)
    report: dict[str, list[Any]] = {"added": [], "replaced": [], "skipped": [], "rejected": []}
    for name, raw in entries.items():
        try:
            _check_name(name)
            kept = servers.get(name)  # masked values sent back keep its secrets
            stored = kept if isinstance(kept, dict) else None
            entry = normalized(name, sandboxed_by_default(doc, raw), stored)
        except MeworkError as exc:
            report["rejected"].append({"name": name, "reason": exc.message})
            continue
        if name in servers:
            if on_conflict == "skip":
                report["skipped"].append({"name": name, "reason": "a server with this name exists"})
                continue
            if on_conflict == "error":
                report["rejected"].append(
                    {
                        "name": name,
                        "reason": "a server with this name already exists "
                        '(import again with onConflict "replace" or "skip")',
                    }
                )
                continue
            servers[name] = entry
            report["replaced"].append(name)
        else:
            servers[name] = entry
            report["added"].append(name)
    return report


def add_tool_rules(doc: dict[str, Any], rules: Iterable[ToolRule]) -> list[dict[str, str]]:
    """Add each rule's pattern to its server's list (once); the rules that changed an entry."""
    servers = servers_of(doc)
    added: list[dict[str, str]] = []
    for rule in rules:
        entry = servers.get(rule.server)
        if not isinstance(entry, dict):
            continue  # resolved against entries that are objects: not reached
        current = entry.get(rule.field)
        listed = [t for t in current if isinstance(t, str)] if isinstance(current, list) else []
        if rule.pattern not in listed:
            entry[rule.field] = [*listed, rule.pattern]
            added.append(rule.as_dict())
    return added


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not name.strip():
        raise InvalidParams("a server name must be a non-empty string")
    if len(name) > 200:
        raise InvalidParams("a server name may be at most 200 characters")
    if any(ord(c) < 32 for c in name):
        raise InvalidParams("a server name may not contain control characters")
