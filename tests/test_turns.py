"""Turns (issue 4.2-4.6): discovery, naming, call translation, limits, time, notifications.

Every test runs the real daemon in-process with real MCP server processes (the kitchen fixture
server, the stdlib counting server, and, marked ``peers``, @modelcontextprotocol/server-everything).
"""

import json
import os
from typing import Any

import anyio
import msgspec
import pytest

from meworkd.core.catalog import NAME_PATTERN, tool_name
from tests.common import fake
from tests.turn_helpers import (
    KITCHEN_TOOLS,
    PEERS,
    Harness,
    bound,
    counting,
    document,
    mw_fixture,  # noqa: F401  (the mw fixture)
    rpc_error,
    start_call,
    text_of,
    wait_event,
)

pytestmark = pytest.mark.anyio

NOT_A_COMMAND = "/nonexistent/mework-no-such-command"


# --- discovery ---------------------------------------------------------------------------------


async def test_discovery_binds_selected_enabled_servers(mw: Harness) -> None:
    await mw.start(
        document(
            {
                "a": fake("--tools", "30", "--page-size", "7", description="Kitchen A"),
                "b": fake(disabledTools=["echo", "add"], description="Kitchen B"),
                "down": {"command": NOT_A_COMMAND, "description": "Never starts"},
                "off": fake(enabled=False, description="Switched off"),
                "unselected": fake(description="Not selected"),
            },
            mcp={"tool_search": "off"},  # every tool offered (tests/test_tool_search.py: on)
        )
    )
    conv = await mw.conversation(["a", "b", "down", "off"])
    turn = await mw.begin(conv)
    assert set(turn) == {
        "turnId",
        "tools",
        "allTools",
        "deferred",
        "searchTool",
        "bindings",
        "systemPrompt",
        "failures",
        "costs",
    }
    assert turn["deferred"] == 0
    assert turn["searchTool"] is None
    assert turn["allTools"] == [{**t, "deferLoading": False} for t in turn["tools"]]

    # What each server costs the turn: its tools and the bytes of their definitions as sent.
    by_server = {c["server"]: c for c in turn["costs"]}
    assert set(by_server) == {"a", "b"}
    assert turn["costs"][0]["server"] == "a"  # the costliest first
    for server, cost in by_server.items():
        sent = [t for t in turn["tools"] if turn["bindings"][t["name"]]["server"] == server]
        assert cost["tools"] == cost["offered"] == len(sent)
        assert cost["deferred"] == cost["deferredBytes"] == 0
        assert cost["bytes"] == sum(len(json.dumps(t, separators=(",", ":"))) for t in sent)
        assert cost["tokensEstimate"] == cost["bytes"] // 4

    # Every page of a's tools/list (47 tools in pages of 7); b without its disabledTools.
    assert set(bound(turn, "a")) == KITCHEN_TOOLS | {f"t{i}" for i in range(30)}
    assert set(bound(turn, "b")) == KITCHEN_TOOLS - {"echo", "add"}
    assert {b["server"] for b in turn["bindings"].values()} == {"a", "b"}

    # A server that cannot start is named in failures and the others still answered.
    (failure,) = turn["failures"]
    assert failure["server"] == "down"
    assert "command not found" in failure["reason"]
    assert NOT_A_COMMAND in failure["reason"]
    assert sorted(s.server for s in mw.d.pool.sessions) == ["a", "b"]

    # The model sees the tool's own title, description and schema under the bound name.
    tools = {t["name"]: t for t in turn["tools"]}
    assert set(tools) == set(turn["bindings"])
    assert all(set(t) == {"name", "title", "description", "inputSchema"} for t in tools.values())
    assert all(NAME_PATTERN.fullmatch(n) for n in tools)
    echo = tools[tool_name("a", "echo")]
    assert echo["description"] == "Echo the text back"
    assert echo["inputSchema"] == {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    }
    binding = turn["bindings"][tool_name("a", "echo")]
    assert binding == {"server": "a", "tool": "echo", "annotations": None}

    prompt = turn["systemPrompt"]
    assert "- a: Kitchen A" in prompt
    assert "- b: Kitchen B" in prompt
    assert "down" in prompt
    assert "- off" not in prompt  # selected but disabled: it does not take part
    assert "Switched off" not in prompt
    assert "- unselected" not in prompt
    assert "Not selected" not in prompt

    # The failed server does not stop the turn: a's tools work.
    result = await mw.tool(turn, tool_name("a", "t29"), {"n": 1})
    assert text_of(result) == '{"n": 1}'


