"""servers.install (issue 29) from a fixture registry over the real daemon: a server.json made
into an entry (npm, PyPI, OCI, NuGet, a remote), inputs asked as servers.import asks them, and
end to end for an npm package, a PyPI package and a remote: install, Test connection, call a
tool. Every server.json is one of the registry's own examples (tests/registry_examples.py)."""

import importlib.metadata
import json
import os
import shutil
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mework_client.aio import AsyncClient, connect

from tests.daemon_helpers import PEERS, begin_turn, call_tool, http_fixture, start_daemon, text_of
from tests.registry_examples import (
    BRAVE_SEARCH,
    DATABASE_MANAGER,
    FILESYSTEM,
    HYBRID,
    KNAPCODE,
    everything,
    remote_weather_at,
    time_server,
)
from tests.registry_fixture import FixtureRegistry, registry_fixture
from tests.turn_helpers import rpc_error

pytestmark = pytest.mark.anyio


@pytest.fixture
def registry() -> Iterator[FixtureRegistry]:
    with registry_fixture() as served:
        for server in (BRAVE_SEARCH, FILESYSTEM, KNAPCODE, DATABASE_MANAGER, HYBRID):
            served.publish(server)
        yield served


def settings_of(root: Path) -> dict[str, Any]:
    return json.loads((root / "settings.json").read_text())  # type: ignore[no-any-return]


async def install(c: AsyncClient, name: str, **params: Any) -> dict[str, Any]:
    return await c.call("servers.install", {"name": name, **params})  # type: ignore[no-any-return]


async def test_a_required_secret_is_asked_for_and_stored_as_given(
    short_tmp: Path, registry: FixtureRegistry
) -> None:
    mcp = {"registries": [registry.url]}
    async with start_daemon(short_tmp, {}, mcp=mcp) as (_d, sock), connect(sock) as c:
        before = (short_tmp / "settings.json").read_bytes()
        preview = await install(c, BRAVE_SEARCH["name"])
        assert preview["installed"] is False
        assert [i["id"] for i in preview["needsInputs"]] == ["BRAVE_API_KEY"]
        need = preview["needsInputs"][0]
        assert need["secret"] is True
        assert need["description"] == "Brave Search API Key"
        assert (short_tmp / "settings.json").read_bytes() == before

        dry = await install(
            c, BRAVE_SEARCH["name"], inputs={"BRAVE_API_KEY": "${BRAVE_API_KEY}"}, dryRun=True
        )
        assert dry["installed"] is False
        assert dry["needsInputs"] == []
        assert (short_tmp / "settings.json").read_bytes() == before

        done = await install(c, BRAVE_SEARCH["name"], inputs={"BRAVE_API_KEY": "${BRAVE_API_KEY}"})
        assert done["installed"] is True
        assert done["name"] == "brave-search"
        entry = settings_of(short_tmp)["assets"]["mcpServers"]["brave-search"]
        assert entry == {
            "type": "stdio",
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-brave-search@1.0.2"],
            "env": {"BRAVE_API_KEY": "${BRAVE_API_KEY}"},
            "description": "MCP server for Brave Search API integration",
            "installedFrom": {
                "registry": registry.url,
                "name": BRAVE_SEARCH["name"],
                "version": "1.0.2",
            },
        }
        # A reference is no secret: it shows as written (the value stays in the environment).
        assert done["server"]["env"]["BRAVE_API_KEY"] == "${BRAVE_API_KEY}"
        again = await rpc_error(install(c, BRAVE_SEARCH["name"], inputs={"BRAVE_API_KEY": "x"}))
        assert again.kind == "conflict"


