"""The registry methods over the real socket, one call of each: the reply's shape, the edit on
disk when the reply arrives, secrets masked unless asked, a refusal's kind on the wire.

The rules behind them (positions and unknown keys kept, HTTP spellings, what a rename or removal
takes along, every refusal, the unknown-keys property) are tested in-process in
tests/test_core_registry.py.
"""

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from mework_client import Client, RpcError
from mework_client.aio import AsyncClient

from meworkd.app.daemon import DaemonState
from meworkd.base.events import TOPICS
from tests.common import BOUND
from tests.daemon_fixture import DaemonEnv, daemon_and_client, make_env, read_doc, running_daemon
from tests.test_core_registry import INITIAL, SECRET_ENV, SECRET_HEADER


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
async def test_reading_methods_over_the_socket(env: DaemonEnv) -> None:
    async with daemon_and_client(env) as (_daemon, client):
        status = await client.call("daemon.status")
        assert status["pid"] == os.getpid()
        assert (status["settingsPath"], status["socketPath"]) == (
            str(env.settings),
            str(env.socket),
        )
        assert status["stateDir"] == str(env.state_dir)
        assert (status["servers"], status["serversEnabled"]) == (3, 3)
        assert status["connections"] >= 1

        listed = (await client.call("servers.list"))["servers"]
        assert [s["name"] for s in listed] == ["first", "fs", "last"]
        assert SECRET_ENV not in json.dumps(listed)
        got = await client.call("servers.get", {"name": "fs"})
        assert got["server"]["env"] == {"API_KEY": "********", "FROM_ENV": "${HOME}"}
        revealed = await client.call("servers.get", {"name": "fs", "reveal": True})
        assert revealed["server"]["env"]["API_KEY"] == SECRET_ENV

        document = await client.call("settings.get")
        assert document["path"] == str(env.settings)
        assert document["mcp"]["max_reply_bytes"] == 65536
        assert SECRET_ENV not in json.dumps(document)

        exported = await client.call("servers.export")
        assert exported["mcpServers"]["fs"]["env"]["API_KEY"] == "********"
        revealed = await client.call("servers.export", {"reveal": True})
        assert revealed["mcpServers"]["fs"] == INITIAL["assets"]["mcpServers"]["fs"]  # type: ignore[index]
        assert (await client.call("presets.list"))["presets"] == [
            {"name": "research", "mcpServers": ["fs", "last"], "approvalLevel": "plan"}
        ]

        subscribed = await client.call("events.subscribe")
        assert subscribed["topics"] == sorted(TOPICS)
        subscribed = await client.call("events.subscribe", {"topics": ["settings.invalid"]})
        assert subscribed["topics"] == ["settings.invalid"]


@pytest.mark.anyio
async def test_editing_methods_are_on_disk_when_the_reply_arrives(env: DaemonEnv) -> None:
    async with daemon_and_client(env, topics=["settings.reloaded"]) as (_daemon, client):
        headers = {"Authorization": f"Bearer {SECRET_HEADER}"}
        server = {"type": "http", "url": "https://docs.example/mcp", "headers": headers}
        reply = await client.call("servers.add", {"name": "docs", "server": server})
        assert servers_on_disk(env)["docs"]["headers"] == headers
        assert (reply["name"], reply["type"]) == ("docs", "streamable_http")
        assert SECRET_HEADER not in json.dumps(reply)
        with anyio.fail_after(5):
            _topic, data = await client.next_event("settings.reloaded")
        assert (data["source"], data["added"]) == ("write", ["docs"])
        assert SECRET_HEADER not in json.dumps(data)

        reply = await client.call("servers.update", {"name": "fs", "patch": {"enabled": False}})
        assert (reply["status"], servers_on_disk(env)["fs"]["enabled"]) == ("disabled", False)
        error = await error_of(
            client, "servers.update", {"name": "fs", "patch": {"timeoutSeconds": 0}}
        )
        assert (error.kind, error.message) == (
            "invalid_settings",
            "fs.timeoutSeconds: expected int > 0",
        )

        reply = await client.call("servers.rename", {"name": "fs", "newName": "files"})
        assert (reply["name"], reply["conversationsUpdated"]) == ("files", [])
        assert list(servers_on_disk(env)) == ["first", "files", "last", "docs"]
        error = await error_of(client, "servers.rename", {"name": "files", "newName": "last"})
        assert error.kind == "conflict"

        reply = await client.call("servers.remove", {"name": "last"})
        assert reply == {"removed": "last", "conversationsUpdated": []}
        assert "last" not in servers_on_disk(env)

        reply = await client.call(
            "servers.setToolEnabled", {"name": "files", "tool": "write_file", "enabled": False}
        )
        assert reply["disabledTools"] == ["write_file"]
        reply = await client.call(
            "servers.setToolAutoApprove",
            {"name": "files", "tool": "move_file", "autoApprove": False},
        )
        assert reply["disabledAutoApproveTools"] == ["move_file"]
        assert servers_on_disk(env)["files"]["disabledAutoApproveTools"] == ["move_file"]

        preset = {"mcpServers": ["first"], "approvalLevel": "full_access"}
        reply = await client.call("presets.set", {"name": "quick", "preset": preset})
        assert reply == {"name": "quick", **preset}
        assert read_doc(env.settings)["presets"]["quick"] == preset
        assert await client.call("presets.remove", {"name": "quick"}) == {"removed": "quick"}
        error = await error_of(client, "presets.remove", {"name": "quick"})
        assert error.kind == "preset_not_found"

        reply = await client.call("settings.setMcpOptions", {"max_reply_bytes": 1024})
        assert reply["mcp"]["max_reply_bytes"] == 1024
        assert read_doc(env.settings)["mcp"] == {"max_reply_bytes": 1024}


@pytest.mark.anyio
async def test_daemon_shutdown_stops_it_cleanly(env: DaemonEnv) -> None:
    async with running_daemon(env) as daemon:
        assert env.socket.exists()
        client = Client(env.socket, timeout=5)
        try:
            reply = await anyio.to_thread.run_sync(client.call, "daemon.shutdown")
        finally:
            client.close()
        assert reply == {"stopping": True}
        with anyio.fail_after(BOUND):
            await daemon.lifecycle.stopping()  # the request reached the stop Daemon.run awaits
    assert daemon.state is DaemonState.STOPPED
    assert not env.socket.exists()
