"""servers.search and servers.registryGet (issue 29) against a fixture registry that speaks the
read API v0.1, over the real daemon's socket: ranking by a word of the description, pages,
deleted and deprecated servers, the incremental refresh, offline answers from the local copy,
and registries that misbehave (down, slow, HTML, 10 MiB, pages without end)."""

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mework_client.aio import connect

from meworkd.base.errors import RegistryUnavailable
from meworkd.core.registry.localcopy import LocalCopy
from tests.daemon_helpers import free_port, start_daemon
from tests.registry_examples import (
    BRAVE_SEARCH,
    DATABASE_MANAGER,
    FILESYSTEM,
    HYBRID,
    KNAPCODE,
    REMOTE_WEATHER,
    WEATHER_PYPI,
)
from tests.registry_fixture import FixtureRegistry, registry_fixture
from tests.turn_helpers import rpc_error

pytestmark = pytest.mark.anyio


@pytest.fixture
def registry() -> Iterator[FixtureRegistry]:
    with registry_fixture() as served:
        for server in (BRAVE_SEARCH, FILESYSTEM, WEATHER_PYPI, KNAPCODE, DATABASE_MANAGER, HYBRID):
            served.publish(server)
        served.publish(REMOTE_WEATHER)
        yield served


def names(result: dict[str, object]) -> list[str]:
    return [s["name"] for s in result["servers"]]  # type: ignore[attr-defined,index]


async def test_search_finds_a_server_by_a_word_of_its_description(
    short_tmp: Path, registry: FixtureRegistry
) -> None:
    mcp = {"registries": [registry.url]}
    async with start_daemon(short_tmp, {}, mcp=mcp) as (_d, sock), connect(sock) as c:
        result = await c.call("servers.search", {"query": "temperature"})
        assert names(result) == []  # in no description: nothing, not everything
        result = await c.call("servers.search", {"query": "timezone"})
        assert names(result) == []
        result = await c.call("servers.search", {"query": "weather data"})
        # "weather data" is only in weather-mcp's description; its name matches "weather" too.
        assert names(result) == ["io.github.example/weather-mcp"]
        hit = result["servers"][0]
        assert hit["registry"] == registry.url
        assert hit["version"] == "0.5.0"
        assert hit["status"] == "active"
        assert hit["needs"] == {
            "runtimes": ["uvx"],
            "environment": ["WEATHER_API_KEY"],
            "headers": [],
            "remote": False,
        }
        assert result["offline"] is False
        # The registry's own search would match names only: the copy was read in pages.
        assert all("search=" not in r for r in registry.requests)

        result = await c.call("servers.search", {"query": "filesystem operations"})
        assert names(result) == ["io.github.modelcontextprotocol/filesystem"]
        assert result["servers"][0]["needs"]["runtimes"] == ["npx", "docker"]
        remote = await c.call("servers.search", {"query": "streamable"})
        assert names(remote) == ["io.github.user/remote-weather"]
        assert remote["servers"][0]["needs"]["remote"] is True
        assert remote["servers"][0]["needs"]["headers"] == ["Authorization"]


async def test_search_ranks_name_first_and_pages_with_a_cursor(
    short_tmp: Path, registry: FixtureRegistry
) -> None:
    mcp = {"registries": [registry.url]}
    async with start_daemon(short_tmp, {}, mcp=mcp) as (_d, sock), connect(sock) as c:
        result = await c.call("servers.search", {"query": "weather"})
        # Names first (whole word, then part), the description-only match last.
        assert names(result) == [
            "io.github.example/weather-mcp",
            "io.github.user/remote-weather",
            "io.github.joelverhagen/knapcode-samplemcpserver",
        ]
        everything = await c.call("servers.search", {"limit": 3})
        assert everything["total"] == 7
        seen = names(everything)
        cursor = everything["nextCursor"]
        while cursor is not None:
            page = await c.call("servers.search", {"limit": 3, "cursor": cursor})
            seen += names(page)
            cursor = page["nextCursor"]
        assert len(seen) == 7 == len(set(seen))
        error = await rpc_error(c.call("servers.search", {"cursor": "x"}))
        assert error.kind == "invalid_params"
        error = await rpc_error(c.call("servers.search", {"limit": 0}))
        assert error.kind == "invalid_params"


