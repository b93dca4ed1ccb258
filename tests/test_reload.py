"""Hot reload against a real daemon on a real socket: hand edits of every kind, what the events
say, last good definitions of invalid servers, a file that is not JSON, and meworkd's own writes."""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mework_client import RpcError
from mework_client.aio import AsyncClient

from tests.common import document
from tests.daemon_fixture import (
    assert_clean_error,
    daemon_and_client,
    make_env,
    raw_session,
    read_doc,
    replace_atomically,
    write_in_place,
)

pytestmark = pytest.mark.anyio

TOPICS = ["settings.reloaded", "settings.invalid"]
EVENT_KEYS = {"source", "added", "removed", "connectionChanged", "policyChanged", "invalid"}
Event = tuple[str, dict[str, Any]]


def dump(doc: object) -> str:
    return json.dumps(doc, indent=2)


async def events_until(
    client: AsyncClient, done: Callable[[str, dict[str, Any]], bool]
) -> list[Event]:
    """Events received until (and including) the first one for which ``done`` is true."""
    seen: list[Event] = []
    with anyio.fail_after(5):
        while True:
            topic, data = await client.next_event()
            seen.append((topic, data))
            if done(topic, data):
                return seen


async def next_reload(client: AsyncClient, source: str = "file") -> dict[str, Any]:
    events = await events_until(
        client, lambda t, d: t == "settings.reloaded" and d["source"] == source
    )
    data = events[-1][1]
    assert set(data) == EVENT_KEYS
    return data


async def servers_by_name(client: AsyncClient) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in (await client.call("servers.list"))["servers"]}


# --- valid edits ---------------------------------------------------------------------------


@pytest.mark.parametrize("save", [replace_atomically, write_in_place], ids=["replace", "in-place"])
async def test_a_valid_hand_edit_is_applied(
    short_tmp: Path, save: Callable[[Path, str], None]
) -> None:
    env = make_env(short_tmp, document({"a": {"command": "a"}}))
    async with daemon_and_client(env, topics=TOPICS) as (_daemon, client):
        save(env.settings, dump(document({"a": {"command": "a"}, "b": {"url": "http://h/mcp"}})))
        # An in-place save may be seen half-written (truncated) first: wait for the full one.
        events = await events_until(
            client, lambda t, d: t == "settings.reloaded" and d["added"] == ["b"]
        )
        assert events[-1][1] == {
            "source": "file",
            "added": ["b"],
            "removed": [],
            "connectionChanged": [],
            "policyChanged": [],
            "invalid": [],
        }
        servers = await servers_by_name(client)
        assert servers["b"]["type"] == "streamable_http"
        assert servers["b"]["url"] == "http://h/mcp"


async def test_the_event_tells_added_removed_connection_and_policy_changes(
    short_tmp: Path,
) -> None:
    before = {
        "gone": {"command": "g"},
        "cmd": {"command": "c"},
        "args": {"command": "c", "args": ["1"]},
        "env": {"command": "c", "env": {"K": "1"}},
        "hdr": {"url": "http://h/mcp", "headers": {"K": "1"}},
        "pol": {"command": "c"},
        "tools": {"command": "c"},
        "same": {"command": "c"},
    }
    after = {
        "cmd": {"command": "d"},
        "args": {"command": "c", "args": ["2"]},
        "env": {"command": "c", "env": {"K": "2"}},
        "hdr": {"url": "http://h/mcp", "headers": {"K": "2"}},
        "pol": {"command": "c", "enabled": False, "description": "x", "timeoutSeconds": 9},
        "tools": {"command": "c", "disabledTools": ["t"], "longRunning": True},
        "same": {"command": "c", "x-unknown": "only an unknown key changed"},
        "new": {"command": "n"},
    }
    env = make_env(short_tmp, document(before))
    async with daemon_and_client(env, topics=TOPICS) as (_daemon, client):
        replace_atomically(env.settings, dump(document(after)))
        event = await next_reload(client)
        assert event == {
            "source": "file",
            "added": ["new"],
            "removed": ["gone"],
            "connectionChanged": ["cmd", "args", "env", "hdr"],
            "policyChanged": ["pol", "tools"],
            "invalid": [],
        }
        servers = await servers_by_name(client)
        assert servers["pol"]["enabled"] is False
        assert servers["pol"]["status"] == "disabled"
        assert servers["pol"]["timeoutSeconds"] == 9
        assert "gone" not in servers


