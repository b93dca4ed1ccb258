"""Search over the local copies: words of a query against names, titles and descriptions.

A registry's own ``search`` may match names only; ranking here finds a server by a word of its
description too. Every word of the query must match somewhere; a match in the name counts more
than one in the title, which counts more than one in the description. Deleted servers are never
offered (the registry's advice: deletion marks malware or spam); deprecated ones are marked.
"""

import re
from collections.abc import Iterable, Mapping
from typing import Any

from meworkd.settings.dialects.serverjson import RUNTIMES

__all__ = ["OFFICIAL_META", "Hit", "needs_of", "rank", "status_of", "summary"]

_WORD = re.compile(r"[a-z0-9]+")
OFFICIAL_META = "io.modelcontextprotocol.registry/official"

Hit = tuple[str, dict[str, Any]]  # (registry base URL, the registry's response for a server)


def status_of(response: Mapping[str, Any]) -> str:
    meta = response.get("_meta")
    official = meta.get(OFFICIAL_META) if isinstance(meta, dict) else None
    status = official.get("status") if isinstance(official, dict) else None
    if status is None:  # the 2025-09 schema kept it in server.json itself
        server = response.get("server")
        status = server.get("status") if isinstance(server, dict) else None
    return status if isinstance(status, str) else "active"


def _text(server: Mapping[str, Any], key: str) -> str:
    value = server.get(key)
    return value.lower() if isinstance(value, str) else ""


def _score(words: list[str], server: Mapping[str, Any]) -> int:
    name, title, description = (_text(server, k) for k in ("name", "title", "description"))
    name_words = set(_WORD.findall(name))
    total = 0
    for word in words:
        if word in name_words:
            total += 10
        elif word in name:
            total += 6
        elif word in title:
            total += 4
        elif word in description:
            total += 2
        else:
            return 0
    return total


def rank(query: str, hits: Iterable[Hit]) -> list[Hit]:
    """The hits that match every word of ``query``, best first (all, by name, if it is empty)."""
    words = _WORD.findall(query.lower())
    scored: list[tuple[int, str, Hit]] = []
    for hit in hits:
        server = hit[1].get("server")
        if not isinstance(server, dict) or status_of(hit[1]) == "deleted":
            continue
        score = _score(words, server) if words else 1
        if score:
            if status_of(hit[1]) == "deprecated":
                score -= 1  # still offered, after an equal active one
            scored.append((-score, str(server.get("name")), hit))
    scored.sort(key=lambda item: (item[0], item[1]))
    return [hit for _score_, _name, hit in scored]


def needs_of(server: Mapping[str, Any]) -> dict[str, Any]:
    """What a server needs, told before installing: runtimes, required variables, a remote."""
    runtimes: list[str] = []
    environment: list[str] = []
    headers: list[str] = []
    for package in server.get("packages") or []:
        if not isinstance(package, dict):
            continue
        kind = package.get("registryType")
        runtime = RUNTIMES[kind][0] if isinstance(kind, str) and kind in RUNTIMES else kind
        runtime = "bundle" if kind == "mcpb" else runtime  # its manifest says what it runs
        if isinstance(runtime, str) and runtime not in runtimes:
            runtimes.append(runtime)
        environment += _required_names(package.get("environmentVariables"), environment)
    for remote in server.get("remotes") or []:
        if isinstance(remote, dict):
            headers += _required_names(remote.get("headers"), headers)
    return {
        "runtimes": runtimes,
        "environment": environment,
        "headers": headers,
        "remote": bool(server.get("remotes")),
    }


def _required_names(items: object, have: list[str]) -> list[str]:
    out: list[str] = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("isRequired") is True:
            name = item.get("name")
            if isinstance(name, str) and name not in have and name not in out:
                out.append(name)
    return out


def summary(registry: str, response: Mapping[str, Any]) -> dict[str, Any]:
    """One search result: what a list shows of a server, and which registry answered."""
    server = response.get("server")
    server = server if isinstance(server, dict) else {}
    return {
        "name": server.get("name"),
        "title": server.get("title"),
        "description": server.get("description"),
        "version": server.get("version"),
        "status": status_of(response),
        "needs": needs_of(server),
        "registry": registry,
    }