async def test_deleted_is_never_offered_deprecated_is_marked_and_refresh_is_incremental(
    short_tmp: Path, registry: FixtureRegistry
) -> None:
    mcp = {"registries": [registry.url]}
    async with start_daemon(short_tmp, {}, mcp=mcp) as (_d, sock), connect(sock) as c:
        assert len(names(await c.call("servers.search", {}))) == 7
        registry.set_status(BRAVE_SEARCH["name"], "deleted")
        registry.set_status(KNAPCODE["name"], "deprecated")
        registry.publish({**WEATHER_PYPI, "version": "0.6.0"})
        registry.requests.clear()
        result = await c.call("servers.search", {"refresh": True})
        # One request: only what changed since the newest updatedAt seen.
        assert len(registry.requests) == 1
        assert "updated_since=" in registry.requests[0]
        assert BRAVE_SEARCH["name"] not in names(result)
        by_name = {s["name"]: s for s in result["servers"]}
        assert by_name[KNAPCODE["name"]]["status"] == "deprecated"
        assert by_name[WEATHER_PYPI["name"]]["version"] == "0.6.0"
        got = await c.call("servers.registryGet", {"name": WEATHER_PYPI["name"]})
        assert got["server"]["version"] == "0.6.0"
        older = await c.call(
            "servers.registryGet", {"name": WEATHER_PYPI["name"], "version": "0.5.0"}
        )
        assert older["server"] == WEATHER_PYPI
        assert older["offline"] is False
        error = await rpc_error(c.call("servers.registryGet", {"name": "io.github.no/such"}))
        assert error.kind == "registry_server_not_found"


async def test_search_answers_offline_from_the_last_copy_and_says_so(
    short_tmp: Path, registry: FixtureRegistry
) -> None:
    mcp = {"registries": [registry.url]}
    async with start_daemon(short_tmp, {}, mcp=mcp) as (_d, sock), connect(sock) as c:
        await c.call("servers.search", {"query": "weather"})
    registry.mode = "500"
    # A new daemon: the copy on disk in the state directory is all it has.
    async with start_daemon(short_tmp, {}, mcp=mcp) as (_d, sock), connect(sock) as c:
        result = await c.call("servers.search", {"query": "weather data", "refresh": True})
        assert names(result) == ["io.github.example/weather-mcp"]
        assert result["offline"] is True
        (state,) = result["registries"]
        assert state["ok"] is False
        assert "answered HTTP 500" in state["error"]
        assert isinstance(state["ageSeconds"], int)
        got = await c.call("servers.registryGet", {"name": WEATHER_PYPI["name"]})
        assert got["offline"] is True
        assert got["server"] == WEATHER_PYPI


async def test_a_registry_that_is_down_with_no_copy_is_a_clear_error(short_tmp: Path) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    mcp = {"registries": [down]}
    async with start_daemon(short_tmp, {}, mcp=mcp) as (_d, sock), connect(sock) as c:
        error = await rpc_error(c.call("servers.search", {"query": "x"}))
        assert error.kind == "registry_unavailable"
        assert "could not be reached" in error.message
        assert down in error.message
        assert not (short_tmp / "state" / "registry").exists()


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("html", "answered an HTML page, not JSON"),
        ("huge", "sent more than 4096 KiB"),
        ("endless", "kept sending pages past 300"),
        ("repeat", "a page cursor it had sent before"),
    ],
)
async def test_a_misbehaving_registry_is_named_with_what_it_did(
    short_tmp: Path, registry: FixtureRegistry, mode: str, said: str
) -> None:
    registry.mode = mode
    mcp = {"registries": [registry.url]}
    async with start_daemon(short_tmp, {}, mcp=mcp) as (_d, sock), connect(sock) as c:
        error = await rpc_error(c.call("servers.search", {"query": "weather"}))
        assert error.kind == "registry_unavailable"
        assert said in error.message
        assert registry.url in error.message
        # The daemon is fine: it answers the next call.
        assert (await c.call("servers.list"))["servers"] == []


async def test_a_slow_registry_is_given_up_on(short_tmp: Path, registry: FixtureRegistry) -> None:
    registry.mode = "slow"
    copy = LocalCopy(registry.url, short_tmp, timeout=0.5)
    with anyio.fail_after(30), pytest.raises(RegistryUnavailable) as info:
        await copy.refresh()
    assert "did not answer within 0.5 s" in info.value.message
    assert copy.servers == {}
    assert not (short_tmp / "registry").exists()


async def test_registries_must_be_http_urls(short_tmp: Path) -> None:
    async with start_daemon(short_tmp, {}) as (_d, sock), connect(sock) as c:
        assert (await c.call("settings.get"))["mcp"]["registries"] == [
            "https://registry.modelcontextprotocol.io"
        ]
        error = await rpc_error(
            c.call("settings.setMcpOptions", {"registries": ["file:///etc/passwd"]})
        )
        assert error.kind == "invalid_settings"
        assert "mcp.registries[0]" in error.message
