"""A server's questions (issue 17) from @modelcontextprotocol/server-everything (TypeScript
SDK): its elicitation (form and URL, -32042), sampling, roots and logging tools through the
daemon's broker."""

from typing import Any

import anyio
import pytest

from tests.turn_helpers import (
    PEERS,
    Harness,
    bound,
    document,
    mw_fixture,  # noqa: F401  (the mw fixture)
    start_call,
    text_of,
    wait_event,
)

pytestmark = pytest.mark.anyio

EVERYTHING = PEERS / ".bin" / "mcp-server-everything"
TOPICS = ["elicitation.requested", "sampling.requested", "server.log", "server.changed"]


async def _answered(
    mw: Harness,
    events: Any,
    turn: dict[str, Any],
    name: str,
    args: dict[str, Any],
    topic: str,
    answer: dict[str, Any],
) -> tuple[dict[str, Any], dict[str, Any]]:
    async with anyio.create_task_group() as tg:
        call = start_call(
            tg, mw.c, "turns.callTool", {"turnId": turn["turnId"], "name": name, "arguments": args}
        )
        asked = await wait_event(events, topic)
        key = "elicitationId" if topic == "elicitation.requested" else "requestId"
        method = "elicitations.respond" if key == "elicitationId" else "sampling.respond"
        await mw.call(method, {key: asked[key], **answer})
        return asked, await call.wait()


@pytest.mark.skipif(not EVERYTHING.exists(), reason="npm peers not installed")
async def test_server_everything(mw: Harness) -> None:
    entry = {"command": str(EVERYTHING), "args": ["stdio"], "logLevel": "debug"}
    await mw.start(document({"e": entry}, mcp={"sampling": True}))
    events = await mw.connect(TOPICS)
    conv = await mw.call(
        "conversations.create",
        {"mcpServers": ["e"], "approvalLevel": "full_access", "roots": ["file:///home/me/proj"]},
    )
    turn = await mw.begin(conv["id"])
    tools = bound(turn, "e")
    # server-everything announces tools/list_changed right after connecting.
    changed = await wait_event(events, "server.changed")
    assert changed == {"server": "e", "conversationId": conv["id"], "list": "tools"}

    asked, result = await _answered(
        mw,
        events,
        turn,
        tools["trigger-elicitation-request"],
        {},
        "elicitation.requested",
        {"action": "accept", "content": {"name": "Ada"}},
    )
    assert asked["mode"] == "form"
    assert asked["server"] == "e"
    assert result["isError"] is False
    assert "Ada" in text_of(result)

    # errorPath: -32042 first, shown as the same URL prompt; after consent meworkd calls again
    # and the server then asks for the URL in a request: a second prompt.
    async with anyio.create_task_group() as tg:
        args = {"url": "https://example.com/consent", "errorPath": True}
        name = tools["trigger-url-elicitation"]
        call = start_call(
            tg, mw.c, "turns.callTool", {"turnId": turn["turnId"], "name": name, "arguments": args}
        )
        seen = []
        for _ in range(2):
            asked = await wait_event(events, "elicitation.requested")
            seen.append(asked)
            await mw.call(
                "elicitations.respond",
                {"elicitationId": asked["elicitationId"], "action": "accept"},
            )
        result = await call.wait()
    assert [q["mode"] for q in seen] == ["url", "url"]
    assert seen[0]["callId"] == seen[1]["callId"]
    assert result["isError"] is False, result

    asked, result = await _answered(
        mw,
        events,
        turn,
        tools["trigger-sampling-request"],
        {"prompt": "What is 6*7?"},
        "sampling.requested",
        {
            "result": {
                "role": "assistant",
                "model": "frontend-model",
                "content": {"type": "text", "text": "42"},
            }
        },
    )
    assert asked["request"]["messages"][0]["content"]["text"].endswith("What is 6*7?")
    assert "42" in text_of(result)

    assert "file:///home/me/proj" in text_of(await mw.tool(turn, tools["get-roots-list"]))

    await mw.tool(turn, tools["toggle-simulated-logging"])
    line = await wait_event(events, "server.log", lambda d: d.get("source") == "notification")
    assert line["server"] == "e"
    assert line["level"]