async def test_discovery_is_concurrent(mw: Harness) -> None:
    # Each counting server answers initialize only once the other one has opened the FIFO, so a
    # sequential discovery would leave the first waiting until its timeout and report it failed.
    fifo = mw.root / "rendezvous"
    os.mkfifo(fifo)
    rendezvous = ("--rendezvous", str(fifo), "--role")
    await mw.start(
        document(
            {
                "r": counting(*rendezvous, "r", "--tools", "reader", timeoutSeconds=5),
                "w": counting(*rendezvous, "w", "--tools", "writer", timeoutSeconds=5),
                "hung": fake("--hang-initialize", timeoutSeconds=1),
            }
        )
    )
    conv = await mw.conversation(["r", "hung", "w"])
    turn = await mw.begin(conv)
    # One after the other, the first would time out (5 s) and be listed here; a server that
    # never answers initialize is named with its timeout while the others answer.
    assert turn["failures"] == [
        {
            "server": "hung",
            "kind": "timeout",
            "error": "timed out after 1 s",
            "reason": "timed out after 1 s",  # the deprecated alias of error
        }
    ]
    assert set(bound(turn, "r")) == {"stats", "echo", "reader"}
    assert set(bound(turn, "w")) == {"stats", "echo", "writer"}


async def test_names_are_stable_across_turns_reloads_and_restarts(mw: Harness) -> None:
    await mw.start(document({"Kitchen Sink!": fake(description="before")}))
    conv = await mw.conversation(["Kitchen Sink!"])
    first = bound(await mw.begin(conv), "Kitchen Sink!")
    assert first["echo"].startswith("mcp__kitchen-sink_")
    assert bound(await mw.begin(conv), "Kitchen Sink!") == first
    pid = mw.pid(conv, "Kitchen Sink!")

    def describe(doc: dict[str, Any]) -> None:
        doc["assets"]["mcpServers"]["Kitchen Sink!"]["description"] = "after"

    reloaded = await mw.edit_settings(describe)
    assert reloaded["policyChanged"] == ["Kitchen Sink!"]
    turn = await mw.begin(conv)
    assert bound(turn, "Kitchen Sink!") == first
    assert "- Kitchen Sink!: after" in turn["systemPrompt"]
    assert mw.pid(conv, "Kitchen Sink!") == pid  # a description is policy: no reconnect

    await mw.restart()
    assert bound(await mw.begin(conv), "Kitchen Sink!") == first


async def test_parent_turn_inherits_bindings_without_listing_again(mw: Harness) -> None:
    await mw.start(document({"c": counting(description="counts")}))
    logs = await mw.connect(["server.log"])
    conv = await mw.conversation(["c"])
    other = await mw.conversation([])
    parent = await mw.begin(conv)
    await wait_event(logs, "server.log", lambda d: d["line"] == "counting: tools/list #1")

    child = await mw.begin(conv, parentTurnId=parent["turnId"])
    assert child["turnId"] != parent["turnId"]
    assert child["bindings"] == parent["bindings"]
    assert child["tools"] == parent["tools"]
    # The tool's own title, and its annotations in the binding.
    echo = bound(parent, "c")["echo"]
    (entry,) = [t for t in parent["tools"] if t["name"] == echo]
    assert entry["title"] == "Echo (counting)"
    assert parent["bindings"][echo] == {
        "server": "c",
        "tool": "echo",
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    }
    stats = bound(child, "c")["stats"]
    assert text_of(await mw.tool(child, stats)) == "tools/list calls: 1"
    lines = (await mw.call("servers.logs", {"name": "c"}))["lines"]
    assert [x["line"] for x in lines if "tools/list" in x["line"]] == ["counting: tools/list #1"]

    # A turn without a parent discovers again; a parent of another conversation is refused.
    fresh = await mw.begin(conv)
    assert text_of(await mw.tool(fresh, stats)) == "tools/list calls: 2"
    err = await rpc_error(mw.begin(other, parentTurnId=parent["turnId"]))
    assert err.kind == "turn_not_found"
    err = await rpc_error(mw.begin(conv, parentTurnId="no-such-turn"))
    assert err.kind == "turn_not_found"


# --- calls -------------------------------------------------------------------------------------