async def test_each_package_type_and_its_arguments(
    short_tmp: Path, registry: FixtureRegistry
) -> None:
    mcp = {"registries": [registry.url]}
    async with start_daemon(short_tmp, {}, mcp=mcp) as (_d, sock), connect(sock) as c:
        npm = await install(c, FILESYSTEM["name"], dryRun=True)
        assert [(x["kind"], x["supported"]) for x in npm["choices"]] == [
            ("npm", True),
            ("oci", True),
        ]
        assert npm["server"]["args"] == [
            "-y",
            "@modelcontextprotocol/server-filesystem@1.0.2",
            "/Users/username/Desktop",
        ]
        assert npm["server"]["env"] == {"LOG_LEVEL": "info"}

        oci = await install(c, FILESYSTEM["name"], choice=1, dryRun=True)
        assert [i["id"] for i in oci["needsInputs"]] == ["source_path"]
        oci = await install(
            c, FILESYSTEM["name"], choice=1, inputs={"source_path": "/srv/data"}, dryRun=True
        )
        assert oci["server"]["command"] == "docker"
        assert oci["server"]["args"] == [
            "run", "-i", "--rm",
            "--mount", "type=bind,src=/srv/data,dst=/project",
            "-e", "LOG_LEVEL",
            "docker.io/mcp/filesystem:1.0.2",
            "/project",
        ]  # fmt: skip

        db = await install(c, DATABASE_MANAGER["name"], dryRun=True)
        assert {i["id"] for i in db["needsInputs"]} == {
            "db_type",
            "database_name",
            "DB_USERNAME",
            "DB_PASSWORD",
        }
        given = {"db_type": "postgres", "database_name": "shop", "DB_USERNAME": "me",
                 "DB_PASSWORD": "${DB_PASSWORD}"}  # fmt: skip
        db = await install(c, DATABASE_MANAGER["name"], inputs=given, dryRun=True)
        assert db["server"]["args"] == [
            "run", "-i", "--rm", "--network", "host", "-e", "DB_TYPE=postgres",
            "-e", "DB_USERNAME", "-e", "DB_PASSWORD", "-e", "SSL_MODE",
            "docker.io/example/database-manager-mcp:3.1.0", "--host", "localhost", "shop",
        ]  # fmt: skip
        wrong = await rpc_error(
            install(c, DATABASE_MANAGER["name"], inputs={**given, "db_type": "oracle"})
        )
        assert wrong.kind == "invalid_params"
        assert "inputs.db_type: expected one of postgres, mysql, mongodb, redis" in wrong.message

        nuget = await install(c, KNAPCODE["name"], dryRun=True)
        assert nuget["server"]["command"] == "dnx"
        assert nuget["server"]["args"] == [
            "Knapcode.SampleMcpServer@0.4.0-beta",
            "--",
            "mcp",
            "start",
        ]
        if shutil.which("dnx") is None:
            assert nuget["choices"][0]["runtimeFound"] is False
            assert any("dnx was not found" in w and ".NET" in w for w in nuget["warnings"])

        hybrid = await install(c, HYBRID["name"], dryRun=True)
        assert [(x["kind"], x["supported"]) for x in hybrid["choices"]] == [
            ("npm", True),
            ("remote", True),
            ("remote", False),
        ]
        assert hybrid["server"]["args"] == [
            "-y",
            "@example/hybrid-mcp-server@1.5.0",
            "--mode",
            "local",
        ]
        sse = await rpc_error(install(c, HYBRID["name"], choice=2))
        assert sse.kind == "unusable_server_json"
        assert "HTTP+SSE" in sse.message
        remote = await install(c, HYBRID["name"], choice=1, dryRun=True)
        assert [i["id"] for i in remote["needsInputs"]] == ["X-API-Key"]
        remote = await install(
            c, HYBRID["name"], choice=1, inputs={"X-API-Key": "k", "X-Region": "eu-west-1"},
            dryRun=True,
        )  # fmt: skip
        assert remote["server"]["type"] == "streamable_http"
        assert remote["server"]["url"] == "https://mcp.anonymous.modelcontextprotocol.io/http"
        # Every header but a descriptive one is a secret: masked (docs/api.md "Secrets").
        assert remote["server"]["headers"] == {"X-API-Key": "********", "X-Region": "********"}


