"""What meworkd.mcp hands upward: plain data about servers and their tools, no SDK objects."""

from dataclasses import dataclass
from typing import Any

__all__ = ["PeerInfo", "ServerReport", "ToolInfo"]


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """One tool a server lists, as a turn needs it."""

    name: str
    title: str | None  # the tool's title, else its annotations' title
    description: str | None
    input_schema: dict[str, Any]
    annotations: dict[str, Any] | None  # as on the wire (camelCase, no nulls)
    meta: object  # the tool's ``_meta``, as sent (None when absent)
    # execution.taskSupport is "required" (2025-11-25): only a task-augmented call works, which
    # meworkd makes on stdio (meworkd.mcp.tasks); over HTTP the tool is not offered.
    needs_tasks: bool = False


@dataclass(frozen=True, slots=True)
class PeerInfo:
    """The server's own name and version, from the handshake."""

    name: str
    version: str


@dataclass(frozen=True, slots=True)
class ServerReport:
    """Everything a server offers, for Test connection; lists as on the wire, no nulls."""

    protocol_version: str | None
    server_info: PeerInfo | None
    capabilities: dict[str, Any]
    instructions: str | None
    tools: list[dict[str, Any]]
    # None: not offered (no capability, or "method not found"); see ``offered``.
    prompts: list[dict[str, Any]] | None
    resources: list[dict[str, Any]] | None
    resource_templates: list[dict[str, Any]] | None
    offered: dict[str, bool]  # prompts, resources, resourceTemplates
    section_errors: dict[str, str]  # why an offered section could not be listed
