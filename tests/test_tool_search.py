"""Tool search (issue 26.2): deferred tools, ``search_tools`` and ``turns.searchTools``.

The real daemon on its real socket, with real processes serving real tool definitions: the
stdlib fake server with ``--tools-file`` serves a server's ``tools/list`` as recorded in the
bench corpus (bench/toolsearch/corpus, from the npm and PyPI packages named in each file).
"""

import json
from pathlib import Path
from typing import Any

import pytest

from meworkd.core.catalog import tool_name
from meworkd.core.toolsearch import SEARCH_TOOL_NAME
from tests.turn_helpers import (
    Harness,
    document,
    fake,
    mw_fixture,  # noqa: F401  (the mw fixture)
    rpc_error,
    text_of,
)

pytestmark = pytest.mark.anyio

CORPUS = Path(__file__).resolve().parent.parent / "bench" / "toolsearch" / "corpus"
# Twelve servers' real tools, five trivial ones each besides: 407 tools in one turn.
TWELVE = (
    "word",
    "powerpoint",
    "ea-playwright",
    "chrome-devtools",
    "mongodb",
    "github",
    "desktop-commander",
    "playwright",
    "notion",
    "kubernetes",
    "hubspot",
    "arxiv",
)


def real(server: str, **fields: Any) -> dict[str, Any]:
    """A fake server serving ``server``'s recorded tools, and t0..t4."""
    return fake("--tools-file", str(CORPUS / f"{server}.json"), "--tools", "5", **fields)


def corpus_tools(server: str) -> list[str]:
    return [t["name"] for t in json.loads((CORPUS / f"{server}.json").read_text())["tools"]]


def offered(turn: dict[str, Any]) -> set[str]:
    return {t["name"] for t in turn["tools"]}


async def search(mw: Harness, turn: dict[str, Any], query: str, **extra: Any) -> dict[str, Any]:
    return await mw.tool(turn, SEARCH_TOOL_NAME, {"query": query, **extra})


async def test_four_hundred_tools_are_trimmed_to_the_threshold(mw: Harness) -> None:
    await mw.start(document({s: real(s) for s in TWELVE}))
    turn = await mw.begin(await mw.conversation(list(TWELVE)))
    every = {t["name"] for t in turn["allTools"]}
    assert len(every) == len(turn["bindings"]) == sum(len(corpus_tools(s)) + 5 for s in TWELVE)
    assert len(every) >= 400
    # auto, over 40 tools: nothing used yet and no alwaysLoad, so search_tools alone.
    assert [t["name"] for t in turn["tools"]] == [SEARCH_TOOL_NAME]
    assert turn["searchTool"] == SEARCH_TOOL_NAME
    assert turn["deferred"] == len(every)
    assert all(t["deferLoading"] for t in turn["allTools"])
    assert SEARCH_TOOL_NAME not in turn["bindings"]
    assert f"call {SEARCH_TOOL_NAME} with a few words" in turn["systemPrompt"]
    for cost in turn["costs"]:
        assert cost["offered"] == 0
        assert cost["deferred"] == cost["tools"] > 0
        assert cost["bytes"] == cost["tokensEstimate"] == 0 < cost["deferredBytes"]

    # A deferred tool is bound and callable as any other.
    create_issue = tool_name("github", "create_issue")
    reply = await mw.tool(turn, create_issue, {"owner": "o", "repo": "r", "title": "Bug"})
    assert not reply["isError"]
    assert json.loads(text_of(reply)) == {"owner": "o", "repo": "r", "title": "Bug"}

    # The model's search_tools finds it by what it does, and says it as text and structured.
    found = await search(mw, turn, "open a new issue in my GitHub repo about the login bug")
    assert not found["isError"]
    names = [t["name"] for t in found["structuredContent"]["tools"]]
    assert names[0] == create_issue
    assert len(names) == 5
    assert json.loads(text_of(found)) == found["structuredContent"]
    schema = found["structuredContent"]["tools"][0]
    assert set(schema) == {"name", "title", "description", "inputSchema"}
    assert schema["inputSchema"]["required"] == ["owner", "repo", "title"]

    # turns.searchTools gives a frontend the same tools, with their bindings.
    same = await mw.call(
        "turns.searchTools", {"turnId": turn["turnId"], "query": "github issue", "limit": 3}
    )
    model = await search(mw, turn, "github issue", limit=3)
    assert [t["name"] for t in same["tools"]] == [
        t["name"] for t in model["structuredContent"]["tools"]
    ]
    assert same["tools"][0]["server"] == "github"
    assert same["tools"][0]["deferLoading"] is True


