"""Claude Code's permission rules for MCP tools, read as meworkd's per-tool rules.

A ``.claude/settings.json`` (or ``~/.claude/settings.json``) holds ``permissions.allow``,
``deny`` and ``ask``: lists of rules, of which those for MCP tools read ``mcp__<server>``
(every tool of the server), ``mcp__<server>__*`` (the same) or ``mcp__<server>__<tool>``, where
``*`` may appear in the tool part only. Claude Code spells a server's name with every character
outside ``[A-Za-z0-9_-]`` as ``_``. allow becomes ``alwaysAllowTools``, deny (never callable)
``disabledTools``, ask (ask every time) ``disabledAutoApproveTools``, which takes names only.
Rules are read here and held against the server names when the import is applied; every rule
that is not carried over is a warning, never dropped silently.
"""

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from meworkd.settings.toolrules import pattern_problem

__all__ = ["LISTS", "ToolRule", "mcp_rule_count", "read_permissions", "resolve_rules"]

# Claude Code's list → the entry's list it becomes.
LISTS = {"allow": "alwaysAllowTools", "deny": "disabledTools", "ask": "disabledAutoApproveTools"}
_PREFIX = "mcp__"
_OUTSIDE_NAME = re.compile(r"[^A-Za-z0-9_-]")
_GLOB = re.compile(r"[*?\[]")

Warning = dict[str, Any]  # {name (the server, or None), field, message}


@dataclass(frozen=True, slots=True)
class ToolRule:
    """One rule carried over: ``pattern`` joins ``server``'s ``field``."""

    server: str
    field: str
    pattern: str
    rule: str  # as Claude Code wrote it
    list: str  # allow, deny or ask

    def as_dict(self) -> dict[str, str]:
        return {
            "server": self.server,
            "field": self.field,
            "pattern": self.pattern,
            "rule": self.rule,
            "list": self.list,
        }


def read_permissions(doc: Mapping[str, Any]) -> tuple[dict[str, list[str]], list[Warning]]:
    """The MCP rules of ``doc["permissions"]`` by list, and what was not read (with why)."""
    permissions = doc.get("permissions")
    if permissions is None:
        return {}, []
    if not isinstance(permissions, dict):
        return {}, [_warn(None, "permissions", "not imported: expected an object")]
    rules: dict[str, list[str]] = {}
    warnings: list[Warning] = []
    for key in LISTS:
        value = permissions.get(key)
        if value is None:
            continue
        field = f"permissions.{key}"
        if not isinstance(value, list) or not all(isinstance(r, str) for r in value):
            warnings.append(_warn(None, field, "not imported: expected a list of rules"))
            continue
        rules[key] = [r for r in value if r.startswith(_PREFIX)]
        if others := [r for r in value if not r.startswith(_PREFIX)]:
            shown = ", ".join(others[:3]) + (", …" if len(others) > 3 else "")
            warnings.append(
                _warn(
                    None,
                    field,
                    f"{len(others)} rule(s) for Claude Code's own tools ({shown}) are not about "
                    "MCP servers; not imported",
                )
            )
    return rules, warnings


def mcp_rule_count(rules: Mapping[str, list[str]]) -> int:
    return sum(len(listed) for listed in rules.values())


def resolve_rules(
    rules: Mapping[str, list[str]], servers: Iterable[str]
) -> tuple[list[ToolRule], list[Warning]]:
    """``rules`` (by list) held against the names of ``servers``: what each becomes, or why
    it is not carried over."""
    by_spelling = _spellings(servers)
    found: list[ToolRule] = []
    warnings: list[Warning] = []
    for key, listed in rules.items():
        for rule in listed:
            result = _resolve(rule, key, by_spelling)
            if isinstance(result, ToolRule):
                found.append(result)
            else:
                warnings.append(result)
    return found, warnings


def _spellings(servers: Iterable[str]) -> dict[str, str]:
    """Claude Code's spelling of each server name → the name (the name itself first)."""
    names = list(servers)
    spelled = {_OUTSIDE_NAME.sub("_", name): name for name in names}
    return {**spelled, **{name: name for name in names}}


def _resolve(rule: str, key: str, by_spelling: Mapping[str, str]) -> ToolRule | Warning:
    field = f"permissions.{key}"
    rest = rule[len(_PREFIX) :]
    # The longest server name the rule starts with (a name may hold "__" itself).
    candidates = [s for s in by_spelling if rest == s or rest.startswith(s + "__")]
    if not candidates:
        server_part = rest.split("__", 1)[0]
        if _GLOB.search(server_part):
            why = "a pattern in the server's name matches no server in Claude Code either"
            return _warn(None, field, f"{rule}: {why}; not imported")
        return _warn(
            server_part or None,
            field,
            f"{rule}: no server named {server_part!r} is registered or in this document; "
            "not imported",
        )
    spelling = max(candidates, key=len)
    server = by_spelling[spelling]
    # mcp__server (and mcp__server__, read alike): every tool of the server
    tool = rest[len(spelling) + 2 :] or "*"
    target = LISTS[key]
    if target == "disabledAutoApproveTools" and _GLOB.search(tool):
        return _warn(
            server,
            field,
            f"{rule}: not imported: disabledAutoApproveTools takes tool names, not patterns; "
            "list the tools that must ask every time",
        )
    if (problem := pattern_problem(tool)) is not None:
        return _warn(server, field, f"{rule}: not imported: {problem}")
    return ToolRule(server, target, tool, rule, key)


def _warn(name: str | None, field: str, message: str) -> Warning:
    return {"name": name, "field": field, "message": message}
