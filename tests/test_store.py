"""meworkd.store.SettingsStore on a real file: creation, atomic fsynced writes that keep the mode
and every unknown key, merging with hand edits meworkd has not read, never overwriting a file that
does not parse, and recognising its own writes."""

import errno
import json
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meworkd.base.errors import MeworkError, SettingsUnreadable
from meworkd.base.events import EventBus, Subscription
from meworkd.settings import DEFAULT_DOCUMENT
from meworkd.settings import edits as registry
from meworkd.settings import files as store_module
from meworkd.settings.store import SettingsStore
from tests.daemon_fixture import (
    DocModel,
    assert_unknown_keys_survived,
    documents_with_unknown_keys,
    expect_op,
    read_doc,
    registry_ops,
)

pytestmark = pytest.mark.anyio


def settings_path(root: Path) -> Path:
    return root / "cfg" / "mework" / "settings.json"


def write_doc(path: Path, doc: object, mode: int = 0o600) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=4))
    path.chmod(mode)


def open_store(path: Path) -> tuple[SettingsStore, EventBus]:
    bus = EventBus()
    store = SettingsStore(path, bus)
    store.open()
    return store, bus


async def drain(bus: EventBus, sub: Subscription) -> list[tuple[str, dict[str, Any]]]:
    """Every event published so far: publish a sentinel and read up to it."""
    bus.publish("server.log", {"sentinel": True})
    seen: list[tuple[str, dict[str, Any]]] = []
    with anyio.fail_after(5):
        async for event in sub:
            if event.data.get("sentinel"):
                return seen
            seen.append((event.topic, event.data))
    raise AssertionError("subscription ended")


def add(name: str, **entry: Any) -> Callable[[dict[str, Any]], object]:
    return lambda doc: registry.add_server(doc, name, entry or {"command": "x"})


# --- creation ------------------------------------------------------------------------------


