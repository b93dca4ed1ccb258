"""A server's detail page: inspection on a short-lived session, and what it last reported.

Prompts, resources and completion are asked on a session of their own (like Test connection),
never a conversation's, and nothing of it is offered to a model. :class:`Inventory` keeps the
last tools, prompts and resources each server reported (Test connection, inspection or a turn's
discovery), so a frontend can show them without connecting.
"""

from datetime import UTC, datetime
from typing import Any, TypeVar

from meworkd.core.catalog import tool_name
from meworkd.core.viewref import view_ui
from meworkd.mcp import InspectionRequest, SessionPool, ToolInfo, run_inspection
from meworkd.settings import ServerConfig

__all__ = ["SECTIONS", "Inventory", "inspect", "tool_entry"]

T = TypeVar("T")
SECTIONS = ("tools", "prompts", "resources", "resourceTemplates")
CLOSE_WAIT = 5.0  # seconds the closing of an inspection session is waited for


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def tool_entry(server: str, tool: ToolInfo) -> dict[str, Any]:
    """A tool from a turn's discovery, shaped like Test connection's (no nulls)."""
    entry: dict[str, Any] = {"name": tool.name, "inputSchema": tool.input_schema}
    if tool.title is not None:
        entry["title"] = tool.title
    if tool.description is not None:
        entry["description"] = tool.description
    if tool.annotations is not None:
        entry["annotations"] = tool.annotations
    if tool.meta is not None:  # e.g. requiresUserInteraction, as Test connection shows it
        entry["_meta"] = tool.meta
    if tool.needs_tasks:
        entry["execution"] = {"taskSupport": "required"}
    if (ui := view_ui(tool.meta)) is not None:
        entry["ui"] = ui  # an MCP Apps view (or a visibility)
    entry["boundName"] = tool_name(server, tool.name)
    return entry


class Inventory:
    """The last tools, prompts, resources and templates each server reported, with when and how.

    A section is null until reported, and null again when the server said it does not offer
    it. Kept in memory: a restarted daemon knows what the next test, inspection or turn says.
    """

    def __init__(self) -> None:
        self._servers: dict[str, dict[str, Any]] = {}

    def record(self, server: str, source: str, sections: dict[str, Any]) -> None:
        """``sections``: some of :data:`SECTIONS`; ``source``: test, inspection or turn."""
        entry = self._servers.setdefault(server, {})
        at = _now()
        for key, items in sections.items():
            entry[key] = {"items": items, "source": source, "at": at}

    def record_tools(self, server: str, tools: list[ToolInfo]) -> None:
        """A turn's discovery of ``server``'s tools."""
        self.record(server, "turn", {"tools": [tool_entry(server, t) for t in tools]})

    def get(self, server: str) -> dict[str, Any]:
        """``{tools, prompts, resources, resourceTemplates, reported}`` (``reported``: per
        section, ``{source, at}``)."""
        entry = self._servers.get(server, {})
        out: dict[str, Any] = {
            key: entry[key]["items"] if key in entry else None for key in SECTIONS
        }
        out["reported"] = {
            key: {"source": entry[key]["source"], "at": entry[key]["at"]}
            for key in SECTIONS
            if key in entry
        }
        return out

    def forget(self, server: str) -> None:
        self._servers.pop(server, None)

    def rename(self, old: str, new: str) -> None:
        if old in self._servers:
            self._servers[new] = self._servers.pop(old)


async def inspect(
    pool: SessionPool, name: str, config: ServerConfig, request: InspectionRequest[T]
) -> T:
    """Run ``request`` on a fresh session of ``name``'s (not pooled) and close it.

    Raises:
        ServerUnavailable: the server did not start, or the request failed (``data.reason``).
    """
    session = await pool.open(name, None, config)
    try:
        return await run_inspection(session, config, request)
    finally:
        await session.close(CLOSE_WAIT)
