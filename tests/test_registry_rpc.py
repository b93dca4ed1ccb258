"""The registry methods over the real socket: every mutation is on disk when the reply arrives,
keeps unknown keys and positions, masks secrets unless asked; plus a property test of the round
trip through a real meworkd process."""

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from mework_client import Client, RpcError
from mework_client.aio import AsyncClient

from meworkd.app.daemon import Daemon
from meworkd.base.events import TOPICS
from tests.daemon_fixture import (
    DaemonEnv,
    DocModel,
    assert_unknown_keys_survived,
    daemon_and_client,
    documents_with_unknown_keys,
    expect_op,
    make_env,
    read_doc,
    registry_ops,
    replace_atomically,
    rpc_for_op,
    spawn_meworkd,
    stop_process,
    wait_for_socket,
)

SECRET_ENV = "sk-live-0123456789"
SECRET_HEADER = "tok-abcdef-987654"

INITIAL = {
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


def servers_on_disk(env: DaemonEnv) -> dict[str, Any]:
    return read_doc(env.settings)["assets"]["mcpServers"]  # type: ignore[no-any-return]


async def error_of(client: AsyncClient, method: str, params: dict[str, Any]) -> RpcError:
    with pytest.raises(RpcError) as caught:
        await client.call(method, params)
    return caught.value


@pytest.fixture
def env(short_tmp: Path) -> DaemonEnv:
    return make_env(short_tmp, INITIAL)


@pytest.mark.anyio
async def test_status_get_list_and_export(env: DaemonEnv) -> None:
    async with daemon_and_client(env) as (_daemon, client):
        status = await client.call("daemon.status")
        assert status["pid"] == os.getpid()
        assert status["settingsPath"] == str(env.settings)
        assert status["socketPath"] == str(env.socket)
        assert status["stateDir"] == str(env.state_dir)
        assert status["servers"] == 3
        assert status["serversEnabled"] == 3
        assert status["uptimeSeconds"] >= 0
        assert status["connections"] >= 1
        assert status["settingsError"] is None
        for key in ("version", "sessions", "conversations"):
            assert key in status

        listed = (await client.call("servers.list"))["servers"]
        assert [s["name"] for s in listed] == ["first", "fs", "last"]
        assert [s["type"] for s in listed] == ["stdio", "stdio", "streamable_http"]
        assert all(s["status"] == "enabled" for s in listed)
        assert SECRET_ENV not in json.dumps(listed)

        got = await client.call("servers.get", {"name": "fs"})
        assert got["description"] == "Local files"
        assert got["server"]["env"] == {"API_KEY": "********", "FROM_ENV": "${HOME}"}
        assert got["server"]["x-after"] == {"nested": ["a"]}
        revealed = await client.call("servers.get", {"name": "fs", "reveal": True})
        assert revealed["server"]["env"]["API_KEY"] == SECRET_ENV

        document = await client.call("settings.get")
        assert document["path"] == str(env.settings)
        assert document["document"]["x-top"] == {"keep": True}
        assert document["document"]["assets"]["mcpServers"]["fs"]["env"]["API_KEY"] == "********"
        assert document["mcp"]["max_reply_bytes"] == 65536
        assert SECRET_ENV not in json.dumps(document)

        exported = await client.call("servers.export")
        assert list(exported["mcpServers"]) == ["first", "fs", "last"]
        assert exported["mcpServers"]["fs"]["env"]["API_KEY"] == "********"
        revealed = await client.call("servers.export", {"reveal": True})
        assert revealed["mcpServers"]["fs"] == INITIAL["assets"]["mcpServers"]["fs"]  # type: ignore[index]

        subscribed = await client.call("events.subscribe")
        assert subscribed["topics"] == sorted(TOPICS)
        subscribed = await client.call("events.subscribe", {"topics": ["settings.invalid"]})
        assert subscribed["topics"] == ["settings.invalid"]


@pytest.mark.anyio
async def test_add_is_on_disk_before_the_reply_and_secrets_stay_masked(env: DaemonEnv) -> None:
    async with daemon_and_client(env, topics=sorted(TOPICS)) as (_daemon, client):
        reply = await client.call(
            "servers.add",
            {
                "name": "docs",
                "server": {
                    "type": "streamableHttp",
                    "url": "https://docs.example/mcp",
                    "headers": {"Authorization": f"Bearer {SECRET_HEADER}", "X-Ref": "${TOK}"},
                    "timeoutSeconds": 30,
                    "x-mine": "kept",
                },
            },
        )
        on_disk = servers_on_disk(env)
        assert list(on_disk) == ["first", "fs", "last", "docs"]
        assert on_disk["docs"] == {
            "type": "streamable_http",
            "url": "https://docs.example/mcp",
            "headers": {"Authorization": f"Bearer {SECRET_HEADER}", "X-Ref": "${TOK}"},
            "timeoutSeconds": 30,
            "x-mine": "kept",
        }
        assert reply["type"] == "streamable_http"
        assert reply["timeoutSeconds"] == 30
        assert SECRET_HEADER not in json.dumps(reply)
        got = await client.call("servers.get", {"name": "docs"})
        assert got["server"]["headers"] == {"Authorization": "********", "X-Ref": "${TOK}"}
        with anyio.fail_after(5):
            _topic, data = await client.next_event("settings.reloaded")
        assert data["source"] == "write"
        assert data["added"] == ["docs"]
        assert SECRET_HEADER not in json.dumps(data)
        for method in ("servers.list", "settings.get", "servers.export"):
            assert SECRET_HEADER not in json.dumps(await client.call(method)), method

        # Every spelling of HTTP, and url without a type, becomes streamable_http.
        for i, spelling in enumerate(["http", "streamable-http", "streamable_http", None]):
            server: dict[str, Any] = {"url": f"http://h/{i}"}
            if spelling:
                server["type"] = spelling
            await client.call("servers.add", {"name": f"h{i}", "server": server})
            assert servers_on_disk(env)[f"h{i}"]["type"] == "streamable_http"
        error = await error_of(
            client, "servers.add", {"name": "old", "server": {"type": "sse", "url": "http://h"}}
        )
        assert error.kind == "invalid_settings"
        assert "HTTP+SSE" in error.message
        assert "streamable_http" in error.message
        error = await error_of(client, "servers.add", {"name": "fs", "server": {"command": "c"}})
        assert error.kind == "conflict"
        assert "old" not in servers_on_disk(env)


@pytest.mark.anyio
async def test_update_merges_and_keeps_unknown_keys(env: DaemonEnv) -> None:
    async with daemon_and_client(env) as (_daemon, client):
        reply = await client.call(
            "servers.update",
            {
                "name": "fs",
                "patch": {"description": None, "timeoutSeconds": 5, "enabled": False, "x-new": 1},
            },
        )
        assert reply["enabled"] is False
        assert reply["status"] == "disabled"
        assert reply["description"] is None
        fs = servers_on_disk(env)["fs"]
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
        await client.call(
            "servers.update", {"name": "first", "patch": {"command": None, "url": "http://h/mcp"}}
        )
        assert servers_on_disk(env)["first"] == {
            "type": "streamable_http",
            "x-entry": [1, 2],
            "url": "http://h/mcp",
        }

        before = env.settings.read_bytes()
        error = await error_of(
            client, "servers.update", {"name": "fs", "patch": {"timeoutSeconds": 0}}
        )
        assert error.kind == "invalid_settings"
        assert error.message == "fs.timeoutSeconds: expected int > 0"
        error = await error_of(client, "servers.update", {"name": "fs", "patch": {"command": None}})
        assert error.message == "fs.command: required for a stdio server"
        error = await error_of(client, "servers.update", {"name": "nope", "patch": {}})
        assert error.kind == "server_not_found"
        assert env.settings.read_bytes() == before


@pytest.mark.anyio
async def test_rename_keeps_position_and_everything_else(env: DaemonEnv) -> None:
    async with daemon_and_client(env) as (_daemon, client):
        before = servers_on_disk(env)
        reply = await client.call("servers.rename", {"name": "fs", "newName": "files"})
        assert reply["name"] == "files"
        doc = read_doc(env.settings)
        after = doc["assets"]["mcpServers"]
        assert list(after) == ["first", "files", "last"]
        assert after["files"] == before["fs"]  # byte for byte in meaning and key order
        assert list(after["files"]) == list(before["fs"])
        assert doc["presets"]["research"]["mcpServers"] == ["files", "last"]
        assert list(doc) == list(INITIAL)
        listed = [s["name"] for s in (await client.call("servers.list"))["servers"]]
        assert listed == ["first", "files", "last"]

        error = await error_of(client, "servers.rename", {"name": "files", "newName": "last"})
        assert error.kind == "conflict"
        error = await error_of(client, "servers.rename", {"name": "fs", "newName": "x"})
        assert error.kind == "server_not_found"
        error = await error_of(client, "servers.rename", {"name": "files", "newName": " "})
        assert error.kind == "invalid_params"
        unchanged = env.settings.read_bytes()
        await client.call("servers.rename", {"name": "files", "newName": "files"})
        assert read_doc(env.settings) == json.loads(unchanged)


@pytest.mark.anyio
async def test_remove_tools_presets_and_mcp_options(env: DaemonEnv) -> None:
    async with daemon_and_client(env) as (_daemon, client):
        reply = await client.call("servers.remove", {"name": "last"})
        assert reply["removed"] == "last"
        doc = read_doc(env.settings)
        assert list(doc["assets"]["mcpServers"]) == ["first", "fs"]
        assert doc["presets"]["research"]["mcpServers"] == ["fs"]

        reply = await client.call(
            "servers.setToolEnabled", {"name": "fs", "tool": "write_file", "enabled": False}
        )
        assert reply["disabledTools"] == ["write_file"]
        assert servers_on_disk(env)["fs"]["disabledTools"] == ["write_file"]
        reply = await client.call(
            "servers.setToolAutoApprove", {"name": "fs", "tool": "move_file", "autoApprove": False}
        )
        assert reply["disabledAutoApproveTools"] == ["move_file"]
        assert servers_on_disk(env)["fs"]["disabledAutoApproveTools"] == ["move_file"]
        got = await client.call("servers.get", {"name": "fs"})
        assert got["disabledTools"] == ["write_file"]
        assert got["disabledAutoApproveTools"] == ["move_file"]
        await client.call(
            "servers.setToolEnabled", {"name": "fs", "tool": "write_file", "enabled": True}
        )
        await client.call(
            "servers.setToolAutoApprove", {"name": "fs", "tool": "move_file", "autoApprove": True}
        )
        fs = servers_on_disk(env)["fs"]
        assert "disabledTools" not in fs
        assert "disabledAutoApproveTools" not in fs

        presets = (await client.call("presets.list"))["presets"]
        assert presets == [{"name": "research", "mcpServers": ["fs"], "approvalLevel": "plan"}]
        reply = await client.call(
            "presets.set",
            {"name": "quick", "preset": {"mcpServers": ["first"], "approvalLevel": "full_access"}},
        )
        assert reply == {"name": "quick", "mcpServers": ["first"], "approvalLevel": "full_access"}
        assert read_doc(env.settings)["presets"]["quick"] == {
            "mcpServers": ["first"],
            "approvalLevel": "full_access",
        }
        error = await error_of(
            client, "presets.set", {"name": "bad", "preset": {"approvalLevel": "yolo"}}
        )
        assert error.kind == "invalid_settings"
        await client.call("presets.remove", {"name": "research"})
        assert list(read_doc(env.settings)["presets"]) == ["quick"]
        error = await error_of(client, "presets.remove", {"name": "research"})
        assert error.kind == "preset_not_found"

        reply = await client.call(
            "settings.setMcpOptions", {"max_reply_bytes": 1024, "session_idle_minutes": 5}
        )
        assert reply["mcp"]["max_reply_bytes"] == 1024
        assert read_doc(env.settings)["mcp"] == {"max_reply_bytes": 1024, "session_idle_minutes": 5}
        error = await error_of(client, "settings.setMcpOptions", {"approval_timeout_seconds": 0})
        assert error.kind == "invalid_settings"
        assert read_doc(env.settings)["mcp"]["max_reply_bytes"] == 1024

        doc = read_doc(env.settings)
        assert doc["x-top"] == {"keep": True}
        assert doc["z-last"] == "end"
        assert doc["assets"]["x-assets"] == 1
        assert list(doc)[:2] == ["x-top", "assets"]


@pytest.mark.anyio
async def test_daemon_shutdown_stops_it_cleanly(env: DaemonEnv) -> None:
    daemon = Daemon(env.paths, environ={})
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            await tg.start(daemon.run)
            assert env.socket.exists()
            client = Client(env.socket, timeout=5)
            try:
                reply = await anyio.to_thread.run_sync(client.call, "daemon.shutdown")
            finally:
                client.close()
            assert reply == {"stopping": True}
    assert not env.socket.exists()


# --- property: the round trip through a real daemon keeps unknown keys ---------------------


@pytest.fixture(scope="module")
def live_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonEnv, Client]]:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mw-", dir="/tmp") as d:
        env = make_env(Path(d))
        proc = spawn_meworkd(env)
        try:
            wait_for_socket(proc, env.socket)
            with Client(env.socket, timeout=10) as client:
                yield env, client
            client = Client(env.socket, timeout=10)
            client.call("daemon.shutdown")
            client.close()
            assert proc.wait(timeout=15) == 0
        finally:
            stop_process(proc)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=documents_with_unknown_keys(), ops=registry_ops)
def test_unknown_keys_survive_rpc_operations(
    live_daemon: tuple[DaemonEnv, Client],
    case: tuple[dict[str, Any], DocModel],
    ops: list[tuple[Any, ...]],
) -> None:
    env, client = live_daemon
    doc, model = case
    replace_atomically(env.settings, json.dumps(doc, indent=2))
    reload = client.call("settings.reload")
    assert reload["applied"] is True
    for op in ops:
        expected = expect_op(op, model)
        method, params = rpc_for_op(op)
        failed: str | None = None
        try:
            client.call(method, params)
        except RpcError as exc:
            failed = exc.kind
        assert failed == expected, op
        assert_unknown_keys_survived(read_doc(env.settings), model)