async def test_several_saves_in_quick_succession_lose_nothing(short_tmp: Path) -> None:
    env = make_env(short_tmp, document({}))
    names = [f"s{i}" for i in range(12)]
    async with daemon_and_client(env, topics=TOPICS) as (_daemon, client):
        for i in range(len(names)):
            servers = {n: {"command": n} for n in names[: i + 1]}
            save = replace_atomically if i % 2 else write_in_place
            save(env.settings, dump(document(servers)))
        added: list[str] = []
        removed: list[str] = []

        def complete(topic: str, data: dict[str, Any]) -> bool:
            if topic == "settings.reloaded":
                added.extend(data["added"])
                removed.extend(data["removed"])
            return topic == "settings.reloaded" and names[-1] in data["added"]

        await events_until(client, complete)
        assert list(await servers_by_name(client)) == names
        # Coalesced or not, each server arrived once and in order. (An in-place save seen
        # half-written is not JSON: it is reported and changes nothing, so removes nothing.)
        assert added == names
        assert removed == []


async def test_a_hand_edit_of_unknown_keys_only_changes_no_server(short_tmp: Path) -> None:
    env = make_env(short_tmp, document({"a": {"command": "a"}}, note=1))
    async with daemon_and_client(env, topics=TOPICS) as (_daemon, client):
        replace_atomically(env.settings, dump(document({"a": {"command": "a"}}, note=2)))
        event = await next_reload(client)
        assert not any(event[k] for k in EVENT_KEYS - {"source"})
        settings = await client.call("settings.get")
        assert settings["document"]["note"] == 2


async def test_a_server_defined_twice_by_hand_is_reported(short_tmp: Path) -> None:
    """A JSON parser keeps the last of two equal keys; the user is told which one was dropped."""
    env = make_env(short_tmp, document({"a": {"command": "a"}}))
    async with daemon_and_client(env, topics=TOPICS) as (_daemon, client):
        text = (
            '{"assets": {"mcpServers": {"fs": {"command": "first"}, "a": {"command": "a"}, '
            '"fs": {"command": "second"}}}}'
        )
        replace_atomically(env.settings, text)
        events = await events_until(client, lambda t, _d: t == "settings.invalid")
        (message,) = events[-1][1]["errors"]
        assert message.startswith("assets.mcpServers: 'fs' appears more than once")
        assert "only the last is used" in message
        servers = await servers_by_name(client)
        assert servers["fs"]["command"] == "second"
        assert (await client.call("settings.get"))["errors"] == [message]
        # meworkd's next write keeps the last one only, and the warning goes with it.
        await client.call("servers.update", {"name": "a", "patch": {"args": ["1"]}})
        assert (await client.call("settings.get"))["errors"] == []


async def test_a_deleted_file_keeps_the_last_good_settings(short_tmp: Path) -> None:
    env = make_env(short_tmp, document({"a": {"command": "a"}}))
    async with daemon_and_client(env, topics=TOPICS) as (_daemon, client):
        env.settings.unlink()
        reply = await client.call("settings.reload")  # nothing to read: nothing changes
        assert list(await servers_by_name(client)) == ["a"]
        assert reply["applied"] is True
        env.settings.write_text(dump(document({"a": {"command": "a"}, "b": {"command": "b"}})))
        event = await next_reload(client)
        assert event["added"] == ["b"]


# --- invalid entries -----------------------------------------------------------------------


