"""core.Servers and core.SettingsFile editing the file in-process: what each edit writes, what it
keeps (positions, unknown keys, secrets), what follows a rename or a removal, what is refused.

No socket: these rules moved here from the wire tests of tests/test_registry_rpc.py, which keeps
one call of each registry method over the real socket.
"""

import copy
import json
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings

from meworkd.base.errors import MeworkError
from tests.common import BOUND
from tests.core_parts import Core, core
from tests.daemon_fixture import (
    DocModel,
    assert_unknown_keys_survived,
    documents_with_unknown_keys,
    expect_op,
    read_doc,
    registry_ops,
)

pytestmark = pytest.mark.anyio
__all__ = ["core"]  # the fixture, used by name

SECRET_ENV = "sk-live-0123456789"
SECRET_HEADER = "tok-abcdef-987654"

INITIAL: dict[str, Any] = {
    "x-top": {"keep": True},
    "assets": {
        "x-assets": 1,
        "mcpServers": {
            "first": {"command": "one", "x-entry": [1, 2]},
            "fs": {
                "x-before": "b",
                "type": "stdio",
                "command": "npx",
                "args": ["-y", "server-filesystem"],
                "env": {"API_KEY": SECRET_ENV, "FROM_ENV": "${HOME}"},
                "description": "Local files",
                "x-after": {"nested": ["a"]},
            },
            "last": {"url": "http://127.0.0.1:9/mcp"},
        },
    },
    "presets": {"research": {"mcpServers": ["fs", "last"], "approvalLevel": "plan"}},
    "z-last": "end",
}


async def initial(core: Core) -> None:
    await core.write(copy.deepcopy(INITIAL))


def on_disk(core: Core) -> dict[str, Any]:
    return read_doc(core.path)  # type: ignore[no-any-return]


def servers_on_disk(core: Core) -> dict[str, Any]:
    return on_disk(core)["assets"]["mcpServers"]  # type: ignore[no-any-return]


async def refused(edit: Any) -> MeworkError:
    with pytest.raises(MeworkError) as caught:
        await edit
    return caught.value


async def test_views_mask_secrets_unless_revealed(core: Core) -> None:
    await initial(core)
    listed = core.servers.listing()["servers"]
    assert [s["name"] for s in listed] == ["first", "fs", "last"]
    assert [s["type"] for s in listed] == ["stdio", "stdio", "streamable_http"]
    assert all(s["status"] == "enabled" for s in listed)
    assert SECRET_ENV not in json.dumps(listed)
    got = core.servers.get("fs", reveal=False)
    assert got["description"] == "Local files"
    assert got["server"]["env"] == {"API_KEY": "********", "FROM_ENV": "${HOME}"}
    assert got["server"]["x-after"] == {"nested": ["a"]}
    assert core.servers.get("fs", reveal=True)["server"]["env"]["API_KEY"] == SECRET_ENV
    shown = core.settings.get()
    assert shown["document"]["x-top"] == {"keep": True}
    assert shown["document"]["assets"]["mcpServers"]["fs"]["env"]["API_KEY"] == "********"
    assert SECRET_ENV not in json.dumps(shown)
    exported = core.servers.export(reveal=False)
    assert list(exported["mcpServers"]) == ["first", "fs", "last"]
    assert exported["mcpServers"]["fs"]["env"]["API_KEY"] == "********"
    revealed = core.servers.export(reveal=True)["mcpServers"]["fs"]
    assert revealed == INITIAL["assets"]["mcpServers"]["fs"]


