"""core.Servers in-process: a server's view, edits, and what goes with a server removed or renamed.

No socket and no server process: the rules of servers.* as calls on the core (the wire of these
methods stays tested in tests/test_registry_rpc.py and its neighbours).
"""

import sys
from typing import Any

import pytest

from meworkd.base.errors import InvalidSettings, ServerNotFound
from tests.common import fake
from tests.core_parts import Core, core

pytestmark = pytest.mark.anyio
__all__ = ["core"]  # the fixture, used by name


def stdio(**fields: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-c", "pass"], **fields}


async def test_a_server_is_described_from_its_entry_sessions_and_failures(core: Core) -> None:
    view = await core.servers.add("one", stdio(description="d", disabledTools=["x"]))
    assert view["name"] == "one"
    assert (view["type"], view["enabled"], view["status"], view["sessions"]) == (
        "stdio",
        True,
        "enabled",
        0,
    )
    assert (view["description"], view["disabledTools"], view["lastError"]) == ("d", ["x"], None)
    off = await core.servers.update("one", {"enabled": False})
    assert off["status"] == "disabled"


async def test_a_default_written_into_a_url_is_shown_masked(core: Core) -> None:
    view = await core.servers.add("web", {"url": "https://h.example/mcp?k=${KEY:-s3cret}"})
    assert "s3cret" not in view["url"]
    assert view["url"].startswith("https://h.example/mcp?k=${KEY:-")


async def test_an_entry_the_settings_refused_shows_as_invalid(core: Core) -> None:
    await core.write({"assets": {"mcpServers": {"bad": {"command": 5}, "ok": stdio()}}})
    listing = core.servers.listing()
    assert [s["name"] for s in listing["servers"]] == ["ok", "bad"]
    bad = core.servers.describe("bad")
    assert (bad["type"], bad["status"], bad["enabled"]) == (None, "invalid", False)
    assert bad["error"]
    assert listing["settings"]["state"] == "problems"


async def test_unknown_names_are_server_not_found_everywhere(core: Core) -> None:
    for ask in (
        lambda: core.servers.describe("nope"),
        lambda: core.servers.get("nope", reveal=False),
        lambda: core.servers.close_sessions("nope"),
        lambda: core.servers.logs("nope", None),
        lambda: core.servers.tools("nope"),
    ):
        with pytest.raises(ServerNotFound):
            ask()
    with pytest.raises(ServerNotFound):
        await core.servers.test("nope")
    with pytest.raises(ServerNotFound):
        await core.servers.login("nope")


async def test_removing_a_server_takes_its_logs_inventory_and_selections(core: Core) -> None:
    await core.servers.add("gone", stdio())
    await core.servers.add("kept", stdio())
    core.writes("gone", "a line")
    core.inventory.record("gone", "test", {"tools": []})
    c1 = core.conversations.create(
        "c1", preset=None, servers=["gone", "kept"], level=None, roots=None
    )
    core.conversations.create("c2", preset=None, servers=["kept"], level=None, roots=None)
    assert c1["mcpServers"] == ["gone", "kept"]

    assert await core.servers.remove("gone") == {"removed": "gone", "conversationsUpdated": ["c1"]}

    assert "gone" not in core.store.settings.servers
    assert core.conversations.get("c1")["mcpServers"] == ["kept"]
    assert core.inventory.get("gone")["tools"] is None
    assert core.logs.ring("gone").tail() == []


async def test_renaming_a_server_carries_its_logs_inventory_and_selections(core: Core) -> None:
    await core.servers.add("old", stdio())
    core.writes("old", "kept line")
    core.inventory.record("old", "test", {"tools": [{"name": "t"}]})
    core.conversations.create("c1", preset=None, servers=["old"], level=None, roots=None)

    renamed = await core.servers.rename("old", "new")

    assert (renamed["name"], renamed["conversationsUpdated"]) == ("new", ["c1"])
    assert core.conversations.get("c1")["mcpServers"] == ["new"]
    assert [line for _t, line in core.logs.ring("new").tail()] == ["kept line"]
    assert core.inventory.get("new")["tools"] == [{"name": "t"}]
    with pytest.raises(ServerNotFound):
        core.servers.describe("old")


async def test_a_dry_run_import_says_what_would_happen_and_writes_nothing(core: Core) -> None:
    text = '{"mcpServers": {"a": {"command": "x"}}}'
    report = await core.servers.import_(text, {}, "error", dry_run=True)
    assert (report["dryRun"], report["format"]) == (True, "mcpServers")
    assert "a" not in core.store.settings.servers
    done = await core.servers.import_(text, {}, "error", dry_run=False)
    assert done["dryRun"] is False
    assert "a" in core.store.settings.servers


async def test_an_edit_the_settings_would_refuse_changes_nothing(core: Core) -> None:
    await core.servers.add("one", stdio())
    with pytest.raises(InvalidSettings):
        await core.servers.update("one", {"timeoutSeconds": "soon"})
    assert core.store.settings.servers["one"].timeout != "soon"


async def test_tool_flags_are_kept_per_server(core: Core) -> None:
    await core.servers.add("one", stdio())
    off = await core.servers.set_tool_enabled("one", "t", enabled=False)
    assert off == {"name": "one", "tool": "t", "enabled": False, "disabledTools": ["t"]}
    ask = await core.servers.set_tool_auto_approve("one", "t", auto_approve=False)
    assert ask["disabledAutoApproveTools"] == ["t"]
    assert core.servers.describe("one")["disabledAutoApproveTools"] == ["t"]


async def test_logs_are_read_from_the_server_ring(core: Core) -> None:
    await core.servers.add("one", stdio())
    for n in range(3):
        core.writes("one", f"line {n}")
    shown = core.servers.logs("one", 2)
    assert [entry["line"] for entry in shown["lines"]] == ["line 1", "line 2"]
    assert shown["dropped"] == 0


async def test_export_masks_secrets_unless_revealed(core: Core) -> None:
    await core.servers.add("one", stdio(env={"API_KEY": "s3cret"}))
    assert "s3cret" not in str(core.servers.export(reveal=False))
    assert core.servers.export(reveal=True)["mcpServers"]["one"]["env"] == {"API_KEY": "s3cret"}


async def test_a_passed_test_records_what_the_server_offers(core: Core) -> None:
    await core.servers.add("k", fake())
    result = await core.servers.test("k")
    assert result["ok"], result
    shown = core.servers.tools("k")
    assert shown["tools"] == result["tools"]
    assert shown["reported"]["tools"]["source"] == "test"
    assert core.store.settings.servers["k"].server_info is not None  # written to the file
