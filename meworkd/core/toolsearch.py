"""Tool search for a turn: which tools are offered and which deferred, and meworkd's own
``search_tools`` tool (its definition, its arguments checked, its answer).

With ``mcp.tool_search`` ``"on"``, or ``"auto"`` once a turn's tools exceed
``mcp.tool_search_threshold``, the model is offered the tools of servers marked
``alwaysLoad``, the tools the conversation used in its last turns (while they fit the
threshold) and ``search_tools``; every other tool stays bound and callable, found by a search.
Synchronous: the offer and the answers are pure functions; :class:`ToolSearch`, which
:class:`meworkd.core.turns.Turns` holds, adds what the conversation used lately and checks
each found tool against the settings and selection of now.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from meworkd.base.errors import InvalidParams
from meworkd.core.catalog import Binding, Catalog, digest, unbound
from meworkd.core.replies import error_result
from meworkd.core.servercost import costs
from meworkd.core.state import StateDB
from meworkd.core.toolindex import SearchDoc, ToolIndex
from meworkd.settings import Settings
from meworkd.settings.store import SettingsStore

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "MAX_QUERY_CHARS",
    "RECENT_TURNS",
    "SEARCH_TOOL_NAME",
    "Offer",
    "ToolSearch",
    "TurnSearch",
    "definition_sizes",
    "found_fields",
    "no_offer",
    "offer",
    "offer_fields",
    "search_arguments",
    "search_result",
]

# Bound like a server's tool, but its server part has no ``_<digest>``, which every server's
# has: no server (whatever its name) can bind the same name.
SEARCH_TOOL_NAME = f"mcp__meworkd__search-tools__{digest('search_tools')}"
RECENT_TURNS = 3  # the conversation's last turns whose tools stay offered
DEFAULT_LIMIT = 5
MAX_LIMIT = 20
MAX_QUERY_CHARS = 1000  # a query is a few words; a page of text is a mistake, said clearly

SEARCH_TOOL: dict[str, Any] = {
    "name": SEARCH_TOOL_NAME,
    "title": "Search tools",
    "description": (
        "Find more tools. This conversation's MCP servers offer more tools than are listed; "
        "describe what you want to do in a few words and this returns the best matching tools "
        "with their names and input schemas. Call a tool it returns by its name."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "What you want to do, in a few words (e.g. 'create a GitHub issue')",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "description": f"How many tools to return (default {DEFAULT_LIMIT})",
            },
        },
        "required": ["query"],
    },
}


@dataclass(frozen=True, slots=True)
class Offer:
    """A turn's tools: every bound one, searchable (``search``), the bytes of each definition
    (``sizes``), what the model is offered (``tools``, with ``search_tools`` when searching)
    and the names left out of it (``deferred``)."""

    search: "TurnSearch"
    sizes: Sequence[int]
    tools: list[dict[str, Any]]
    deferred: frozenset[str] = frozenset()
    searching: bool = False

    @property
    def search_tool(self) -> str | None:
        """The bound name of ``search_tools`` when the turn offers it."""
        return SEARCH_TOOL_NAME if self.searching else None


def definition_sizes(tools: Sequence[dict[str, Any]]) -> list[int]:
    """The bytes of each tool's definition as sent (JSON)."""
    return [len(msgspec.json.encode(tool)) for tool in tools]


def offer(
    tools: list[dict[str, Any]],
    bindings: dict[str, Binding],
    settings: Settings,
    recent: Callable[[], Sequence[tuple[str, str]]],
) -> Offer:
    """Which of a turn's ``tools`` the model is offered under ``settings.mcp.tool_search``.

    ``recent()`` (asked only when searching) names the (server, tool) pairs the conversation
    used lately, most recent first. ``alwaysLoad`` servers' tools are offered even past the
    threshold (the user asked for them); recent tools only while the offer stays within it.
    """
    search, sizes = TurnSearch(tools, bindings), definition_sizes(tools)
    options = settings.mcp
    threshold = options.tool_search_threshold
    over = len(tools) > threshold.tools or sum(sizes) > threshold.bytes
    if options.tool_search == "off" or (options.tool_search == "auto" and not over):
        return Offer(search, sizes, tools)
    keep: set[str] = set()
    room_tools = threshold.tools - 1  # search_tools takes one place
    room_bytes = threshold.bytes - len(msgspec.json.encode(SEARCH_TOOL))
    size_of = dict(zip((t["name"] for t in tools), sizes, strict=True))
    for name, binding in bindings.items():
        config = settings.servers.get(binding.server)
        if name in size_of and config is not None and config.always_load:
            keep.add(name)
            room_tools -= 1
            room_bytes -= size_of[name]
    by_pair = {(b.server, b.tool): name for name, b in bindings.items()}
    for pair in recent():
        used = by_pair.get(pair)
        if used is None or used in keep or used not in size_of:
            continue
        if room_tools < 1 or size_of[used] > room_bytes:
            break  # the most recent first: an older tool does not take a newer one's place
        keep.add(used)
        room_tools -= 1
        room_bytes -= size_of[used]
    offered = [t for t in tools if t["name"] in keep]
    deferred = frozenset(t["name"] for t in tools if t["name"] not in keep)
    if not deferred:
        return Offer(search, sizes, tools)  # every tool kept (alwaysLoad): nothing to search for
    return Offer(search, sizes, [*offered, SEARCH_TOOL], deferred, searching=True)