def _reply_size(text: str) -> int:
    """How large meworkd measures a one-text-block reply (its JSON, compact)."""
    reply = {"content": [{"type": "text", "text": text}], "isError": False}
    return len(msgspec.json.encode(reply))


async def test_call_translation_and_errors(mw: Harness) -> None:
    await mw.start(document({"k": fake()}))
    conv = await mw.conversation(["k"])
    turn = await mw.begin(conv)
    n = bound(turn, "k")

    # The original name is sent; every _meta (on the result and on the block) is removed.
    assert await mw.tool(turn, n["echo"], {"text": "hi"}) == {
        "content": [{"type": "text", "text": "hi"}],
        "isError": False,
    }
    assert await mw.tool(turn, n["add"], {"a": 2, "b": 3}) == {
        "content": [{"type": "text", "text": '{"total": 5}'}],
        "structuredContent": {"total": 5},
        "isError": False,
    }
    # A result that fails its own outputSchema is still the server's reply.
    bad = await mw.tool(turn, n["bad_output"])
    assert bad["structuredContent"] == {"x": "not-an-int"}
    assert bad["isError"] is False
    failed = await mw.tool(turn, n["error"])
    assert failed == {
        "content": [{"type": "text", "text": "kitchen: this tool always fails"}],
        "isError": True,
    }
    # A JSON-RPC error from the server becomes an isError result the model can read.
    rpc = await mw.tool(turn, n["rpc_error"])
    assert rpc["isError"] is True
    assert "kitchen: rpc_error requested" in text_of(rpc)
    assert "-32099" in text_of(rpc)

    # An unknown name is a tool result naming the problem, not an RPC error.
    unknown = await mw.tool(turn, "mcp__nope_000000__x__000000")
    assert unknown["isError"] is True
    assert "mcp__nope_000000__x__000000" in text_of(unknown)
    assert "Unknown tool" in text_of(unknown)

    # Arguments must be an object.
    for arguments in ([1, 2], "text", 3):
        params = {"turnId": turn["turnId"], "name": n["echo"], "arguments": arguments}
        err = await rpc_error(mw.call("turns.callTool", params))
        assert err.code == -32602

    # Replies over mcp.max_reply_bytes are refused with their size and the limit; at the limit
    # they pass.
    limit = 65536
    overhead = _reply_size("")
    at_limit = await mw.tool(turn, n["big"], {"bytes": limit - overhead})
    assert at_limit["isError"] is False
    assert len(text_of(at_limit)) == limit - overhead
    over = await mw.tool(turn, n["big"], {"bytes": limit - overhead + 1})
    assert over["isError"] is True
    assert f"{limit + 1} bytes" in text_of(over)
    assert f"{limit} bytes" in text_of(over)
    big = await mw.tool(turn, n["big"], {"bytes": 70000})
    assert big["isError"] is True
    assert len(big["content"]) == 1
    assert f"{_reply_size('x' * 70000)} bytes" in text_of(big)
    assert "x" * 100 not in text_of(big)  # refused, not truncated

    # A server that dies mid-call: an isError result, and the next call reconnects.
    pid = mw.pid(conv, "k")
    died = await mw.tool(turn, n["die"])
    assert died["isError"] is True
    assert "closed the connection" in text_of(died)
    again = await mw.tool(turn, n["echo"], {"text": "back"})
    assert text_of(again) == "back"
    assert mw.pid(conv, "k") != pid

    # An ended turn is gone: calling it is an error of the request itself.
    assert await mw.call("turns.end", {"turnId": turn["turnId"]}) == {"ended": turn["turnId"]}
    err = await rpc_error(mw.tool(turn, n["echo"], {"text": "late"}))
    assert err.kind == "turn_not_found"
    assert (await rpc_error(mw.call("turns.end", {"turnId": turn["turnId"]}))).kind == (
        "turn_not_found"
    )
    err = await rpc_error(mw.call("turns.cancel", {"turnId": "never"}))
    assert err.kind == "turn_not_found"
    # Ending a turn keeps the session pooled.
    assert mw.sessions(conv, "k")


async def test_max_reply_bytes_follows_the_setting(mw: Harness) -> None:
    await mw.start(document({"k": fake()}))
    conv = await mw.conversation(["k"])
    turn = await mw.begin(conv)
    big = bound(turn, "k")["big"]
    await mw.call("settings.setMcpOptions", {"max_reply_bytes": 1000})
    assert (await mw.tool(turn, big, {"bytes": 1000 - _reply_size("")}))["isError"] is False
    refused = await mw.tool(turn, big, {"bytes": 1000})
    assert refused["isError"] is True
    assert f"{_reply_size('x' * 1000)} bytes" in text_of(refused)
    assert "limit of 1000 bytes" in text_of(refused)