async def test_an_added_server_is_on_disk_and_announced_with_its_secrets_masked(
    core: Core,
) -> None:
    await initial(core)
    entry = {
        "type": "streamableHttp",
        "url": "https://docs.example/mcp",
        "headers": {"Authorization": f"Bearer {SECRET_HEADER}", "X-Ref": "${TOK}"},
        "timeoutSeconds": 30,
        "x-mine": "kept",
    }
    with core.bus.subscribe(["settings.reloaded"]) as events:
        view = await core.servers.add("docs", entry)
        with anyio.fail_after(BOUND):
            event = await events.__anext__()
    assert list(servers_on_disk(core)) == ["first", "fs", "last", "docs"]
    assert servers_on_disk(core)["docs"] == {**entry, "type": "streamable_http"}
    assert (view["type"], view["timeoutSeconds"]) == ("streamable_http", 30)
    assert SECRET_HEADER not in json.dumps(view)
    got = core.servers.get("docs", reveal=False)
    assert got["server"]["headers"] == {"Authorization": "********", "X-Ref": "${TOK}"}
    assert (event.data["source"], event.data["added"]) == ("write", ["docs"])
    assert SECRET_HEADER not in json.dumps(event.data)
    for shown in (core.servers.listing(), core.settings.get(), core.servers.export(reveal=False)):
        assert SECRET_HEADER not in json.dumps(shown)


async def test_every_spelling_of_http_is_written_as_streamable_http(core: Core) -> None:
    for i, spelling in enumerate(["http", "streamable-http", "streamable_http", None]):
        entry: dict[str, Any] = {"url": f"http://h/{i}"}
        if spelling:
            entry["type"] = spelling
        await core.servers.add(f"h{i}", entry)
        assert servers_on_disk(core)[f"h{i}"]["type"] == "streamable_http"


async def test_an_sse_server_or_a_taken_name_is_refused_and_nothing_written(core: Core) -> None:
    await initial(core)
    before = core.path.read_bytes()
    error = await refused(core.servers.add("old", {"type": "sse", "url": "http://h"}))
    assert error.kind == "invalid_settings"
    assert "HTTP+SSE" in error.message
    assert "streamable_http" in error.message
    assert (await refused(core.servers.add("fs", {"command": "c"}))).kind == "conflict"
    assert core.path.read_bytes() == before


async def test_an_update_merges_keeps_the_file_order_and_unknown_keys(core: Core) -> None:
    await initial(core)
    patch = {"description": None, "timeoutSeconds": 5, "enabled": False, "x-new": 1}
    view = await core.servers.update("fs", patch)
    assert (view["enabled"], view["status"], view["description"]) == (False, "disabled", None)
    fs = servers_on_disk(core)["fs"]
    assert list(fs) == [  # the file's own order is kept (issue 15: only values change)
        "x-before",
        "type",
        "command",
        "args",
        "env",
        "x-after",
        "timeoutSeconds",
        "enabled",
        "x-new",
    ]
    assert fs["env"] == {"API_KEY": SECRET_ENV, "FROM_ENV": "${HOME}"}
    assert fs["x-after"] == {"nested": ["a"]}
    # stdio → HTTP by patching the shape; the transport is inferred again.
    await core.servers.update("first", {"command": None, "url": "http://h/mcp"})
    assert servers_on_disk(core)["first"] == {
        "type": "streamable_http",
        "x-entry": [1, 2],
        "url": "http://h/mcp",
    }


async def test_an_update_that_would_break_the_entry_is_refused_and_nothing_written(
    core: Core,
) -> None:
    await initial(core)
    before = core.path.read_bytes()
    error = await refused(core.servers.update("fs", {"timeoutSeconds": 0}))
    assert (error.kind, error.message) == (
        "invalid_settings",
        "fs.timeoutSeconds: expected int > 0",
    )
    error = await refused(core.servers.update("fs", {"command": None}))
    assert error.message == "fs.command: required for a stdio server"
    assert (await refused(core.servers.update("nope", {}))).kind == "server_not_found"
    assert core.path.read_bytes() == before


async def test_a_rename_keeps_the_position_the_entry_and_the_presets(core: Core) -> None:
    await initial(core)
    before = servers_on_disk(core)
    view = await core.servers.rename("fs", "files")
    assert view["name"] == "files"
    doc = on_disk(core)
    after = doc["assets"]["mcpServers"]
    assert list(after) == ["first", "files", "last"]
    assert after["files"] == before["fs"]
    assert list(after["files"]) == list(before["fs"])
    assert doc["presets"]["research"]["mcpServers"] == ["files", "last"]
    assert list(doc) == list(INITIAL)
    assert [s["name"] for s in core.servers.listing()["servers"]] == ["first", "files", "last"]

    assert (await refused(core.servers.rename("files", "last"))).kind == "conflict"
    assert (await refused(core.servers.rename("fs", "x"))).kind == "server_not_found"
    assert (await refused(core.servers.rename("files", " "))).kind == "invalid_params"
    unchanged = on_disk(core)
    await core.servers.rename("files", "files")
    assert on_disk(core) == unchanged


