"""settings.setMcpOptions takes ``max_live_sessions`` (issue 18, point 7): validated as the
file is (an integer > 0), written to the file, and in force for the open sessions at once."""

import pytest

from tests.turn_helpers import (
    Harness,
    counting,
    document,
    mw_fixture,  # noqa: F401  (the mw fixture)
    rpc_error,
    wait_event,
)

pytestmark = pytest.mark.anyio


async def test_max_live_sessions_is_set_validated_and_applied(mw: Harness) -> None:
    await mw.start(document({"a": counting(), "b": counting()}))
    events = await mw.connect(["server.status"])
    turn = await mw.begin(await mw.conversation(["a", "b"]))
    assert len(mw.d.pool.sessions) == 2

    reply = await mw.call("settings.setMcpOptions", {"max_live_sessions": 1})
    assert reply["mcp"]["max_live_sessions"] == 1
    assert mw.read_settings()["mcp"] == {"max_live_sessions": 1}
    assert (await mw.call("settings.get"))["mcp"]["max_live_sessions"] == 1
    # In force at once: the least recently used idle session closes over the new budget.
    closed = await wait_event(events, "server.status", lambda d: d["status"] == "closed")
    assert closed["reason"] == "budget"
    assert len(mw.d.pool.sessions) == 1
    assert turn["failures"] == []

    for bad in (0, -3, 1.5, "2", True):
        error = await rpc_error(mw.call("settings.setMcpOptions", {"max_live_sessions": bad}))
        assert error.kind == "invalid_params", bad
        assert "max_live_sessions" in error.data["detail"], bad
    assert mw.read_settings()["mcp"] == {"max_live_sessions": 1}  # nothing written
