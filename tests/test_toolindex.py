"""The tool search ranking and the offer, in-process (pure functions; issue 26.2).

The daemon-side behaviour (deferral in turns.begin, search_tools, turns.searchTools) is in
tests/test_tool_search.py; these pin the ranking's rules and the offer's arithmetic.
"""

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from meworkd.core.catalog import NAME_PATTERN, Binding, bind_names, tool_name
from meworkd.core.toolindex import SearchDoc, ToolIndex, words
from meworkd.core.toolsearch import (
    SEARCH_TOOL,
    SEARCH_TOOL_NAME,
    Offer,
    definition_sizes,
    offer,
    search_arguments,
)
from meworkd.settings import McpOptions, ServerConfig, Settings, ToolSearchThreshold


def doc(key: str, name: str, description: str = "", server: str = "s", **extra: Any) -> SearchDoc:
    return SearchDoc(
        key, server, name, extra.get("title"), description, extra.get("schema", {"type": "object"})
    )


def keys(index: ToolIndex, query: str, limit: int = 5) -> list[str]:
    return [key for key, _score in index.search(query, limit)]


def test_words_split_every_case_and_fold_forms() -> None:
    assert words("getCurrentTime") == ["current", "tim"]
    assert words("list_directory read-file HTTPServer2") == [
        "list", "directory", "read", "fil", "http", "server", "2"
    ]  # fmt: skip
    # Plurals and -ing/-ed forms meet; stop words go; "access" keeps its s.
    assert words("files") == words("file")
    assert words("creating") == words("create") == words("created")
    assert words("entities") == words("entity")
    assert words("the access of a process") == ["access", "process"]
    assert words("") == []
    assert words("!!! ???") == []


def test_the_name_outweighs_the_description_and_ties_go_by_key() -> None:
    index = ToolIndex(
        [
            doc("b", "archive_file", "Packs a file into a tarball on the disk"),
            doc("a", "pack_thing", "Archive it"),
            doc("c", "echo", "Echo the text"),
        ]
    )
    assert keys(index, "archive") == ["b", "a"]
    twins = ToolIndex([doc("z", "ping", "x"), doc("y", "ping", "x"), doc("x", "ping", "x")])
    assert keys(twins, "ping") == ["x", "y", "z"]  # equal scores: by key, whatever the order
    assert keys(index, "nothing like it") == []
    assert keys(ToolIndex([]), "delete") == []


def test_a_word_finds_its_kin_below_itself() -> None:
    index = ToolIndex(
        [doc("issue", "create_issue", "Open an issue"), doc("ticket", "file_ticket", "A ticket")]
    )
    assert keys(index, "ticket") == ["ticket", "issue"]
    assert keys(index, "issue") == ["issue", "ticket"]
    assert keys(index, "open a folder") == ["issue"]  # "folder" has kin, none of them here


def test_title_server_and_parameters_are_searched() -> None:
    schema = {
        "type": "object",
        "properties": {
            "timezone": {"type": "string", "description": "IANA zone like Europe/Paris"}
        },
    }
    index = ToolIndex(
        [
            doc("time", "now", "", schema=schema),
            doc("titled", "x1", "", title="Weather forecast"),
            doc("served", "x2", "", server="kubernetes"),
            doc("other", "x3", "unrelated words"),
        ]
    )
    assert keys(index, "timezone") == ["time"]
    assert keys(index, "paris") == ["time"]  # a parameter's description
    assert keys(index, "weather") == ["titled"]
    assert keys(index, "kubernetes") == ["served"]


def test_limit_and_accept_cut_the_ranking() -> None:
    index = ToolIndex([doc(f"k{i}", f"read_item_{i}", "read") for i in range(30)])
    assert len(keys(index, "read", limit=7)) == 7
    odd = index.search("read", 5, accept=lambda key: int(key[1:]) % 2 == 1)
    assert len(odd) == 5
    assert all(int(k[1:]) % 2 for k, _ in odd)


@given(st.text(max_size=200))
def test_any_query_is_answered(query: str) -> None:
    index = ToolIndex([doc("a", "read_file", "Read a file"), doc("b", "écrire", "ünïcode")])
    assert len(index.search(query, 5)) <= 2