async def test_the_threshold_is_a_setting_and_always_load_and_recent_tools_are_kept(
    mw: Harness,
) -> None:
    servers = {s: real(s) for s in TWELVE}
    servers["arxiv"] = real("arxiv", alwaysLoad=True)
    threshold = {"tools": 30, "bytes": 65536}
    await mw.start(document(servers, mcp={"tool_search_threshold": threshold}))
    conversation = await mw.conversation(list(TWELVE))
    first = await mw.begin(conversation)
    arxiv = {tool_name("arxiv", t) for t in [*corpus_tools("arxiv"), "t0", "t1", "t2", "t3"]}
    arxiv.add(tool_name("arxiv", "t4"))
    assert offered(first) == arxiv | {SEARCH_TOOL_NAME}  # 24 + 1: within 30
    flags = {t["name"]: t["deferLoading"] for t in first["allTools"]}
    assert all(flags[n] is False for n in arxiv)
    assert sum(flags.values()) == first["deferred"] == len(flags) - len(arxiv)

    # Tools the conversation used (allowed calls) are offered at its next turns.
    used = [tool_name("mongodb", "find"), tool_name("kubernetes", "kubectl_logs")]
    for name in used:
        assert not (await mw.tool(first, name, {}))["isError"]
    second = await mw.begin(conversation)
    assert offered(second) == arxiv | set(used) | {SEARCH_TOOL_NAME}
    assert second["deferred"] == first["deferred"] - 2
    by_server = {c["server"]: c for c in second["costs"]}
    assert by_server["mongodb"]["offered"] == 1
    assert by_server["mongodb"]["deferred"] == by_server["mongodb"]["tools"] - 1
    # ... but never past the threshold: 24 + 1 + 5 recent fill it, the 6th waits.
    more = [tool_name("github", t) for t in ("create_issue", "get_issue", "list_issues")]
    more += [tool_name("notion", "API-post-search"), tool_name("word", "add_heading")]
    for name in more:
        assert not (await mw.tool(second, name, {}))["isError"]
    third = await mw.begin(conversation)
    assert len(third["tools"]) == 30
    assert set(more) <= offered(third)  # the most recent first
    assert len(set(used) & offered(third)) == 0

    # A subagent sees what its parent was offered.
    child = await mw.begin(conversation, parentTurnId=third["turnId"])
    assert child["tools"] == third["tools"]
    assert child["deferred"] == third["deferred"]


async def test_bad_queries_get_clear_answers(mw: Harness) -> None:
    await mw.start(document({s: real(s) for s in TWELVE[:4]}, mcp={"tool_search": "on"}))
    turn = await mw.begin(await mw.conversation(list(TWELVE[:4])))
    for arguments, words in (
        ({"query": ""}, "needs a query"),
        ({"query": "   "}, "needs a query"),
        ({}, "needs a query"),
        ({"query": 42}, "needs a query"),
        ({"query": "x" * 10240}, "10240 characters"),
        ({"query": "click", "limit": 0}, "limit must be an integer from 1 to 20"),
        ({"query": "click", "limit": "5"}, "limit must be an integer"),
    ):
        reply = await mw.tool(turn, SEARCH_TOOL_NAME, arguments)
        assert reply["isError"] is True, arguments
        assert words in text_of(reply)
    for query, limit in (("", None), ("x" * 10240, None), ("click", 21)):
        error = await rpc_error(
            mw.call("turns.searchTools", {"turnId": turn["turnId"], "query": query, "limit": limit})
        )
        assert error.kind == "invalid_params"
    # Words that match nothing are no error: an empty list, and a sentence saying so.
    nothing = await search(mw, turn, "zzyzx qqq")
    assert not nothing["isError"]
    assert nothing["structuredContent"]["tools"] == []
    assert "No tool matches" in text_of(nothing)
    ended = await rpc_error(mw.call("turns.searchTools", {"turnId": "nope", "query": "x"}))
    assert ended.kind == "turn_not_found"