def bad(server: dict[str, Any], **package: Any) -> dict[str, Any]:
    """``server`` with its first package's fields replaced (None removes one)."""
    first = {k: v for k, v in {**server["packages"][0], **package}.items() if v is not None}
    return {**server, "packages": [first, *server["packages"][1:]]}


@pytest.mark.parametrize(
    ("server", "said"),
    [
        (bad(BRAVE_SEARCH, registryType="cargo"), "registryType 'cargo' is not one meworkd"),
        (bad(BRAVE_SEARCH, identifier="--foo"), "'--foo' is not a plain npm package name"),
        (bad(BRAVE_SEARCH, identifier="-e"), "'-e' is not a plain npm package name"),
        (bad(BRAVE_SEARCH, identifier="x; rm -rf ~"), "is not a plain npm package name"),
        (bad(BRAVE_SEARCH, identifier=None), "packages[0].identifier: missing"),
        (bad(BRAVE_SEARCH, version=None), "packages[0].version: missing"),
        (bad(BRAVE_SEARCH, version="^1.0"), "'^1.0' is not an exact version"),
        (bad(BRAVE_SEARCH, version="latest"), "'latest' is not an exact version"),
        (
            bad(BRAVE_SEARCH, packageArguments=[{"type": "positional", "value": "{where}"}]),
            "the template variable {where} is not declared",
        ),
        (
            bad(BRAVE_SEARCH, packageArguments=[{"type": "positional", "value": "${HOME}"}]),
            "holds ${...}, which meworkd would expand",
        ),
        (
            bad(BRAVE_SEARCH, environmentVariables=[{"name": "A B", "value": "1"}]),
            "'A B' is not a valid env name",
        ),
        ({**BRAVE_SEARCH, "packages": []}, "no packages and no remotes"),
    ],
)
async def test_a_server_json_that_cannot_be_installed_is_named_and_nothing_is_written(
    short_tmp: Path, server: dict[str, Any], said: str
) -> None:
    with registry_fixture() as served:
        served.publish(server)
        mcp = {"registries": [served.url]}
        async with start_daemon(short_tmp, {}, mcp=mcp) as (_d, sock), connect(sock) as c:
            before = (short_tmp / "settings.json").read_bytes()
            error = await rpc_error(install(c, server["name"], inputs={"BRAVE_API_KEY": "k"}))
            assert error.kind == "unusable_server_json"
            assert said in error.message
            assert (short_tmp / "settings.json").read_bytes() == before


async def test_npm_package_end_to_end(short_tmp: Path) -> None:
    package = PEERS / "@modelcontextprotocol" / "server-everything" / "package.json"
    if not package.exists() or shutil.which("npx") is None:
        pytest.skip("server-everything (.peers) or npx is not installed")
    version = json.loads(package.read_text())["version"]
    with registry_fixture() as served:
        served.publish(everything(version))
        mcp = {"registries": [served.url]}
        async with start_daemon(short_tmp, {}, mcp=mcp) as (_d, sock), connect(sock) as c:
            found = await c.call("servers.search", {"query": "exercises all the features"})
            assert [s["name"] for s in found["servers"]] == ["io.modelcontextprotocol/everything"]
            done = await install(c, "io.modelcontextprotocol/everything")
            assert done["server"]["args"] == [
                "-y",
                f"@modelcontextprotocol/server-everything@{version}",
            ]
            # npx takes the package from the project it runs in when that holds this exact
            # version: .peers does, so the test needs no network (npm told to stay offline).
            patch = {"cwd": str(PEERS.parent), "env": {"npm_config_offline": "true"}}
            await c.call("servers.update", {"name": "everything", "patch": patch})
            await connects_and_calls(c, "everything", "echo", {"message": "hi"}, "Echo: hi")


