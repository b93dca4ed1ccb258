"""What every kind of test shares: the fixture servers' settings entries, text_of, the bounds.

Which server to use: :func:`fake` (``tests/servers/fake.py``, standard library only, starts in
milliseconds) for a test that needs "a server" with kitchen's tools; :func:`kitchen` (the
SDK-based ``tests/servers/kitchen.py``) only for a test about the SDK's own behaviour: the
2026-07-28 era (``modern_only.py``), the SDK server's validation or its error texts.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "APPS_FAKE",
    "APPS_VIEW",
    "BOUND",
    "COUNTING",
    "ENVDUMP",
    "EVENT_TIMEOUT",
    "FAKE",
    "HTTP_SERVER",
    "KITCHEN",
    "MODERN_ONLY",
    "PY",
    "RAW_BAD",
    "SERVERS",
    "START_BOUND",
    "counting",
    "document",
    "envdump",
    "fake",
    "kitchen",
    "text_of",
    "write_document",
]

PY = sys.executable
SERVERS = Path(__file__).resolve().parent / "servers"
FAKE = str(SERVERS / "fake.py")
KITCHEN = str(SERVERS / "kitchen.py")
COUNTING = str(SERVERS / "counting.py")
ENVDUMP = str(SERVERS / "envdump.py")
RAW_BAD = str(SERVERS / "raw_bad.py")
HTTP_SERVER = str(SERVERS / "http_server.py")
MODERN_ONLY = str(SERVERS / "modern_only.py")
APPS_VIEW = str(SERVERS / "apps_view.py")  # MCP Apps on the SDK: where the SDK is the subject
APPS_FAKE = str(SERVERS / "apps_fake.py")  # the same, stdlib only: for "an MCP Apps server"

# Bounds, not timings: how long a wait may take before it is a failure (a loaded 2-core machine
# must never reach them). BOUND for one event or reply, START_BOUND for a process's start-up.
BOUND = 20.0
EVENT_TIMEOUT = BOUND
START_BOUND = 30.0


def _stdio(script: str, args: tuple[str, ...], fields: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "stdio", "command": PY, "args": [script, *args], **fields}


def fake(*args: str, **fields: Any) -> dict[str, Any]:
    """A settings entry for the stdlib fake server (kitchen's options and tools, ``fields`` in
    camelCase)."""
    return _stdio(FAKE, args, fields)


def kitchen(*args: str, **fields: Any) -> dict[str, Any]:
    """A settings entry for the SDK-based kitchen server: only where the SDK is the subject."""
    return _stdio(KITCHEN, args, fields)


def counting(*args: str, **fields: Any) -> dict[str, Any]:
    """A settings entry for the stdlib counting server."""
    return _stdio(COUNTING, args, fields)


def envdump(*args: str, **fields: Any) -> dict[str, Any]:
    """A settings entry for ``tests/servers/envdump.py``."""
    return _stdio(ENVDUMP, args, fields)


def text_of(result: Mapping[str, Any], sep: str = "\n") -> str:
    """The text blocks of a tool result (or anything with ``content``), joined by ``sep``."""
    return sep.join(b.get("text", "") for b in result.get("content", []) if b.get("type") == "text")


def document(servers: Mapping[str, Any], **top: Any) -> dict[str, Any]:
    """A settings document: ``servers`` under assets.mcpServers, ``top`` beside assets (``mcp``,
    ``hooks``, ``presets``, unknown keys)."""
    return {"assets": {"mcpServers": dict(servers)}, **top}


def write_document(path: Path, doc: Mapping[str, Any]) -> None:
    """Write ``doc`` into the settings file at ``path`` (in place, mode 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text(json.dumps(doc, indent=2))
    path.chmod(0o600)