async def test_open_creates_a_minimal_valid_file_0600_in_a_0700_dir(short_tmp: Path) -> None:
    path = settings_path(short_tmp)
    store, _bus = open_store(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert read_doc(path) == DEFAULT_DOCUMENT
    assert store.settings.servers == {}
    assert store.settings.errors == ()
    assert store.unreadable is None
    assert not list(path.parent.glob(".*tmp"))


async def test_open_does_not_rewrite_an_existing_file(short_tmp: Path) -> None:
    path = settings_path(short_tmp)
    path.parent.mkdir(parents=True)
    text = '{"zz": 1, "assets": {"mcpServers": {"s": {"command": "c"}}}}'
    path.write_text(text)
    before = path.stat()
    store, _bus = open_store(path)
    assert path.read_text() == text
    assert path.stat().st_ino == before.st_ino
    assert list(store.settings.servers) == ["s"]


async def test_open_on_a_file_that_is_not_json_keeps_it_and_reports(short_tmp: Path) -> None:
    path = settings_path(short_tmp)
    path.parent.mkdir(parents=True)
    path.write_text("{ not json")
    store, _bus = open_store(path)
    assert store.unreadable is not None
    assert "line 1, column 3" in store.unreadable
    assert path.read_text() == "{ not json"


# --- writes --------------------------------------------------------------------------------


async def test_mutate_keeps_unknown_keys_with_value_and_order(short_tmp: Path) -> None:
    path = settings_path(short_tmp)
    doc = {
        "zeta": {"nested": [1, 2.5, None, True, "ü"]},
        "assets": {
            "x-before": 1,
            "mcpServers": {
                "fs": {"x-first": {"a": [1]}, "command": "npx", "x-last": "é"},
                "web": {"url": "http://127.0.0.1:9/mcp", "x-mid": 0.1, "enabled": True},
            },
            "x-after": [],
        },
        "alpha": "keep me",
        "mcp": {"max_reply_bytes": 1000, "x-mcp-note": "kept"},
        "big": 123456789012345678901234567890,
    }
    write_doc(path, doc)
    store, _bus = open_store(path)
    await store.mutate(add("new", command="n"))
    await store.mutate(lambda d: registry.update_server(d, "fs", {"description": "files"}))
    await store.mutate(lambda d: registry.rename_server(d, "fs", "files"))
    await store.mutate(lambda d: registry.set_mcp_options(d, {"max_reply_bytes": 2000}))
    out = read_doc(path)
    assert list(out) == ["zeta", "assets", "alpha", "mcp", "big"]
    assert out["zeta"] == doc["zeta"]
    assert out["alpha"] == "keep me"
    assert out["big"] == 123456789012345678901234567890
    assert out["mcp"] == {"max_reply_bytes": 2000, "x-mcp-note": "kept"}
    assert list(out["assets"]) == ["x-before", "mcpServers", "x-after"]
    servers = out["assets"]["mcpServers"]
    assert list(servers) == ["files", "web", "new"]
    assert servers["files"] == {
        "type": "stdio",
        "x-first": {"a": [1]},
        "command": "npx",
        "x-last": "é",
        "description": "files",
    }
    assert servers["web"] == doc["assets"]["mcpServers"]["web"]  # untouched entry: as it was


@pytest.mark.parametrize("mode", [0o600, 0o640])
async def test_writes_are_atomic_and_keep_the_mode(short_tmp: Path, mode: int) -> None:
    path = settings_path(short_tmp)
    write_doc(path, {"assets": {"mcpServers": {}}}, mode=mode)
    store, _bus = open_store(path)
    inode = path.stat().st_ino
    with path.open("rb") as old:  # a reader of the old file keeps a complete old document
        await store.mutate(add("s"))
        assert json.loads(old.read()) == {"assets": {"mcpServers": {}}}
    assert path.stat().st_ino != inode  # replaced by rename, not rewritten in place
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert not list(path.parent.glob(".*tmp"))


async def test_writes_are_fsynced_file_and_directory(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = settings_path(short_tmp)
    store, _bus = open_store(path)
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    await store.mutate(add("s"))
    assert len(synced) == 2
    temp, directory = synced
    assert Path(temp).parent == path.parent
    assert Path(temp).name.startswith(".settings.json.")
    assert directory == str(path.parent)


async def test_a_crash_before_the_rename_leaves_the_old_file(short_tmp: Path) -> None:
    path = settings_path(short_tmp)
    write_doc(path, {"keep": True, "assets": {"mcpServers": {}}})
    before = path.read_bytes()
    store, _bus = open_store(path)

    def crash(tmp: Path) -> None:
        assert tmp.exists()
        raise OSError("simulated power loss")

    store.before_rename = crash
    with pytest.raises(OSError, match="simulated"):
        await store.mutate(add("s"))
    assert path.read_bytes() == before
    assert not list(path.parent.glob(".*tmp"))
    assert "s" not in store.settings.servers
    store.before_rename = None
    await store.mutate(add("s"))
    assert list(read_doc(path)["assets"]["mcpServers"]) == ["s"]


async def test_a_failing_change_writes_nothing(short_tmp: Path) -> None:
    path = settings_path(short_tmp)
    store, _bus = open_store(path)
    await store.mutate(add("s"))
    before = path.read_bytes()
    with pytest.raises(MeworkError) as caught:
        await store.mutate(add("s"))
    assert caught.value.kind == "conflict"
    with pytest.raises(MeworkError) as caught:
        await store.mutate(add("t", command="x", timeoutSeconds=0))
    assert caught.value.kind == "invalid_settings"
    assert caught.value.message == "t.timeoutSeconds: expected int > 0"
    assert path.read_bytes() == before


async def test_variables_are_never_written_back_expanded(short_tmp: Path) -> None:
    path = settings_path(short_tmp)
    write_doc(
        path,
        {
            "assets": {
                "mcpServers": {
                    "docs": {"url": "${BASE:-http://h}/mcp", "headers": {"A": "Bearer ${TOK}"}}
                }
            }
        },
    )
    store, _bus = open_store(path)
    await store.mutate(lambda d: registry.update_server(d, "docs", {"description": "x"}))
    await store.mutate(add("fs", command="${HOME}/srv", env={"K": "${TOK}"}))
    servers = read_doc(path)["assets"]["mcpServers"]
    assert servers["docs"]["url"] == "${BASE:-http://h}/mcp"
    assert servers["docs"]["headers"] == {"A": "Bearer ${TOK}"}
    assert servers["fs"]["command"] == "${HOME}/srv"
    assert servers["fs"]["env"] == {"K": "${TOK}"}


# --- hand edits ----------------------------------------------------------------------------


async def test_a_hand_edit_not_yet_read_is_merged_not_clobbered(short_tmp: Path) -> None:
    path = settings_path(short_tmp)
    store, bus = open_store(path)
    with bus.subscribe() as sub:
        doc = read_doc(path)
        doc["assets"]["mcpServers"]["hand"] = {"command": "h"}
        doc["handNote"] = "typed in an editor"
        write_doc(path, doc)  # the watcher is not running: meworkd has not seen this
        await store.mutate(add("rpc"))
        out = read_doc(path)
        assert list(out["assets"]["mcpServers"]) == ["hand", "rpc"]
        assert out["handNote"] == "typed in an editor"
        assert list(store.settings.servers) == ["hand", "rpc"]
        events = await drain(bus, sub)
    reloaded = [data for topic, data in events if topic == "settings.reloaded"]
    assert [(e["source"], e["added"]) for e in reloaded] == [("file", ["hand"]), ("write", ["rpc"])]


async def test_a_hand_edit_landing_during_a_write_is_merged(short_tmp: Path) -> None:
    path = settings_path(short_tmp)
    store, _bus = open_store(path)
    runs: list[int] = []
    edits: list[Path] = []

    def hand_edit(_tmp: Path) -> None:
        # The editor saves after meworkd read the file and before it renames its temp file.
        if not edits:
            doc = read_doc(path)
            doc["assets"]["mcpServers"]["hand"] = {"command": "h"}
            write_doc(path, doc)
            edits.append(path)

    def change(doc: dict[str, Any]) -> None:
        runs.append(1)
        registry.add_server(doc, "rpc", {"command": "r"})

    store.before_rename = hand_edit
    await store.mutate(change)
    assert len(runs) == 2  # the change was applied again on top of the hand edit
    assert list(read_doc(path)["assets"]["mcpServers"]) == ["hand", "rpc"]
    assert list(store.settings.servers) == ["hand", "rpc"]


async def test_a_file_deleted_during_a_write_is_written_again(short_tmp: Path) -> None:
    path = settings_path(short_tmp)
    store, _bus = open_store(path)
    await store.mutate(add("s"))
    store.before_rename = lambda _tmp: path.unlink()
    await store.mutate(add("t"))
    assert list(read_doc(path)["assets"]["mcpServers"]) == ["s", "t"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left


async def test_without_rename_exchange_writes_fall_back_to_rename(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Some file systems (older kernels, some FUSE ones) refuse RENAME_EXCHANGE with EINVAL."""
    path = settings_path(short_tmp)
    store, _bus = open_store(path)

    def unsupported(a: Path, b: Path) -> None:
        raise OSError(errno.EINVAL, os.strerror(errno.EINVAL), str(b))

    monkeypatch.setattr(store_module, "_exchange", unsupported)
    await store.mutate(add("s"))
    assert list(read_doc(path)["assets"]["mcpServers"]) == ["s"]
    assert [p.name for p in path.parent.iterdir()] == [path.name]


async def test_a_broken_hand_edit_landing_during_a_write_is_not_overwritten(
    short_tmp: Path,
) -> None:
    path = settings_path(short_tmp)
    store, _bus = open_store(path)

    def break_it(_tmp: Path) -> None:
        path.write_text('{"assets": ')

    store.before_rename = break_it
    with pytest.raises(SettingsUnreadable) as caught:
        await store.mutate(add("rpc"))
    assert path.read_text() == '{"assets": '
    assert caught.value.kind == "settings_unreadable"
    assert "will not overwrite" in caught.value.message


async def test_a_file_that_is_not_json_is_never_overwritten(short_tmp: Path) -> None:
    path = settings_path(short_tmp)
    store, bus = open_store(path)
    await store.mutate(add("s"))
    with bus.subscribe() as sub:
        path.write_text('{"assets": {"mcpServers": {"s": {"command": "x"},/*}}}')
        broken = path.read_bytes()
        assert await store.reload("file") is None
        with pytest.raises(SettingsUnreadable) as caught:
            await store.mutate(add("t"))
        assert "line 1, column 50" in caught.value.message
        assert caught.value.data == {"path": str(path)}
        assert path.read_bytes() == broken
        assert list(store.settings.servers) == ["s"]  # nothing changed
        events = await drain(bus, sub)
    assert [topic for topic, _ in events] == ["settings.invalid"]
    assert "not valid JSON" in events[0][1]["error"]
    # Fixed by hand: it applies, and writing works again.
    path.write_text('{"assets": {"mcpServers": {"s": {"command": "x"}, "u": {"command": "u"}}}}')
    diff = await store.reload("file")
    assert diff is not None
    assert diff.added == ("u",)
    assert store.unreadable is None
    await store.mutate(add("t"))
    assert list(read_doc(path)["assets"]["mcpServers"]) == ["s", "u", "t"]


async def test_own_writes_are_not_reloads(short_tmp: Path) -> None:
    path = settings_path(short_tmp)
    store, bus = open_store(path)
    with bus.subscribe() as sub:
        await store.mutate(add("s"))
        assert await store.reload("file") is None  # what the watcher does after our write
        events = await drain(bus, sub)
    assert [(t, d["source"]) for t, d in events] == [("settings.reloaded", "write")]


async def test_a_missing_file_keeps_the_last_good_settings(short_tmp: Path) -> None:
    path = settings_path(short_tmp)
    store, _bus = open_store(path)
    await store.mutate(add("s"))
    path.unlink()
    assert await store.reload("file") is None
    assert list(store.settings.servers) == ["s"]


# --- property: unknown keys survive any sequence of registry operations --------------------


def change_for(op: tuple[Any, ...]) -> Callable[[dict[str, Any]], object]:
    kind, *args = op
    if kind == "add":
        return add(args[0], command="added")
    if kind == "update":
        return lambda d: registry.update_server(d, args[0], args[1])
    if kind == "rename":
        return lambda d: registry.rename_server(d, args[0], args[1])
    if kind == "remove":
        return lambda d: registry.remove_server(d, args[0])
    if kind == "tool":
        return lambda d: registry.set_tool_flag(
            d, args[0], args[1], key="disabledTools", on=not args[2]
        )
    if kind == "mcp":
        return lambda d: registry.set_mcp_options(d, {"max_reply_bytes": args[0]})
    return lambda d: registry.set_preset(d, args[0], {"mcpServers": args[1]})


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=documents_with_unknown_keys(), ops=registry_ops, indent=st.sampled_from([None, 2]))
async def test_unknown_keys_survive_registry_operations(
    case: tuple[dict[str, Any], DocModel], ops: list[tuple[Any, ...]], indent: int | None
) -> None:
    doc, model = case
    with tempfile.TemporaryDirectory(prefix="mw-", dir="/tmp") as d:
        path = Path(d) / "settings.json"
        path.write_text(json.dumps(doc, indent=indent))
        path.chmod(0o640)
        store, _bus = open_store(path)
        for op in ops:
            expected_error = expect_op(op, model)
            before = path.read_bytes()
            failed: str | None = None
            try:
                await store.mutate(change_for(op))
            except MeworkError as exc:
                failed = exc.kind
            assert failed == expected_error, op
            if failed is not None:
                assert path.read_bytes() == before  # a failed operation writes nothing
            assert_unknown_keys_survived(read_doc(path), model)
        assert stat.S_IMODE(path.stat().st_mode) == 0o640
