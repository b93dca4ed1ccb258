"""VS Code's ``inputs``: values an entry refers to as ``${input:ID}``, asked of the user.

VS Code prompts for them when the server starts; meworkd asks at import instead (the caller
supplies them, ``meworkctl`` prompts), and stores the supplied text in place of the reference.
A supplied ``${VAR}`` is stored as it is, so the secret can stay in meworkd's environment.
"""

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["INPUT_REFERENCE", "declared_inputs", "references", "substitute"]

INPUT_REFERENCE = re.compile(r"\$\{input:([^}]+)\}")


def declared_inputs(raw: object) -> dict[str, dict[str, Any]]:
    """VS Code's ``inputs`` list as ``{id: {description, password}}`` (malformed items skipped)."""
    found: dict[str, dict[str, Any]] = {}
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            description = item.get("description")
            found[item["id"]] = {
                "description": description if isinstance(description, str) else "",
                "password": item.get("password") is True,
            }
    return found


def references(value: Any) -> list[str]:
    """The input ids ``value`` (an entry, recursively) refers to, in order of appearance."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            found.extend(i for i in INPUT_REFERENCE.findall(node) if i not in found)
        elif isinstance(node, dict):
            for item in node.values():
                walk(item)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(value)
    return found


def substitute(value: Any, supplied: Mapping[str, str]) -> Any:
    """``value`` with every ``${input:ID}`` replaced by ``supplied[ID]`` (all must be there)."""
    if isinstance(value, str):
        return INPUT_REFERENCE.sub(lambda m: supplied[m[1]], value)
    if isinstance(value, dict):
        return {k: substitute(v, supplied) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, supplied) for v in value]
    return value
