"""servers.tools follows a server's tools/list_changed (issue 17 follow-up): the list is asked
again on the session that announced it before ``server.changed`` reaches frontends."""

import anyio
import pytest

from tests.common import fake
from tests.turn_helpers import (
    Harness,
    bound,
    document,
    mw_fixture,  # noqa: F401  (the mw fixture)
    start_call,
    wait_event,
)

pytestmark = pytest.mark.anyio


async def test_servers_tools_follows_list_changed(mw: Harness) -> None:
    await mw.start(document({"k": fake()}))
    events = await mw.connect(["server.changed"])
    conversation = await mw.conversation(["k"])
    turn = await mw.begin(conversation)
    before = await mw.call("servers.tools", {"name": "k"})
    assert before["reported"]["tools"]["source"] == "turn"
    assert "fresh" not in {t["name"] for t in before["tools"]}

    async with anyio.create_task_group() as tg:
        name = bound(turn, "k")["add_tool"]
        call = start_call(
            tg,
            mw.c,
            "turns.callTool",
            {"turnId": turn["turnId"], "name": name, "arguments": {"name": "fresh"}},
        )
        changed = await wait_event(events, "server.changed")
        assert (await call.wait())["isError"] is False
    assert changed == {"server": "k", "conversationId": conversation, "list": "tools"}
    after = await mw.call("servers.tools", {"name": "k"})
    assert after["reported"]["tools"]["source"] == "changed"
    fresh = [t for t in after["tools"] if t["name"] == "fresh"]
    assert fresh == [
        {
            "name": "fresh",
            "inputSchema": {"type": "object"},
            "description": "added at runtime",
            "boundName": fresh[0]["boundName"],
        }
    ]