async def test_one_invalid_server_among_valid_ones(short_tmp: Path) -> None:
    env = make_env(short_tmp, document({"a": {"command": "a"}, "b": {"command": "b-old"}}))
    async with daemon_and_client(env, topics=TOPICS) as (_daemon, client):
        replace_atomically(
            env.settings,
            dump(
                document(
                    {
                        "a": {"command": "a", "description": "now described"},
                        "b": {"command": "b-new", "timeoutSeconds": 0},
                        "c": {"command": "c"},
                        "d": {"type": "sse", "url": "http://h/sse"},
                    }
                )
            ),
        )
        events = await events_until(client, lambda t, d: t == "settings.reloaded")
        assert [t for t, _ in events] == ["settings.invalid", "settings.reloaded"]
        invalid = events[0][1]
        assert invalid["source"] == "file"
        assert invalid["servers"]["b"] == "b.timeoutSeconds: expected int > 0"
        assert invalid["servers"]["d"].startswith("d.type: ")
        assert "HTTP+SSE" in invalid["servers"]["d"]
        assert "streamable_http" in invalid["servers"]["d"]
        assert events[1][1] == {
            "source": "file",
            "added": ["c"],
            "removed": [],
            "connectionChanged": [],
            "policyChanged": ["a"],
            "invalid": ["b", "d"],
        }
        servers = await servers_by_name(client)
        assert servers["a"]["description"] == "now described"
        assert "error" not in servers["a"]
        # b keeps its last good definition, with the error shown.
        assert servers["b"]["command"] == "b-old"
        assert servers["b"]["status"] == "enabled"
        assert servers["b"]["error"] == "b.timeoutSeconds: expected int > 0"
        # d never had a good definition: it is listed as invalid.
        assert servers["d"]["status"] == "invalid"
        assert servers["d"]["type"] is None
        assert "HTTP+SSE" in servers["d"]["error"]
        got = await client.call("servers.get", {"name": "b"})
        assert got["error"] == "b.timeoutSeconds: expected int > 0"
        assert got["server"]["command"] == "b-new"  # the raw entry as it is in the file
        settings = await client.call("settings.get")
        assert set(settings["serverErrors"]) == {"b", "d"}

        # Fixing b applies its new definition as a connection change.
        replace_atomically(
            env.settings,
            dump(
                document(
                    {
                        "a": {"command": "a", "description": "now described"},
                        "b": {"command": "b-new"},
                        "c": {"command": "c"},
                    }
                )
            ),
        )
        event = await next_reload(client)
        assert event["connectionChanged"] == ["b"]
        assert event["invalid"] == []
        servers = await servers_by_name(client)
        assert servers["b"]["command"] == "b-new"
        assert "error" not in servers["b"]
        assert "d" not in servers


async def test_an_rpc_write_keeps_an_invalid_entry_as_the_user_wrote_it(short_tmp: Path) -> None:
    env = make_env(short_tmp, document({"bad": {"command": "b", "timeoutSeconds": -1, "x": 1}}))
    async with daemon_and_client(env, topics=TOPICS) as (_daemon, client):
        await client.call("servers.add", {"name": "ok", "server": {"command": "ok"}})
        servers = read_doc(env.settings)["assets"]["mcpServers"]
        assert servers["bad"] == {"command": "b", "timeoutSeconds": -1, "x": 1}
        assert list(servers) == ["bad", "ok"]


# --- not JSON ------------------------------------------------------------------------------


async def test_a_file_that_is_not_json_changes_nothing_and_is_not_overwritten(
    short_tmp: Path,
) -> None:
    env = make_env(short_tmp, document({"a": {"command": "a"}}))
    async with daemon_and_client(env, topics=TOPICS) as (_daemon, client):
        broken = '{\n  "assets": {"mcpServers": {"a": {"command": "a"}, "b": }}\n}\n'
        replace_atomically(env.settings, broken)
        events = await events_until(client, lambda t, d: t == "settings.invalid")
        assert [t for t, _ in events] == ["settings.invalid"]
        error = events[0][1]["error"]
        assert "not valid JSON" in error
        column = broken.splitlines()[1].index('"b": }') + len('"b": ') + 1
        assert f"line 2, column {column}" in error
        assert list(await servers_by_name(client)) == ["a"]
        status = await client.call("daemon.status")
        assert status["settingsError"] == error
        assert (await client.call("settings.get"))["unreadable"] == error

        writes = [
            ("servers.add", {"name": "b", "server": {"command": "b"}}),
            ("servers.update", {"name": "a", "patch": {"description": "x"}}),
            ("servers.remove", {"name": "a"}),
            ("servers.rename", {"name": "a", "newName": "z"}),
            ("servers.import", {"text": '{"mcpServers": {"i": {"command": "i"}}}'}),
            ("servers.setToolEnabled", {"name": "a", "tool": "t", "enabled": False}),
            ("settings.setMcpOptions", {"max_reply_bytes": 10}),
            ("presets.set", {"name": "p", "preset": {}}),
        ]
        for method, params in writes:
            with pytest.raises(RpcError) as caught:
                await client.call(method, params)
            assert caught.value.kind == "settings_unreadable", method
            assert caught.value.code == -32063
            assert "will not overwrite" in caught.value.message
            assert env.settings.read_text() == broken

        reload = await client.call("settings.reload")
        assert reload["applied"] is False
        assert "not valid JSON" in reload["error"]
        assert env.settings.read_text() == broken

        # Once it parses again it applies, and writes work.
        replace_atomically(
            env.settings, dump(document({"a": {"command": "a"}, "b": {"command": "b"}}))
        )
        event = await next_reload(client)
        assert event["added"] == ["b"]
        assert (await client.call("daemon.status"))["settingsError"] is None
        await client.call("servers.add", {"name": "c", "server": {"command": "c"}})
        assert list(read_doc(env.settings)["assets"]["mcpServers"]) == ["a", "b", "c"]


