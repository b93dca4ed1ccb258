"""A tool call behaves the same on meworkd's own pipe path and on the SDK's (issue 19.5).

On a handshake-era stdio session meworkd writes tools/call and reads its reply itself
(``meworkd/mcp/direct.py``); with ``PASS_THROUGH`` off the same calls go through the SDK's
``ClientSession.send_request``. Every case runs on both, against the real daemon on its real
socket with real servers: the kitchen, the asking server (an elicitation during the call) and
a stdlib server that precedes each reply with a hostile line.
"""

import sys
from typing import Any

import anyio
import pytest

from meworkd.mcp import direct
from tests.common import SERVERS as SERVER_DIR
from tests.common import fake
from tests.turn_helpers import (
    Harness,
    bound,
    document,
    mw_fixture,  # noqa: F401  (the mw fixture)
    start_call,
    text_of,
    wait_event,
)

pytestmark = pytest.mark.anyio

REPLY_LIMIT = 4096
HOSTILE_KINDS = ("id-list", "id-object", "id-huge", "result-number", "error-string", "non-utf8")


@pytest.fixture(params=["direct", "sdk"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(direct, "PASS_THROUGH", request.param == "direct")
    return str(request.param)


def entry(script: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SERVER_DIR / script)]}


def no_meta(value: Any) -> bool:
    if isinstance(value, dict):
        return "_meta" not in value and all(map(no_meta, value.values()))
    if isinstance(value, list):
        return all(map(no_meta, value))
    return True


async def test_a_call_behaves_the_same_on_both_paths(mw: Harness, path: str) -> None:
    servers = {"k": fake(), "a": entry("asking.py")}
    await mw.start(document(servers, mcp={"max_reply_bytes": REPLY_LIMIT}))
    events = await mw.connect(["turn.progress", "elicitation.requested", "server.log"])
    conv = await mw.conversation(["k", "a"])
    turn = await mw.begin(conv)
    k, a = bound(turn, "k"), bound(turn, "a")
    assert [s.passes_through for s in mw.sessions(conv)] == [path == "direct"] * 2

    echo = await mw.tool(turn, k["echo"], {"text": "hi"})
    assert echo == {"content": [{"type": "text", "text": "hi"}], "isError": False}
    assert no_meta(echo)  # the kitchen puts _meta on the result and on the block
    failed = await mw.tool(turn, k["error"])
    assert (text_of(failed), failed["isError"]) == ("kitchen: this tool always fails", True)
    added = await mw.tool(turn, k["add"], {"a": 2, "b": 3})
    assert (added["structuredContent"], added["isError"]) == ({"total": 5}, False)
    # Structured content that fails the tool's own outputSchema is still the server's reply.
    bad = await mw.tool(turn, k["bad_output"])
    assert (bad["structuredContent"], bad["isError"]) == ({"x": "not-an-int"}, False)
    rpc = await mw.tool(turn, k["rpc_error"])
    assert rpc["isError"] is True
    assert "kitchen: rpc_error requested" in text_of(rpc)

    # Just over the limit: refused on its size as the model would get it. Far over (past the
    # envelope's allowance): refused while it arrived, never read whole. The session lives on.
    over = await mw.tool(turn, k["big"], {"bytes": REPLY_LIMIT})
    assert over["isError"] is True
    assert f"over the limit of {REPLY_LIMIT} bytes" in text_of(over)
    big = await mw.tool(turn, k["big"], {"bytes": 16 * REPLY_LIMIT})
    assert big["isError"] is True
    assert "while it was still arriving" in text_of(big)
    assert text_of(await mw.tool(turn, k["echo"], {"text": "after"})) == "after"

    result = await mw.tool(turn, k["progress"], {"steps": 3}, callId="p")
    assert text_of(result) == "done"
    for step in (1, 2, 3):
        seen = await wait_event(events, "turn.progress", lambda d: d["callId"] == "p")
        assert (seen["progress"], seen["total"], seen["message"]) == (step, 3, f"step {step}/3")

    async with anyio.create_task_group() as tg:
        slow = {"turnId": turn["turnId"], "name": k["slow"], "arguments": {"seconds": 60}}
        call = start_call(tg, mw.c, "turns.callTool", {**slow, "callId": "s"})
        await wait_event(events, "turn.progress", lambda d: d["callId"] == "s")
        await mw.call("turns.cancel", {"turnId": turn["turnId"], "callId": "s"})
        assert text_of(await call.wait()) == "The call was cancelled."
    # The server was told (notifications/cancelled for the call's id): its handler stopped.
    await wait_event(events, "server.log", lambda d: d["line"] == "kitchen: slow cancelled")

    async with anyio.create_task_group() as tg:
        asks = {"turnId": turn["turnId"], "name": a["ask_prefs"]}
        call = start_call(tg, mw.c, "turns.callTool", asks)
        asked = await wait_event(events, "elicitation.requested")
        answer = {"elicitationId": asked["elicitationId"], "action": "accept"}
        await mw.call("elicitations.respond", {**answer, "content": {"name": "Ada"}})
        assert text_of(await call.wait()).startswith('accepted {"color": "green"')

    pid = mw.pid(conv, "k")
    died = await mw.tool(turn, k["die"])
    assert died["isError"] is True
    assert "closed the connection during the call" in text_of(died)
    assert text_of(await mw.tool(turn, k["echo"], {"text": "again"})) == "again"
    assert mw.pid(conv, "k") != pid


async def test_hostile_replies_are_skipped_on_both_paths(mw: Harness, path: str) -> None:
    await mw.start(document({"h": entry("hostile_replies.py")}))
    logs = await mw.connect(["server.log"])
    conv = await mw.conversation(["h"])
    turn = await mw.begin(conv)
    name = bound(turn, "h")["t"]
    assert mw.sessions(conv, "h")[0].passes_through is (path == "direct")
    for kind in HOSTILE_KINDS:
        # The bad line is reported and skipped; the real reply after it answers the call.
        assert await mw.tool(turn, name, {"kind": kind}) == {
            "content": [{"type": "text", "text": f"ok {kind}"}],
            "isError": False,
        }
    # Lines naming no request of ours are dropped quietly; these were not JSON-RPC at all.
    await wait_event(logs, "server.log", lambda d: '"result": 5' in d["line"])
    await wait_event(logs, "server.log", lambda d: '"error": "boom"' in d["line"])
    await wait_event(logs, "server.log", lambda d: "\ufffd" in d["line"])
