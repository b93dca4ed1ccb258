"""Server logs (issue 17 point 5): notifications/message lines reach the server's Logs with their
level and as server.log events; logLevel is sent as logging/setLevel."""

import pytest

from tests.test_elicitation import asking
from tests.turn_helpers import (
    Harness,
    bound,
    document,
    mw_fixture,  # noqa: F401  (the mw fixture)
    rpc_error,
    wait_event,
)

pytestmark = pytest.mark.anyio


async def test_log_notifications(mw: Harness) -> None:
    await mw.start(document({"a": asking(logLevel="warning")}))
    events = await mw.connect(["server.log"])
    conv = await mw.conversation(["a"])
    turn = await mw.begin(conv)
    await mw.tool(turn, bound(turn, "a")["chatty"])
    # logLevel "warning": the server drops its info line and sends the warning.
    line = await wait_event(events, "server.log", lambda d: d.get("source") == "notification")
    assert line["level"] == "warning"
    assert line["server"] == "a"
    assert line["conversation"] == conv
    assert line["line"].startswith("[warning] ")
    assert "almost out of tea" in line["line"]
    assert mw.daemon is not None
    stored = [text for _t, text in mw.daemon.logs.ring("a").tail()]
    assert line["line"] in stored
    assert not any("working hard" in text for text in stored)

    bad = await rpc_error(mw.call("servers.update", {"name": "a", "patch": {"logLevel": "loud"}}))
    assert "logLevel: expected one of debug" in bad.message