async def test_pypi_package_end_to_end(short_tmp: Path) -> None:
    version = importlib.metadata.version("mcp-server-time")
    # uv is not a test dependency: a stand-in uvx on meworkd's PATH runs the mcp-server-time
    # of this environment for exactly "mcp-server-time==<its version>", and refuses otherwise.
    bin_dir = short_tmp / "bin"
    bin_dir.mkdir()
    uvx = bin_dir / "uvx"
    server = Path(sys.executable).parent / "mcp-server-time"
    uvx.write_text(
        f"#!/bin/sh\n[ \"$1\" = 'mcp-server-time=={version}' ] || exit 64\n"
        f"shift\nexec '{server}' \"$@\"\n"
    )
    uvx.chmod(uvx.stat().st_mode | stat.S_IXUSR)
    environ = {**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"}
    with registry_fixture() as served:
        served.publish(time_server(version))
        mcp = {"registries": [served.url]}
        async with (
            start_daemon(short_tmp, {}, mcp=mcp, environ=environ) as (_d, sock),
            connect(sock) as c,
        ):
            done = await install(c, "io.github.modelcontextprotocol/time")
            assert done["choices"][0]["runtimeFound"] is True
            assert done["server"]["command"] == "uvx"
            assert done["server"]["args"] == [
                f"mcp-server-time=={version}",
                "--local-timezone",
                "UTC",
            ]
            args = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
            await connects_and_calls(c, "time", "convert_time", args, "21:00")


async def test_remote_end_to_end(short_tmp: Path) -> None:
    async with http_fixture() as url:
        base = url.removesuffix("/mcp")
        with registry_fixture() as served:
            served.publish(remote_weather_at(base))
            mcp = {"registries": [served.url]}
            async with start_daemon(short_tmp, {}, mcp=mcp) as (_d, sock), connect(sock) as c:
                preview = await install(c, "io.github.user/remote-weather", dryRun=True)
                assert [i["id"] for i in preview["needsInputs"]] == ["Authorization"]
                inputs = {"Authorization": "Bearer s3cret-token"}
                done = await install(c, "io.github.user/remote-weather", inputs=inputs)
                entry = settings_of(short_tmp)["assets"]["mcpServers"]["remote-weather"]
                assert entry["type"] == "streamable_http"
                assert entry["url"] == url
                assert entry["headers"] == {"Authorization": "Bearer s3cret-token"}
                assert done["server"]["headers"] == {"Authorization": "********"}
                await connects_and_calls(c, "remote-weather", "whoami", {}, "[redacted]")


async def connects_and_calls(
    c: AsyncClient, name: str, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    tested = await c.call("servers.test", {"name": name})
    assert tested["ok"] is True, tested
    assert tool in {t["name"] for t in tested["tools"]}
    turn = await begin_turn(c, [name])
    assert turn["failures"] == []
    reply = await call_tool(c, turn, name, tool, arguments)
    assert reply["isError"] is False, reply
    assert expected in text_of(reply)


async def test_a_secret_is_stored_only_where_it_stays_secret(short_tmp: Path) -> None:
    """A secret given for a variable whose name meworkd does not treat as secret (so it would
    show unmasked) must be a ${VAR} reference; under a secret name it may be the value."""
    login = {"name": "BRAVE_LOGIN", "isSecret": True, "isRequired": True}
    server = bad(BRAVE_SEARCH, environmentVariables=[login])
    with registry_fixture() as served:
        served.publish(server)
        mcp = {"registries": [served.url]}
        async with start_daemon(short_tmp, {}, mcp=mcp) as (_d, sock), connect(sock) as c:
            error = await rpc_error(install(c, server["name"], inputs={"BRAVE_LOGIN": "hunter2"}))
            assert error.kind == "invalid_params"
            assert "give it as a ${VAR} reference" in error.message
            assert "${BRAVE_LOGIN}" in error.message
            done = await install(c, server["name"], inputs={"BRAVE_LOGIN": "${BRAVE_LOGIN}"})
            assert done["installed"] is True
