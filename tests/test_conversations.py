"""conversations.* over the real socket, one call of each shape: create, get, list, update, delete,
their refusals' kinds on the wire, the rows in SQLite in the state dir.

The rules behind them (presets, selections, what a delete closes, what a rename or removal of a
server changes, selections kept across a restart) are tested in-process in
tests/test_core_conversations.py.
"""

import sqlite3

import pytest

from tests.common import fake
from tests.turn_helpers import (
    Harness,
    document,
    mw_fixture,  # noqa: F401  (the mw fixture)
    rpc_error,
)

pytestmark = pytest.mark.anyio


async def test_crud_defaults_and_errors(mw: Harness) -> None:
    await mw.start(document({"k": fake(), "other": fake()}))

    plain = await mw.call("conversations.create")
    assert plain["approvalLevel"] == "request_approval"
    assert plain["mcpServers"] == []
    assert plain["preset"] is None
    assert len(plain["id"]) >= 16

    c1 = await mw.call("conversations.create", {"id": "c1", "mcpServers": ["k"]})
    assert c1["id"] == "c1"
    assert c1["mcpServers"] == ["k"]
    assert c1["approvalLevel"] == "request_approval"
    assert (await rpc_error(mw.call("conversations.create", {"id": "c1"}))).kind == "conflict"

    assert await mw.call("conversations.get", {"id": "c1"}) == c1
    listed = (await mw.call("conversations.list"))["conversations"]
    assert {c["id"] for c in listed} == {plain["id"], "c1"}

    updated = await mw.call(
        "conversations.update",
        {"id": "c1", "mcpServers": ["other", "k"], "approvalLevel": "plan"},
    )
    assert updated["mcpServers"] == ["other", "k"]
    assert updated["approvalLevel"] == "plan"
    assert updated["createdAt"] == c1["createdAt"]
    assert updated["updatedAt"] >= c1["updatedAt"]

    # An unknown server in a selection is refused (and nothing changes).
    err = await rpc_error(mw.call("conversations.update", {"id": "c1", "mcpServers": ["nope"]}))
    assert err.kind == "server_not_found"
    assert "nope" in err.message
    err = await rpc_error(mw.call("conversations.create", {"id": "c2", "mcpServers": ["k", "x"]}))
    assert err.kind == "server_not_found"
    assert (await mw.call("conversations.get", {"id": "c1"}))["mcpServers"] == ["other", "k"]
    assert (await rpc_error(mw.call("conversations.get", {"id": "c2"}))).kind == (
        "conversation_not_found"
    )
    # A level outside the four is invalid params.
    err = await rpc_error(mw.call("conversations.create", {"approvalLevel": "yolo"}))
    assert err.code == -32602
    err = await rpc_error(mw.call("conversations.create", {"preset": "missing"}))
    assert err.kind == "preset_not_found"

    # The rows live in SQLite in the state dir.
    with sqlite3.connect(mw.paths.state_dir / "meworkd.sqlite3") as db:
        rows = db.execute("SELECT id, mcp_servers, approval_level FROM conversations").fetchall()
    assert ("c1", '["other", "k"]', "plan") in rows

    assert await mw.call("conversations.delete", {"id": "c1"}) == {
        "deleted": "c1",
        "sessionsClosed": 0,
    }
    for method in ("conversations.get", "conversations.delete"):
        assert (await rpc_error(mw.call(method, {"id": "c1"}))).kind == "conversation_not_found"
    listed = (await mw.call("conversations.list"))["conversations"]
    assert [c["id"] for c in listed] == [plain["id"]]