def search_arguments(arguments: Mapping[str, Any]) -> tuple[str, int] | str:
    """``search_tools``'s (query, limit), or why it cannot run with these (for the model)."""
    query, limit = arguments.get("query"), arguments.get("limit")
    if not isinstance(query, str) or not query.strip():
        return "search_tools needs a query: a few words saying what you want to do."
    if len(query) > MAX_QUERY_CHARS:
        return (
            f"The query is {len(query)} characters long; search_tools takes at most "
            f"{MAX_QUERY_CHARS}. Say in a few words what you want to do."
        )
    if limit is None:
        return query, DEFAULT_LIMIT
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        return f"limit must be an integer from 1 to {MAX_LIMIT}."
    return query, limit


def offer_fields(chosen: Offer) -> dict[str, Any]:
    """The part of ``turns.begin``'s reply that tool search shapes."""
    tools, deferred = chosen.search.tools, chosen.deferred
    return {
        "tools": chosen.tools,
        "allTools": [{**tool, "deferLoading": tool["name"] in deferred} for tool in tools],
        "deferred": len(deferred),
        "searchTool": chosen.search_tool,
        "costs": costs(tools, chosen.search.bindings, deferred, chosen.sizes),
    }


def found_fields(
    query: str, found: Sequence[tuple[dict[str, Any], Binding]], chosen: Offer
) -> dict[str, Any]:
    """``turns.searchTools``'s reply: what the model would get, with each tool's binding."""
    return {
        "query": query,
        "tools": [
            {
                **tool,
                "server": binding.server,
                "tool": binding.tool,
                "deferLoading": tool["name"] in chosen.deferred,
            }
            for tool, binding in found
        ],
    }


@dataclass(slots=True)
class TurnSearch:
    """A turn's tools as search reads them; the index is built at the first search, once."""

    tools: list[dict[str, Any]]
    bindings: dict[str, Binding]
    _index: ToolIndex | None = field(default=None, init=False)
    _by_name: dict[str, dict[str, Any]] = field(default_factory=dict, init=False)

    def find(
        self, query: str, limit: int, accept: Callable[[Binding], bool]
    ) -> list[tuple[dict[str, Any], Binding]]:
        """The best ``limit`` tools for ``query`` that ``accept`` lets through, best first."""
        if self._index is None:
            self._by_name = {tool["name"]: tool for tool in self.tools}
            self._index = ToolIndex(
                [
                    SearchDoc(
                        tool["name"],
                        self.bindings[tool["name"]].server,
                        self.bindings[tool["name"]].tool,
                        tool.get("title"),
                        tool.get("description"),
                        tool.get("inputSchema"),
                    )
                    for tool in self.tools
                ]
            )
        matches = self._index.search(query, limit, lambda key: accept(self.bindings[key]))
        return [(self._by_name[key], self.bindings[key]) for key, _score in matches]


def search_result(query: str, found: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``search_tools``'s answer: the tools as text (JSON, for the model) and structured."""
    tools = [
        {
            "name": tool["name"],
            "title": tool.get("title"),
            "description": tool.get("description"),
            "inputSchema": tool.get("inputSchema"),
        }
        for tool in found
    ]
    structured = {"query": query, "tools": tools}
    if not tools:
        text = f"No tool matches {query!r}. Try other words, or fewer."
    else:
        text = msgspec.json.encode(structured).decode()
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
        "isError": False,
    }


class ToolSearch:
    """Tool search for :class:`meworkd.core.turns.Turns`: a turn's offer (with what the
    conversation used lately), and its searches under the settings and selection of now."""

    def __init__(self, store: SettingsStore, db: StateDB) -> None:
        self._store = store
        self._db = db

    def plan(self, conversation_id: str, catalog: Catalog, settings: Settings) -> Offer:
        recent = lambda: self._db.recent_tools(conversation_id, RECENT_TURNS)  # noqa: E731
        return offer(catalog.tools, catalog.bindings, settings, recent)

    def for_model(
        self, chosen: Offer, conversation_id: str, arguments: Mapping[str, Any]
    ) -> dict[str, Any]:
        """``search_tools``'s result: meworkd's own read-only tool, which reaches no server, so
        it is not put to approvals nor audited (the tools it finds are, when called)."""
        checked = search_arguments(arguments)
        if isinstance(checked, str):
            return error_result(checked)
        found = self._find(chosen, conversation_id, *checked)
        return search_result(checked[0], [tool for tool, _binding in found])

    def for_frontend(
        self, chosen: Offer, conversation_id: str, query: str, limit: int | None
    ) -> dict[str, Any]:
        """``turns.searchTools``'s result; a bad query or limit is ``InvalidParams``."""
        checked = search_arguments({"query": query, "limit": limit})
        if isinstance(checked, str):
            raise InvalidParams(checked)
        return found_fields(query, self._find(chosen, conversation_id, *checked), chosen)

    def _find(
        self, chosen: Offer, conversation_id: str, query: str, limit: int
    ) -> list[tuple[dict[str, Any], Binding]]:
        # The policy of now: a tool switched off or a server deselected since is not found.
        settings = self._store.settings
        selection = self._db.get_conversation(conversation_id).mcp_servers
        return chosen.search.find(query, limit, lambda b: unbound(b, settings, selection) is None)


def no_offer() -> Offer:
    """The offer of a turn that offers the model nothing (a view's calls run in one)."""
    return Offer(TurnSearch([], {}), (), [])