async def test_search_never_returns_disabled_or_unselected_tools(mw: Harness) -> None:
    servers = {
        "github": real("github", disabledTools=["create_*"]),
        "gitlab": real("gitlab"),
        "filesystem": real("filesystem"),
    }
    await mw.start(document(servers, mcp={"tool_search": "on"}))
    conversation = await mw.conversation(["github", "filesystem"])  # not gitlab
    turn = await mw.begin(conversation)

    async def servers_found(query: str) -> list[tuple[str, str]]:
        reply = await mw.call("turns.searchTools", {"turnId": turn["turnId"], "query": query})
        return [(t["server"], t["tool"]) for t in reply["tools"]]

    found = await servers_found("create a new issue, branch, repository or merge request")
    assert found
    assert all(s == "github" or s == "filesystem" for s, _ in found)
    assert not any(t.startswith("create_") for s, t in found if s == "github")
    # Switched off after the turn began: not found any more (the policy of now).
    assert ("github", "search_code") in await servers_found("search code")
    await mw.call(
        "servers.setToolEnabled", {"name": "github", "tool": "search_code", "enabled": False}
    )
    assert ("github", "search_code") not in await servers_found("search code")
    # A server taken out of the conversation: none of its tools.
    await mw.call("conversations.update", {"id": conversation, "mcpServers": ["filesystem"]})
    assert {s for s, _ in await servers_found("search code pull request issue files")} == {
        "filesystem"
    }
    model = await search(mw, turn, "pull request")
    assert all(
        t["name"].startswith("mcp__filesystem_") for t in model["structuredContent"]["tools"]
    )


async def test_off_offers_every_tool_and_on_defers_even_a_few(mw: Harness) -> None:
    servers = {s: real(s) for s in TWELVE}
    await mw.start(document(servers, mcp={"tool_search": "off"}))
    conversation = await mw.conversation(list(TWELVE))
    turn = await mw.begin(conversation)
    assert len(turn["tools"]) == len(turn["allTools"]) >= 400
    assert turn["deferred"] == 0
    assert turn["searchTool"] is None
    assert not any(t["deferLoading"] for t in turn["allTools"])
    assert SEARCH_TOOL_NAME not in turn["systemPrompt"]
    # No search_tools for the model this turn (it was not offered) ...
    reply = await search(mw, turn, "github issue")
    assert reply["isError"]
    assert "Unknown tool" in text_of(reply)
    # ... while a frontend may still search the turn's tools.
    found = await mw.call("turns.searchTools", {"turnId": turn["turnId"], "query": "github issue"})
    assert found["tools"][0]["server"] == "github"
    assert found["tools"][0]["deferLoading"] is False

    await mw.call("settings.setMcpOptions", {"tool_search": "on"})
    few = await mw.conversation(["arxiv"])
    small = await mw.begin(few)
    assert [t["name"] for t in small["tools"]] == [SEARCH_TOOL_NAME]
    assert small["deferred"] == len(small["allTools"]) == len(corpus_tools("arxiv")) + 5
    # auto under the threshold offers them all.
    await mw.call("settings.setMcpOptions", {"tool_search": "auto"})
    assert (await mw.begin(few))["deferred"] == 0


async def test_tool_search_settings_are_checked(mw: Harness) -> None:
    await mw.start(document({}))
    for options, kind, words in (
        ({"tool_search": "maybe"}, "invalid_params", "tool_search"),
        ({"tool_search_threshold": {"tools": 0}}, "invalid_settings", "expected an integer > 0"),
        ({"tool_search_threshold": {"bytes": -1}}, "invalid_settings", "threshold.bytes"),
        ({"tool_search_threshold": {"tool": 3}}, "invalid_settings", "unknown field tool"),
    ):
        error = await rpc_error(mw.call("settings.setMcpOptions", options))
        assert error.kind == kind, options
        assert words in str(error.message) + json.dumps(error.data), options
    entry = fake(alwaysLoad="yes")
    error = await rpc_error(mw.call("servers.add", {"name": "s", "server": entry}))
    assert error.kind == "invalid_settings"
    assert "s.alwaysLoad: expected bool, got str" in error.message
    added = await mw.call("servers.add", {"name": "s", "server": fake(alwaysLoad=True)})
    assert added["alwaysLoad"] is True
    assert mw.read_settings()["assets"]["mcpServers"]["s"]["alwaysLoad"] is True
    mcp = (await mw.call("settings.setMcpOptions", {"tool_search_threshold": {"tools": 12}}))["mcp"]
    assert mcp["tool_search"] == "auto"
    assert mcp["tool_search_threshold"] == {"tools": 12, "bytes": 32768}
