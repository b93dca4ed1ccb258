"""servers.outdated and servers.upgrade (issue 29): an entry installed from a registry knows
where it came from (installedFrom), is listed when its registry has a newer version, and moves
to it keeping the user's values and settings."""

import json
from pathlib import Path

import pytest
from mework_client.aio import connect

from tests.daemon_helpers import start_daemon
from tests.registry_examples import WEATHER_PYPI
from tests.registry_fixture import registry_fixture
from tests.turn_helpers import rpc_error

pytestmark = pytest.mark.anyio


def newer(version: str) -> dict[str, object]:
    package = {**WEATHER_PYPI["packages"][0], "version": version}
    return {**WEATHER_PYPI, "version": version, "packages": [package]}


async def test_outdated_lists_a_newer_version_and_upgrade_moves_to_it(short_tmp: Path) -> None:
    with registry_fixture() as served:
        served.publish(WEATHER_PYPI)
        mcp = {"registries": [served.url]}
        async with start_daemon(short_tmp, {}, mcp=mcp) as (_d, sock), connect(sock) as c:
            inputs = {"WEATHER_API_KEY": "${WEATHER_KEY}", "WEATHER_UNITS": "fahrenheit"}
            await c.call("servers.install", {"name": WEATHER_PYPI["name"], "inputs": inputs})
            patch = {"disabledTools": ["forecast"], "timeoutSeconds": 30}
            await c.call("servers.update", {"name": "weather-mcp", "patch": patch})
            assert (await c.call("servers.outdated")) == {"servers": [], "errors": []}

            served.publish(newer("0.6.0"))
            outdated = await c.call("servers.outdated")
            assert outdated["servers"] == [
                {
                    "name": "weather-mcp",
                    "server": WEATHER_PYPI["name"],
                    "registry": served.url,
                    "installed": "0.5.0",
                    "latest": "0.6.0",
                    "status": "active",
                }
            ]
            before = (short_tmp / "settings.json").read_bytes()
            dry = await c.call("servers.upgrade", {"name": "weather-mcp", "dryRun": True})
            assert (dry["from"], dry["to"], dry["updated"]) == ("0.5.0", "0.6.0", False)
            assert (short_tmp / "settings.json").read_bytes() == before

            done = await c.call("servers.upgrade", {"name": "weather-mcp"})
            assert done["updated"] is True
            entry = json.loads((short_tmp / "settings.json").read_text())["assets"]["mcpServers"][
                "weather-mcp"
            ]
            assert entry["args"] == ["weather-mcp-server==0.6.0"]
            assert entry["env"] == inputs  # what the user gave, kept
            assert entry["disabledTools"] == ["forecast"]
            assert entry["timeoutSeconds"] == 30
            assert entry["installedFrom"]["version"] == "0.6.0"
            assert (await c.call("servers.outdated"))["servers"] == []

            back = await c.call("servers.upgrade", {"name": "weather-mcp", "version": "0.5.0"})
            assert back["to"] == "0.5.0"
            missing = await rpc_error(
                c.call("servers.upgrade", {"name": "weather-mcp", "version": "9.9.9"})
            )
            assert missing.kind == "registry_server_not_found"


async def test_upgrade_refuses_an_entry_not_installed_from_a_registry(short_tmp: Path) -> None:
    servers = {"hand": {"command": "true"}}
    async with start_daemon(short_tmp, servers) as (_d, sock), connect(sock) as c:
        error = await rpc_error(c.call("servers.upgrade", {"name": "hand"}))
        assert error.kind == "invalid_params"
        assert "not installed from a registry" in error.message
        error = await rpc_error(c.call("servers.upgrade", {"name": "nope"}))
        assert error.kind == "server_not_found"


async def test_a_deleted_server_is_not_installed(short_tmp: Path) -> None:
    with registry_fixture() as served:
        served.publish(WEATHER_PYPI, status="deleted")
        mcp = {"registries": [served.url]}
        async with start_daemon(short_tmp, {}, mcp=mcp) as (_d, sock), connect(sock) as c:
            error = await rpc_error(
                c.call("servers.install", {"name": WEATHER_PYPI["name"], "dryRun": True})
            )
            assert error.kind == "unusable_server_json"
            assert "marks it deleted" in error.message
            served.set_status(WEATHER_PYPI["name"], "deprecated")
            preview = await c.call(
                "servers.install", {"name": WEATHER_PYPI["name"], "dryRun": True}
            )
            assert f"the registry marks {WEATHER_PYPI['name']} deprecated" in preview["warnings"]