# --- time --------------------------------------------------------------------------------------


async def _short_timeout(mw: Harness, server: str, **fields: Any) -> None:
    """Set timeoutSeconds 1 once the session is up (start-up itself keeps the default 60 s, so
    a slow machine cannot fail discovery); a policy change, applied without reconnecting."""
    await mw.call("servers.update", {"name": server, "patch": {"timeoutSeconds": 1, **fields}})


async def test_timeout_cancels_the_call_on_the_server(mw: Harness) -> None:
    await mw.start(document({"k": fake()}))
    logs = await mw.connect(["server.log"])
    conv = await mw.conversation(["k"])
    turn = await mw.begin(conv)
    n = bound(turn, "k")
    pid = mw.pid(conv, "k")
    await _short_timeout(mw, "k")
    with anyio.fail_after(4):  # well before the server's 5 s sleep would end
        result = await mw.tool(turn, n["slow"], {"seconds": 5})
    assert result["isError"] is True
    assert "timed out after 1 s" in text_of(result)
    # The server was told (notifications/cancelled): its handler was cancelled.
    await wait_event(logs, "server.log", lambda d: d["line"] == "kitchen: slow cancelled")
    assert text_of(await mw.tool(turn, n["echo"], {"text": "alive"})) == "alive"
    assert mw.pid(conv, "k") == pid


async def test_long_running_server_may_exceed_its_timeout_while_reporting_progress(
    mw: Harness,
) -> None:
    await mw.start(document({"k": fake()}))
    events = await mw.connect(["turn.progress"])
    conv = await mw.conversation(["k"])
    turn = await mw.begin(conv)
    progress = bound(turn, "k")["progress"]
    pid = mw.pid(conv, "k")
    arguments = {"steps": 4, "interval": 0.4}  # 1.2 s in all, never 1 s without progress

    # Not longRunning: the call times out although progress keeps coming.
    await _short_timeout(mw, "k")
    result = await mw.tool(turn, progress, arguments)
    assert result["isError"] is True
    assert "timed out after 1 s" in text_of(result)

    # longRunning: each progress notification extends the deadline.
    await _short_timeout(mw, "k", longRunning=True)
    result = await mw.tool(turn, progress, arguments, callId="lr-1")
    assert result == {"content": [{"type": "text", "text": "done"}], "isError": False}
    seen = [
        await wait_event(events, "turn.progress", lambda d: d["callId"] == "lr-1") for _ in range(4)
    ]
    assert [e["progress"] for e in seen] == [1, 2, 3, 4]
    assert seen[-1] == {
        "turnId": turn["turnId"],
        "callId": "lr-1",
        "conversationId": conv,
        "server": "k",
        "tool": "progress",
        "progress": 4,
        "total": 4,
        "message": "step 4/4",
    }
    assert mw.pid(conv, "k") == pid


async def test_cancel_a_call_in_flight(mw: Harness) -> None:
    await mw.start(document({"k": fake()}))
    events = await mw.connect(["turn.progress", "server.log"])
    conv = await mw.conversation(["k"])
    turn = await mw.begin(conv)
    n = bound(turn, "k")
    params = {
        "turnId": turn["turnId"],
        "name": n["slow"],
        "arguments": {"seconds": 60},
        "callId": "slow-1",
    }
    async with anyio.create_task_group() as tg:
        call = start_call(tg, mw.c, "turns.callTool", params)
        # kitchen's slow reports progress 0 once its handler runs.
        started = await wait_event(events, "turn.progress", lambda d: d["callId"] == "slow-1")
        assert started["progress"] == 0
        other = await mw.call("turns.cancel", {"turnId": turn["turnId"], "callId": "other"})
        assert other == {"cancelled": 0}
        reply = await mw.call("turns.cancel", {"turnId": turn["turnId"], "callId": "slow-1"})
        assert reply == {"cancelled": 1}
        result = await call.wait()
    assert result["isError"] is True
    assert "cancelled" in text_of(result)
    await wait_event(events, "server.log", lambda d: d["line"] == "kitchen: slow cancelled")
    # The turn and the session go on.
    assert text_of(await mw.tool(turn, n["echo"], {"text": "next"})) == "next"


