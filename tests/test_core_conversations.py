"""core.Conversations in-process: presets, selections, roots, and what a delete takes with it.

No socket: the rules of conversations.* as calls on the core (the wire of these methods stays
tested in tests/test_conversations.py, one call of each).
"""

import sys
from pathlib import Path

import anyio
import msgspec
import psutil
import pytest

from meworkd.base.errors import (
    ConversationNotFound,
    InvalidParams,
    PresetNotFound,
    ServerNotFound,
    ShuttingDown,
    TurnNotFound,
)
from meworkd.core.state import StateDB
from tests.common import BOUND, fake
from tests.core_parts import Core, build_core, core

pytestmark = pytest.mark.anyio
__all__ = ["core"]  # the fixture, used by name

STDIO = {"command": sys.executable, "args": ["-c", "pass"]}


async def with_servers(core: Core, *names: str) -> None:
    for name in names:
        await core.servers.add(name, STDIO)


async def test_a_preset_fills_what_the_request_leaves_out(core: Core) -> None:
    await with_servers(core, "k", "other")
    await core.settings.set_preset("research", {"mcpServers": ["k"], "approvalLevel": "plan"})
    made = core.conversations.create(None, preset="research", servers=None, level=None, roots=None)
    assert (made["mcpServers"], made["approvalLevel"], made["preset"]) == (
        ["k"],
        "plan",
        "research",
    )
    own = core.conversations.create(
        None, preset="research", servers=["other"], level="full_access", roots=None
    )
    assert (own["mcpServers"], own["approvalLevel"]) == (["other"], "full_access")
    # A preset without a level leaves the default.
    await core.settings.set_preset("bare", {"mcpServers": ["other"]})
    bare = core.conversations.create(None, preset="bare", servers=None, level=None, roots=None)
    assert (bare["mcpServers"], bare["approvalLevel"]) == (["other"], "request_approval")


async def test_without_a_preset_the_selection_is_empty_at_the_default_level(core: Core) -> None:
    made = core.conversations.create("c", preset=None, servers=None, level=None, roots=None)
    assert (made["id"], made["mcpServers"], made["preset"]) == ("c", [], None)
    assert made["approvalLevel"] == "request_approval"


async def test_an_unknown_preset_or_server_is_refused(core: Core) -> None:
    with pytest.raises(PresetNotFound):
        core.conversations.create(None, preset="nope", servers=None, level=None, roots=None)
    with pytest.raises(ServerNotFound):
        core.conversations.create(None, preset=None, servers=["ghost"], level=None, roots=None)
    assert core.conversations.listing() == {"conversations": []}


async def test_an_entry_the_settings_refused_may_still_be_selected(core: Core) -> None:
    await core.write({"assets": {"mcpServers": {"bad": {"command": 5}}}})
    made = core.conversations.create(None, preset=None, servers=["bad"], level=None, roots=None)
    assert made["mcpServers"] == ["bad"]


@pytest.mark.parametrize("root", ["/home/me", "http://h/x", "file://host/x", ""])
async def test_a_root_must_be_a_file_uri(core: Core, root: str) -> None:
    with pytest.raises(InvalidParams) as caught:
        core.conversations.create(None, preset=None, servers=None, level=None, roots=[root])
    assert "file://" in caught.value.message


async def test_update_switches_or_detaches_a_preset_and_keeps_it_when_unset(core: Core) -> None:
    await with_servers(core, "k")
    await core.settings.set_preset("p", {"mcpServers": ["k"], "approvalLevel": "plan"})
    core.conversations.create("c", preset=None, servers=None, level=None, roots=None)
    switched = await core.conversations.update(
        "c", preset="p", servers=None, level=None, roots=None
    )
    assert (switched["preset"], switched["mcpServers"], switched["approvalLevel"]) == (
        "p",
        ["k"],
        "plan",
    )
    kept = await core.conversations.update(
        "c", preset=msgspec.UNSET, servers=None, level="full_access", roots=None
    )
    assert (kept["preset"], kept["approvalLevel"]) == ("p", "full_access")
    detached = await core.conversations.update(
        "c", preset=None, servers=None, level=None, roots=None
    )
    assert (detached["preset"], detached["mcpServers"]) == (None, ["k"])
    assert (detached["approvalLevel"], core.conversations.get("c")["preset"]) == (
        "full_access",
        None,
    )
    with pytest.raises(PresetNotFound):
        await core.conversations.update("c", preset="nope", servers=None, level=None, roots=None)


async def test_update_checks_the_selection_before_changing_anything(core: Core) -> None:
    await with_servers(core, "k")
    core.conversations.create("c", preset=None, servers=["k"], level=None, roots=None)
    with pytest.raises(ServerNotFound):
        await core.conversations.update(
            "c", preset=msgspec.UNSET, servers=["k", "ghost"], level="plan", roots=None
        )
    assert core.conversations.get("c")["mcpServers"] == ["k"]
    assert core.conversations.get("c")["approvalLevel"] == "request_approval"


