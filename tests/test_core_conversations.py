"""core.Conversations in-process: presets, selections, roots, and what a delete takes with it.

No socket: the rules of conversations.* as calls on the core (the wire of these methods stays
tested in tests/test_conversations.py).
"""

import sys

import msgspec
import pytest

from meworkd.base.errors import (
    ConversationNotFound,
    InvalidParams,
    PresetNotFound,
    ServerNotFound,
    ShuttingDown,
)
from meworkd.core.state import StateDB
from tests.core_parts import Core, core

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