# --- notifications -----------------------------------------------------------------------------


async def test_tools_list_changed_reaches_the_next_turn(mw: Harness) -> None:
    await mw.start(document({"k": fake()}))
    conv = await mw.conversation(["k"])
    turn = await mw.begin(conv)
    assert "fresh" not in bound(turn, "k")
    added = await mw.tool(turn, bound(turn, "k")["add_tool"], {"name": "fresh"})
    assert text_of(added) == "added fresh"

    following = await mw.begin(conv)
    names = bound(following, "k")
    assert names["fresh"] == tool_name("k", "fresh")
    assert any(t["name"] == names["fresh"] for t in following["tools"])
    assert text_of(await mw.tool(following, names["fresh"], {"v": 1})) == '{"v": 1}'


# --- end to end with @modelcontextprotocol/server-everything -----------------------------------

EVERYTHING = PEERS / ".bin" / "mcp-server-everything"


@pytest.mark.peers
@pytest.mark.skipif(
    not EVERYTHING.exists(),
    reason="@modelcontextprotocol/server-everything is not installed in .peers/node_modules "
    "(cd .peers && npm install --no-audit --no-fund @modelcontextprotocol/server-everything)",
)
async def test_server_everything_end_to_end(mw: Harness) -> None:
    await mw.start(
        document(
            {
                "everything": {"command": str(EVERYTHING), "args": ["stdio"]},
                "gone": {"command": NOT_A_COMMAND},
            }
        )
    )
    events = await mw.connect(["turn.progress"])
    tested = await mw.call("servers.test", {"name": "everything"})
    assert tested["ok"] is True
    structured = [t["name"] for t in tested["tools"] if t.get("outputSchema")]
    assert structured, "server-everything lists no tool with an outputSchema"

    conv = await mw.conversation(["everything", "gone"])
    turn = await mw.begin(conv)
    assert [(f["server"], f["kind"]) for f in turn["failures"]] == [("gone", "command_not_found")]
    # Its task-only tool is offered: on stdio meworkd asks for the task (test_tasks.py runs it).
    n = bound(turn, "everything")
    assert "simulate-research-query" in n
    assert {"echo", "get-sum", "get-tiny-image", "trigger-long-running-operation"} <= set(n)
    (echo_tool,) = [t for t in turn["tools"] if t["name"] == n["echo"]]
    assert echo_tool["title"] == "Echo Tool"
    assert echo_tool["inputSchema"]["required"] == ["message"]
    assert turn["bindings"][n["echo"]]["annotations"]["readOnlyHint"] is True

    echo = await mw.tool(turn, n["echo"], {"message": "hello"})
    assert echo == {"content": [{"type": "text", "text": "Echo: hello"}], "isError": False}
    total = await mw.tool(turn, n["get-sum"], {"a": 2, "b": 40})
    assert "42" in text_of(total)
    assert total["isError"] is False

    weather = await mw.tool(turn, n[structured[0]], {"location": "Chicago"})
    assert weather["isError"] is False
    assert isinstance(weather["structuredContent"], dict)
    assert weather["structuredContent"]

    image = await mw.tool(turn, n["get-tiny-image"])
    images = [b for b in image["content"] if b["type"] == "image"]
    assert len(images) == 1
    assert images[0]["mimeType"] == "image/png"
    assert images[0]["data"].startswith("iVBOR")

    long_op = await mw.tool(
        turn,
        n["trigger-long-running-operation"],
        {"duration": 0.3, "steps": 3},
        callId="long-op",
    )
    assert long_op["isError"] is False
    assert "completed" in text_of(long_op)
    progress = [
        await wait_event(events, "turn.progress", lambda d: d["callId"] == "long-op")
        for _ in range(3)
    ]
    assert [(p["progress"], p["total"]) for p in progress] == [(1, 3), (2, 3), (3, 3)]

    # A second conversation gets its own session (its own process) of the same server.
    second = await mw.conversation(["everything"])
    turn2 = await mw.begin(second)
    assert turn2["failures"] == []
    assert bound(turn2, "everything") == n
    assert mw.pid(conv, "everything") != mw.pid(second, "everything")
    echo2 = await mw.tool(turn2, n["echo"], {"message": "two"})
    assert text_of(echo2) == "Echo: two"