async def test_a_removed_server_leaves_the_presets_that_named_it(core: Core) -> None:
    await initial(core)
    assert (await core.servers.remove("last"))["removed"] == "last"
    doc = on_disk(core)
    assert list(doc["assets"]["mcpServers"]) == ["first", "fs"]
    assert doc["presets"]["research"]["mcpServers"] == ["fs"]
    assert (doc["x-top"], doc["z-last"], doc["assets"]["x-assets"]) == ({"keep": True}, "end", 1)
    assert list(doc)[:2] == ["x-top", "assets"]


async def test_tool_flags_switched_back_leave_no_key_behind(core: Core) -> None:
    await initial(core)
    await core.servers.set_tool_enabled("fs", "write_file", enabled=False)
    await core.servers.set_tool_auto_approve("fs", "move_file", auto_approve=False)
    fs = servers_on_disk(core)["fs"]
    assert (fs["disabledTools"], fs["disabledAutoApproveTools"]) == (["write_file"], ["move_file"])
    await core.servers.set_tool_enabled("fs", "write_file", enabled=True)
    await core.servers.set_tool_auto_approve("fs", "move_file", auto_approve=True)
    fs = servers_on_disk(core)["fs"]
    assert "disabledTools" not in fs
    assert "disabledAutoApproveTools" not in fs


async def test_presets_and_options_are_written_and_bad_ones_refused(core: Core) -> None:
    await initial(core)
    preset = {"mcpServers": ["first"], "approvalLevel": "full_access"}
    made = await core.settings.set_preset("quick", preset)
    assert {**made, "mcpServers": list(made["mcpServers"])} == {"name": "quick", **preset}
    assert on_disk(core)["presets"]["quick"] == preset
    error = await refused(core.settings.set_preset("bad", {"approvalLevel": "yolo"}))
    assert error.kind == "invalid_settings"
    await core.settings.remove_preset("research")
    assert list(on_disk(core)["presets"]) == ["quick"]
    assert (await refused(core.settings.remove_preset("research"))).kind == "preset_not_found"

    done = await core.settings.set_mcp_options({"max_reply_bytes": 1024, "session_idle_minutes": 5})
    assert done["mcp"]["max_reply_bytes"] == 1024
    assert on_disk(core)["mcp"] == {"max_reply_bytes": 1024, "session_idle_minutes": 5}
    error = await refused(core.settings.set_mcp_options({"approval_timeout_seconds": 0}))
    assert error.kind == "invalid_settings"
    assert on_disk(core)["mcp"]["max_reply_bytes"] == 1024


# --- property: unknown keys survive every registry edit made through the core ---------------


async def apply_op(core: Core, op: tuple[Any, ...]) -> None:
    """The core method each registry method of the wire calls, for one generated edit."""
    kind, *args = op
    if kind == "add":
        await core.servers.add(args[0], {"command": "added"})
    elif kind == "update":
        await core.servers.update(args[0], args[1])
    elif kind == "rename":
        await core.servers.rename(args[0], args[1])
    elif kind == "remove":
        await core.servers.remove(args[0])
    elif kind == "tool":
        await core.servers.set_tool_enabled(args[0], args[1], enabled=args[2])
    elif kind == "mcp":
        await core.settings.set_mcp_options({"max_reply_bytes": args[0]})
    else:
        await core.settings.set_preset(args[0], {"mcpServers": args[1]})


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=documents_with_unknown_keys(), ops=registry_ops)
async def test_unknown_keys_survive_registry_edits(
    core: Core, case: tuple[dict[str, Any], DocModel], ops: list[tuple[Any, ...]]
) -> None:
    doc, model = case
    await core.write(doc)  # each example starts from its own document
    for op in ops:
        expected = expect_op(op, model)
        failed: str | None = None
        try:
            await apply_op(core, op)
        except MeworkError as exc:
            failed = exc.kind
        assert failed == expected, op
        assert_unknown_keys_survived(read_doc(core.path), model)