async def test_the_settings_unreadable_error_reply_is_clean(short_tmp: Path) -> None:
    env = make_env(short_tmp, document({}))
    async with daemon_and_client(env, topics=TOPICS) as (_daemon, client):
        replace_atomically(env.settings, "[not, json")
        await events_until(client, lambda t, d: t == "settings.invalid")
        async with raw_session(env.socket) as raw:
            reply = await raw.exchange(
                b'{"jsonrpc":"2.0","id":7,"method":"servers.add",'
                b'"params":{"name":"x","server":{"command":"x"}}}\n'
            )
        assert_clean_error(reply, code=-32063, kind="settings_unreadable")
        assert reply["id"] == 7
        assert reply["error"]["data"]["path"] == str(env.settings)


# --- meworkd's own writes ------------------------------------------------------------------


async def test_own_writes_do_not_trigger_a_file_reload(short_tmp: Path) -> None:
    env = make_env(short_tmp, document({}))
    async with daemon_and_client(env, topics=TOPICS) as (daemon, client):
        watcher_reloads: list[object] = []
        watcher_ran = anyio.Event()
        reload = daemon.store.reload

        async def observed_reload(source: str) -> Any:
            result = await reload(source)
            if source == "file":
                watcher_reloads.append(result)
                watcher_ran.set()
            return result

        daemon.store.reload = observed_reload  # type: ignore[method-assign]
        await client.call("servers.add", {"name": "s", "server": {"command": "s"}})
        assert list(read_doc(env.settings)["assets"]["mcpServers"]) == ["s"]
        with anyio.fail_after(5):
            await watcher_ran.wait()  # the watcher saw our rename ...
        assert watcher_reloads[0] is None  # ... and recognised it as our own write
        # A hand edit afterwards is the next file event: nothing came in between.
        replace_atomically(
            env.settings, dump(document({"s": {"command": "s"}, "marker": {"command": "m"}}))
        )
        events = await events_until(
            client, lambda t, d: t == "settings.reloaded" and d["source"] == "file"
        )
        reloads = [(d["source"], d["added"]) for t, d in events if t == "settings.reloaded"]
        assert reloads == [("write", ["s"]), ("file", ["marker"])]


async def test_an_edit_while_an_rpc_write_is_in_flight_loses_nothing(short_tmp: Path) -> None:
    env = make_env(short_tmp, document({"a": {"command": "a"}}, keep="me"))
    async with daemon_and_client(env, topics=TOPICS) as (daemon, client):
        edited: list[bool] = []

        def hand_edit(_tmp: Path) -> None:
            # Runs in meworkd's write, after it read the file and before its rename.
            if not edited:
                doc = read_doc(env.settings)
                doc["assets"]["mcpServers"]["hand"] = {"command": "h"}
                doc["handNote"] = "saved from an editor"
                replace_atomically(env.settings, dump(doc))
                edited.append(True)

        daemon.store.before_rename = hand_edit
        reply = await client.call("servers.add", {"name": "rpc", "server": {"command": "r"}})
        assert reply["name"] == "rpc"
        assert edited == [True]
        doc = read_doc(env.settings)
        assert list(doc["assets"]["mcpServers"]) == ["a", "hand", "rpc"]
        assert doc["keep"] == "me"
        assert doc["handNote"] == "saved from an editor"
        assert list(await servers_by_name(client)) == ["a", "hand", "rpc"]


async def test_concurrent_rpc_writes_all_land(short_tmp: Path) -> None:
    env = make_env(short_tmp, document({}))
    async with daemon_and_client(env) as (_daemon, client):
        names = [f"n{i}" for i in range(20)]
        async with anyio.create_task_group() as tg:
            for name in names:
                tg.start_soon(
                    client.call, "servers.add", {"name": name, "server": {"command": "x"}}
                )
        assert sorted(read_doc(env.settings)["assets"]["mcpServers"]) == sorted(names)


# --- explicit reloads ----------------------------------------------------------------------


async def test_settings_reload_rpc_reloads_and_reports(short_tmp: Path) -> None:
    env = make_env(short_tmp, document({"a": {"command": "a"}}))
    async with daemon_and_client(env, topics=TOPICS) as (_daemon, client):
        reply = await client.call("settings.reload")
        assert reply == {
            "applied": True,
            "error": None,
            "added": [],
            "removed": [],
            "connectionChanged": [],
            "policyChanged": [],
            "invalid": [],
        }
        event = await next_reload(client, source="rpc")
        assert not any(event[k] for k in EVENT_KEYS - {"source"})