async def test_delete_ends_turns_and_forgets_the_conversation(core: Core) -> None:
    core.conversations.create("c", preset=None, servers=None, level=None, roots=None)
    turn = await core.turns.begin("c", None)
    assert core.turns.active == 1
    assert core.conversations.delete("c") == {"deleted": "c", "sessionsClosed": 0}
    assert core.turns.active == 0
    assert turn["tools"] == []
    with pytest.raises(ConversationNotFound):
        core.conversations.get("c")
    with pytest.raises(ConversationNotFound):
        core.conversations.delete("c")


async def test_prepare_reports_servers_it_cannot_connect(core: Core) -> None:
    await core.write({"assets": {"mcpServers": {"bad": {"command": 5}}}})
    core.conversations.create("c", preset=None, servers=["bad"], level=None, roots=None)
    prepared = core.conversations.prepare("c")
    assert (prepared["conversationId"], prepared["connecting"]) == ("c", [])
    assert [f["server"] for f in prepared["failures"]] == ["bad"]


async def test_a_state_database_not_open_says_meworkd_is_not_running(core: Core) -> None:
    closed = StateDB(core.state.path)
    with pytest.raises(ShuttingDown):
        closed.list_conversations()
    assert closed.roots_of("c") == []  # asked by a server: no roots, not an error
    core.state.close()
    with pytest.raises(ShuttingDown):
        core.conversations.listing()


async def test_selections_survive_a_new_core_on_the_same_files(tmp_path: Path) -> None:
    first = build_core(tmp_path)
    await with_servers(first, "k", "other")
    await first.settings.set_preset("p", {"mcpServers": ["other", "k"]})
    first.conversations.create("keep", preset="p", servers=None, level=None, roots=None)
    await first.conversations.update(
        "keep", preset=msgspec.UNSET, servers=None, level="allow_edits", roots=None
    )
    before = first.conversations.get("keep")
    first.state.close()

    again = build_core(tmp_path)  # what a restarted daemon builds on the same state
    try:
        assert again.conversations.get("keep") == before
        assert (before["mcpServers"], before["approvalLevel"], before["preset"]) == (
            ["other", "k"],
            "allow_edits",
            "p",
        )
        assert again.state.conversation_count() == 1
    finally:
        again.state.close()


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def test_a_delete_closes_its_own_sessions_only(core: Core) -> None:
    await core.servers.add("k", fake())
    for conversation in ("a", "b"):
        core.conversations.create(
            conversation, preset=None, servers=["k"], level="full_access", roots=None
        )
    turn_a, turn_b = await core.turns.begin("a", None), await core.turns.begin("b", None)
    (session_a,) = [s for s in core.pool.sessions if s.conversation == "a"]
    (session_b,) = [s for s in core.pool.sessions if s.conversation == "b"]
    assert session_a.pid != session_b.pid

    assert core.conversations.delete("a") == {"deleted": "a", "sessionsClosed": 1}
    with anyio.fail_after(BOUND):
        await session_a.closed.wait()
    assert session_a.pid is not None
    assert _gone(session_a.pid)
    with pytest.raises(TurnNotFound):
        await core.turns.call_tool(turn_a["turnId"], "k__echo", {"text": "x"}, None)
    # The other conversation, its session and its turn are untouched.
    assert session_b.pid is not None
    assert not _gone(session_b.pid)
    (echo,) = [n for n, b in turn_b["bindings"].items() if b["tool"] == "echo"]
    reply = await core.turns.call_tool(turn_b["turnId"], echo, {"text": "still here"}, None)
    assert msgspec.json.decode(reply)["content"][0]["text"] == "still here"
    assert len(core.pool.sessions) == 1


async def test_rename_and_remove_update_every_selection_naming_the_server(core: Core) -> None:
    for name in ("k", "other", "third"):
        await core.servers.add(name, fake())
    selections = {"a": ["k", "other"], "b": ["other"], "c": ["third", "k"], "untouched": ["third"]}
    for conversation, servers in selections.items():
        core.conversations.create(
            conversation, preset=None, servers=servers, level="full_access", roots=None
        )

    renamed = await core.servers.rename("k", "k2")
    assert sorted(renamed["conversationsUpdated"]) == ["a", "c"]
    assert core.conversations.get("a")["mcpServers"] == ["k2", "other"]
    assert core.conversations.get("c")["mcpServers"] == ["third", "k2"]
    # The renamed server takes part under its new name (and its new stable tool names).
    turn = await core.turns.begin("a", None)
    servers = {b["server"] for b in turn["bindings"].values()}
    assert "k2" in servers
    assert "k" not in servers
    (echo,) = [n for n, b in turn["bindings"].items() if (b["server"], b["tool"]) == ("k2", "echo")]
    reply = await core.turns.call_tool(turn["turnId"], echo, {"text": "renamed"}, None)
    assert msgspec.json.decode(reply)["content"][0]["text"] == "renamed"

    removed = await core.servers.remove("other")
    assert sorted(removed["conversationsUpdated"]) == ["a", "b"]
    assert core.conversations.get("a")["mcpServers"] == ["k2"]
    assert core.conversations.get("b")["mcpServers"] == []
    assert core.conversations.get("untouched")["mcpServers"] == ["third"]
    # A server that no longer exists cannot be selected again.
    with pytest.raises(ServerNotFound):
        await core.conversations.update(
            "b", preset=msgspec.UNSET, servers=["other"], level=None, roots=None
        )