def test_a_schema_of_any_shape_is_read() -> None:
    odd = [None, {"properties": []}, {"properties": {"p": "not a dict"}}, {"properties": {1: {}}}]
    index = ToolIndex([doc(f"d{i}", "tool", schema=s) for i, s in enumerate(odd)])
    assert len(keys(index, "tool")) == 4


def test_the_search_tool_name_follows_the_scheme_and_collides_with_no_server() -> None:
    assert NAME_PATTERN.fullmatch(SEARCH_TOOL_NAME)
    assert SEARCH_TOOL_NAME.startswith("mcp__meworkd__search-tools__")
    # Every server's part is "<slug>_<digest>": a server named meworkd included.
    for server in ("meworkd", "meworkd__search-tools", "mcp", ""):
        assert tool_name(server, "search_tools") != SEARCH_TOOL_NAME
    bound, collisions = bind_names([("meworkd", "search_tools"), ("meworkd", "search-tools")])
    assert SEARCH_TOOL_NAME not in bound
    assert not collisions


def test_search_arguments_are_checked() -> None:
    assert search_arguments({"query": "read a file"}) == ("read a file", 5)
    assert search_arguments({"query": "read", "limit": 20}) == ("read", 20)
    for bad in ({}, {"query": ""}, {"query": " \n"}, {"query": None}, {"query": ["x"]}):
        assert "needs a query" in str(search_arguments(bad))
    assert "1001 characters" in str(search_arguments({"query": "x" * 1001}))
    for limit in (0, 21, True, 2.5, "3"):
        assert "limit must be" in str(search_arguments({"query": "x", "limit": limit}))


def _turn(count: int, servers: dict[str, ServerConfig], **mcp: Any) -> tuple[Any, ...]:
    tools = [
        {"name": tool_name(s, f"t{i}"), "title": None, "description": "d", "inputSchema": {}}
        for s in servers
        for i in range(count)
    ]
    bindings = {
        tool_name(s, f"t{i}"): Binding(s, f"t{i}", None, False)
        for s in servers
        for i in range(count)
    }
    settings = Settings(servers=servers, mcp=McpOptions(**mcp))
    return tools, definition_sizes(tools), bindings, settings


def test_auto_defers_past_either_limit_and_keeps_what_it_should() -> None:
    plain = ServerConfig(command="x")
    tools, sizes, bindings, settings = _turn(20, {"a": plain, "b": plain})
    assert offer(tools, bindings, settings, list).deferred == frozenset()  # 40: not over
    tools, sizes, bindings, settings = _turn(
        5, {"a": plain}, tool_search_threshold=ToolSearchThreshold(bytes=sum(sizes[:5]) - 1)
    )
    by_bytes = offer(tools, bindings, settings, list)
    assert by_bytes.searching
    assert by_bytes.tools == [SEARCH_TOOL]

    loaded = ServerConfig(command="x", always_load=True)
    tools, sizes, bindings, settings = _turn(30, {"a": plain, "big": loaded})
    recent = [("a", "t3"), ("gone", "t1"), ("a", "t4")]
    chosen = offer(tools, bindings, settings, lambda: recent)
    names = [t["name"] for t in chosen.tools]
    # alwaysLoad's 30 and the recent ones that still exist, in the turn's order; search last.
    assert names == [
        tool_name("a", "t3"),
        tool_name("a", "t4"),
        *[tool_name("big", f"t{i}") for i in range(30)],
        SEARCH_TOOL_NAME,
    ]
    assert len(chosen.deferred) == 28
    # Past the threshold alwaysLoad still holds (the user asked for it); recent ones wait.
    tools, sizes, bindings, settings = _turn(45, {"a": plain, "big": loaded})
    crowded = offer(tools, bindings, settings, lambda: recent)
    assert len(crowded.tools) == 46
    assert tool_name("a", "t3") in crowded.deferred
    # Every tool kept (all alwaysLoad): nothing deferred, so no search_tools either.
    tools, sizes, bindings, settings = _turn(50, {"big": loaded})
    assert offer_all(offer(tools, bindings, settings, list), tools)
    off = Settings(servers=settings.servers, mcp=McpOptions(tool_search="off"))
    assert offer_all(offer(tools, bindings, off, list), tools)


def offer_all(chosen: Offer, tools: list[dict[str, Any]]) -> bool:
    """Whether ``chosen`` offers every tool, defers none and has no search_tools."""
    return chosen.tools == tools and not chosen.deferred and chosen.search_tool is None
