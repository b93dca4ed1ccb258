"""Conversations (issue 4.1): SQLite in the state dir, CRUD, presets, sessions and selections."""

import sqlite3

import anyio
import psutil
import pytest

from tests.common import fake
from tests.turn_helpers import (
    EVENT_TIMEOUT,
    Harness,
    bound,
    document,
    mw_fixture,  # noqa: F401  (the mw fixture)
    rpc_error,
)

pytestmark = pytest.mark.anyio


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


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


async def test_presets_template_selection_and_level(mw: Harness) -> None:
    await mw.start(document({"k": fake(), "other": fake()}))
    await mw.call(
        "presets.set",
        {"name": "research", "preset": {"mcpServers": ["k"], "approvalLevel": "plan"}},
    )
    await mw.call("presets.set", {"name": "bare", "preset": {"mcpServers": ["other"]}})

    conv = await mw.call("conversations.create", {"preset": "research"})
    assert (conv["mcpServers"], conv["approvalLevel"], conv["preset"]) == (
        ["k"],
        "plan",
        "research",
    )
    # Explicit fields win over the preset's.
    conv = await mw.call(
        "conversations.create",
        {"preset": "research", "approvalLevel": "full_access", "mcpServers": ["other"]},
    )
    assert (conv["mcpServers"], conv["approvalLevel"]) == (["other"], "full_access")
    # A preset without a level leaves the default.
    conv = await mw.call("conversations.create", {"preset": "bare"})
    assert (conv["mcpServers"], conv["approvalLevel"]) == (["other"], "request_approval")
    err = await rpc_error(mw.call("conversations.create", {"preset": "missing"}))
    assert err.kind == "preset_not_found"


async def test_delete_closes_its_sessions(mw: Harness) -> None:
    await mw.start(document({"k": fake()}))
    a = await mw.conversation(["k"])
    b = await mw.conversation(["k"])
    turn_a, turn_b = await mw.begin(a), await mw.begin(b)
    (session_a,) = mw.sessions(a)
    pid_a, pid_b = mw.pid(a, "k"), mw.pid(b, "k")
    assert pid_a != pid_b

    reply = await mw.call("conversations.delete", {"id": a})
    assert reply == {"deleted": a, "sessionsClosed": 1}
    assert mw.sessions(a) == []
    with anyio.fail_after(EVENT_TIMEOUT):
        await session_a.closed.wait()
    assert _gone(pid_a)
    # Its turns ended with it; the other conversation is untouched.
    echo = bound(turn_a, "k")["echo"]
    err = await rpc_error(mw.tool(turn_a, echo, {"text": "x"}))
    assert err.kind == "turn_not_found"
    assert mw.pid(b, "k") == pid_b
    assert not _gone(pid_b)
    result = await mw.tool(turn_b, bound(turn_b, "k")["echo"], {"text": "still here"})
    assert result["content"][0]["text"] == "still here"
    assert (await mw.call("daemon.status"))["sessions"] == 1


async def test_update_switches_to_a_preset_or_detaches_it(mw: Harness) -> None:
    await mw.start(document({"k": fake(), "other": fake()}))
    await mw.call(
        "presets.set",
        {"name": "research", "preset": {"mcpServers": ["k"], "approvalLevel": "plan"}},
    )
    conv = await mw.call("conversations.create", {"mcpServers": ["other"]})
    # Switching to a preset applies it, as conversations.create does.
    conv = await mw.call("conversations.update", {"id": conv["id"], "preset": "research"})
    assert (conv["mcpServers"], conv["approvalLevel"], conv["preset"]) == (
        ["k"],
        "plan",
        "research",
    )
    # Leaving preset out keeps it; explicit fields change only themselves.
    conv = await mw.call("conversations.update", {"id": conv["id"], "approvalLevel": "full_access"})
    assert (conv["approvalLevel"], conv["preset"]) == ("full_access", "research")
    # null detaches the preset and keeps the selection and level it gave.
    conv = await mw.call("conversations.update", {"id": conv["id"], "preset": None})
    assert (conv["mcpServers"], conv["approvalLevel"], conv["preset"]) == (
        ["k"],
        "full_access",
        None,
    )
    assert (await mw.call("conversations.get", {"id": conv["id"]}))["preset"] is None
    err = await rpc_error(mw.call("conversations.update", {"id": conv["id"], "preset": "nope"}))
    assert err.kind == "preset_not_found"


async def test_selections_survive_a_restart(mw: Harness) -> None:
    await mw.start(document({"k": fake(), "other": fake()}))
    await mw.call("presets.set", {"name": "p", "preset": {"mcpServers": ["other", "k"]}})
    before = await mw.call("conversations.create", {"id": "keep", "preset": "p"})
    await mw.call("conversations.update", {"id": "keep", "approvalLevel": "allow_edits"})
    before = await mw.call("conversations.get", {"id": "keep"})

    await mw.restart()
    assert await mw.call("conversations.get", {"id": "keep"}) == before
    assert before["mcpServers"] == ["other", "k"]
    assert before["approvalLevel"] == "allow_edits"
    assert before["preset"] == "p"
    assert (await mw.call("daemon.status"))["conversations"] == 1


async def test_rename_and_remove_update_selections(mw: Harness) -> None:
    await mw.start(document({"k": fake(), "other": fake(), "third": fake()}))
    a = await mw.conversation(["k", "other"])
    b = await mw.conversation(["other"])
    c = await mw.conversation(["third", "k"])
    untouched = await mw.conversation(["third"])
    first = await mw.begin(a)
    assert set(bound(first, "k")) >= {"echo"}

    renamed = await mw.call("servers.rename", {"name": "k", "newName": "k2"})
    assert sorted(renamed["conversationsUpdated"]) == sorted([a, c])
    assert (await mw.call("conversations.get", {"id": a}))["mcpServers"] == ["k2", "other"]
    assert (await mw.call("conversations.get", {"id": c}))["mcpServers"] == ["third", "k2"]
    # The renamed server takes part under its new name (and its new stable tool names).
    turn = await mw.begin(a)
    names = bound(turn, "k2")
    assert "echo" in names
    assert not bound(turn, "k")
    result = await mw.tool(turn, names["echo"], {"text": "renamed"})
    assert result["content"][0]["text"] == "renamed"

    removed = await mw.call("servers.remove", {"name": "other"})
    assert removed["removed"] == "other"
    assert sorted(removed["conversationsUpdated"]) == sorted([a, b])
    assert (await mw.call("conversations.get", {"id": a}))["mcpServers"] == ["k2"]
    assert (await mw.call("conversations.get", {"id": b}))["mcpServers"] == []
    assert (await mw.call("conversations.get", {"id": untouched}))["mcpServers"] == ["third"]
    # A server that no longer exists cannot be selected again.
    err = await rpc_error(mw.call("conversations.update", {"id": b, "mcpServers": ["other"]}))
    assert err.kind == "server_not_found"
