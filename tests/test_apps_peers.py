"""MCP Apps with the official example server from npm (issue 27): ``@modelcontextprotocol/
server-basic-vanillajs`` (TypeScript SDK 2.x) over real stdio, installed into ``.peers/`` by
``scripts/test``; without node or the package these tests skip.
"""

import shutil

import pytest

from tests.common import document, text_of
from tests.daemon_helpers import PEERS
from tests.turn_helpers import Harness, bound, mw_fixture  # noqa: F401  (the mw fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.peers]

BASIC = PEERS / "@modelcontextprotocol" / "server-basic-vanillajs" / "dist" / "index.js"
NODE = shutil.which("node")


def basic_server() -> dict[str, object]:
    if NODE is None:
        pytest.skip("node is not installed (the example server is a Node.js server)")
    if not BASIC.exists():
        pytest.skip(
            f"{BASIC} is missing: install it with "
            "`cd .peers && npm install @modelcontextprotocol/server-basic-vanillajs`"
        )
    return {"type": "stdio", "command": NODE, "args": [str(BASIC), "--stdio"]}


async def test_the_official_example_servers_view_is_read_and_called_back(mw: Harness) -> None:
    await mw.start(document({"basic": basic_server()}))
    conversation = await mw.conversation(["basic"])
    turn = await mw.begin(conversation)
    name = bound(turn, "basic")["get-time"]
    ui = turn["bindings"][name]["ui"]
    assert ui == {"resourceUri": "ui://get-time/mcp-app.html", "visibility": ["model", "app"]}
    result = await mw.tool(turn, name, callId="time-1")
    view = await mw.call("apps.view", {"turnId": turn["turnId"], "callId": "time-1"})
    assert view["mimeType"] == "text/html;profile=mcp-app"
    assert "<html" in view["html"].lower()
    assert view["toolResult"]["structuredContent"] == result["structuredContent"]
    again = await mw.call(
        "apps.callTool", {"callId": "time-1", "server": "basic", "name": "get-time"}
    )
    assert text_of(again).startswith("20")
    audit = (await mw.call("audit.list", {"conversationId": conversation}))["entries"]
    assert [e["origin"] for e in audit] == ["model", "app"]
