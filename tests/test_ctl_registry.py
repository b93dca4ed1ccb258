"""meworkctl servers search|info|install|outdated|upgrade (issue 29) against a real daemon
whose mcp.registries names a fixture registry serving the registry's own examples."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.registry_examples import BRAVE_SEARCH, FILESYSTEM, WEATHER_PYPI
from tests.registry_fixture import FixtureRegistry, registry_fixture
from tests.test_bundles import build
from tests.test_ctl import Daemon, ok, ok_json, run_ctl, start_daemon, stop_daemon


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Daemon, FixtureRegistry]]:
    """One daemon and registry for the module: each test installs under names of its own and
    puts back the settings it changes."""
    with registry_fixture() as registry, tempfile.TemporaryDirectory(prefix="mw-", dir="/tmp") as d:
        for server in (BRAVE_SEARCH, FILESYSTEM, WEATHER_PYPI):
            registry.publish(server)
        root = Path(d)
        settings = root / "cfg" / "mework" / "settings.json"
        settings.parent.mkdir(parents=True)
        settings.write_text(json.dumps({"mcp": {"registries": [registry.url]}}))
        daemon = start_daemon(root)
        try:
            yield daemon, registry
        finally:
            stop_daemon(daemon)


def test_search_info_install_outdated_upgrade(served: tuple[Daemon, FixtureRegistry]) -> None:
    daemon, registry = served
    out = ok(daemon, "servers", "search", "weather", "data")
    assert "io.github.example/weather-mcp" in out
    assert "uvx; needs WEATHER_API_KEY" in out
    assert "brave" not in out

    info = ok(daemon, "servers", "info", "io.github.example/weather-mcp")
    assert "package: pypi weather-mcp-server 0.5.0" in info
    assert "env WEATHER_API_KEY (required): API key for weather service" in info

    # No terminal and a needed input not given: an error naming it, nothing installed.
    done = run_ctl(daemon, "servers", "install", "io.github.example/weather-mcp")
    assert done.returncode == 1
    assert "needs values for: WEATHER_API_KEY" in done.stderr
    assert "weather-mcp" not in ok(daemon, "servers", "list")

    dry = ok(daemon, "servers", "install", "io.github.example/weather-mcp", "--dry-run")
    assert "runs: uvx weather-mcp-server==0.5.0" in dry
    assert "needs input WEATHER_API_KEY" in dry
    out = ok(
        daemon,
        "servers", "install", "io.github.example/weather-mcp",
        "--input", "WEATHER_API_KEY=${WEATHER_KEY}", "--as", "weather",
    )  # fmt: skip
    assert "installed as weather" in out
    entry = ok_json(daemon, "servers", "show", "weather")["server"]
    assert entry["env"]["WEATHER_API_KEY"] == "${WEATHER_KEY}"

    assert "at its latest version" in ok(daemon, "servers", "outdated")
    package = {**WEATHER_PYPI["packages"][0], "version": "0.6.0"}
    registry.publish({**WEATHER_PYPI, "version": "0.6.0", "packages": [package]})
    out = ok(daemon, "servers", "outdated")
    assert "weather" in out
    assert "0.6.0" in out
    ok(daemon, "servers", "upgrade", "weather")
    entry = ok_json(daemon, "servers", "show", "weather")["server"]
    assert entry["args"] == ["weather-mcp-server==0.6.0"]


def test_an_unusable_choice_is_said_in_its_words(served: tuple[Daemon, FixtureRegistry]) -> None:
    daemon, _registry = served
    done = run_ctl(daemon, "servers", "install", FILESYSTEM["name"], "--choice", "7")
    assert done.returncode != 0
    assert "choice: expected 0 to 1" in done.stderr


def test_install_a_bundle_file(served: tuple[Daemon, FixtureRegistry]) -> None:
    daemon, _registry = served
    bundle = build(daemon.root / "env-dump.mcpb")
    done = run_ctl(daemon, "servers", "install", bundle)
    assert done.returncode == 1
    assert "needs values for: api_key" in done.stderr
    out = ok(daemon, "servers", "install", bundle, "--input", "api_key=${DUMP_KEY}")
    assert "installed as env-dump" in out
    assert "/state/mework/bundles/env-dump-1.2.0-" in out
    ok(daemon, "servers", "rm", "env-dump")
    assert not any((daemon.root / "state" / "mework" / "bundles").iterdir())


def test_registries_are_set_from_the_command_line(served: tuple[Daemon, FixtureRegistry]) -> None:
    daemon, registry = served
    other = "https://registry.example.com/mirror"
    try:
        ok(daemon, "settings", "set", f"registries={registry.url}, {other}")
        assert ok_json(daemon, "settings", "show")["mcp"]["registries"] == [registry.url, other]
    finally:
        ok(daemon, "settings", "set", f"registries={registry.url}")
