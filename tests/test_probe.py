"""Test connection (``servers.test``) against a real in-process daemon.

A fresh session of its own (the pool is untouched), every page of tools, prompts, resources and
templates, serverInfo recorded on disk, no process left; failures named plainly; problems the
model would hit reported before any turn.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from mework_client.aio import connect
from mework_client.ctl.servers_probe import format_test

from tests.common import fake
from tests.daemon_helpers import (
    MODERN_ONLY,
    PY,
    begin_turn,
    descendants,
    envdump,
    free_port,
    http_fixture,
    session_for,
    start_daemon,
    wait_gone,
)

pytestmark = pytest.mark.anyio

FIXED_KITCHEN_TOOLS = 17  # kitchen.py's own tools, before --tools N
LEAKS = re.compile(r"Traceback|\b[A-Z][A-Za-z]*(?:Error|Exception|Group)\b|File \"|\.py\b")


def assert_plain(result: dict[str, Any]) -> None:
    """A failure says what happened in words, with no Python internals."""
    assert result["ok"] is False
    assert not LEAKS.search(json.dumps(result)), result
    assert isinstance(result["durationMs"], float)


async def test_servers_test_lists_everything_records_server_info_and_cleans_up(
    short_tmp: Path,
) -> None:
    servers = {
        "k": fake("--tools", "30", "--page-size", "7", "--name", "kit", "--version", "9.9.9"),
        "modern": {"command": PY, "args": [MODERN_ONLY, "--name", "modk", "--version", "3.2.1"]},
    }
    async with start_daemon(short_tmp, servers) as (daemon, sock), connect(sock) as c:
        # A pooled session exists already; Test connection must not use or add to the pool.
        turn = await begin_turn(c, ["k"])
        pooled = session_for(daemon, turn["conversationId"], "k")
        before = descendants()
        assert pooled.pid in before

        result = await c.call("servers.test", {"name": "k"})

        assert daemon.pool.sessions == [pooled]
        assert pooled.alive
        assert descendants() == before  # the test's own process is gone already
        assert result["ok"] is True, result
        names = [t["name"] for t in result["tools"]]
        assert len(names) == FIXED_KITCHEN_TOOLS + 30  # every page of 7
        assert len(set(names)) == len(names)
        assert [n for n in names if re.fullmatch(r"t\d+", n)] == [f"t{i}" for i in range(30)]
        assert all(t["boundName"].startswith("mcp__k_") for t in result["tools"])
        assert [p["name"] for p in result["prompts"]] == ["greet"]
        assert [r["uri"] for r in result["resources"]] == ["mem://hello"]
        assert [t["uriTemplate"] for t in result["resourceTemplates"]] == ["mem://item/{id}"]
        assert result["protocolVersion"] == "2025-11-25"
        assert result["capabilities"]["tools"] == {"listChanged": True}
        assert result["problems"] == []
        assert result["offered"] == {"prompts": True, "resources": True, "resourceTemplates": True}
        info = result["serverInfo"]
        assert (info["name"], info["version"]) == ("kit", "9.9.9")
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", info["testedAt"])

        on_disk = json.loads(daemon.paths.settings.read_text())
        assert on_disk["assets"]["mcpServers"]["k"]["serverInfo"] == info
        shown = await c.call("servers.get", {"name": "k"})
        assert shown["serverInfo"] == info
        # Recording serverInfo is not a connection change: the pooled session stays.
        assert session_for(daemon, turn["conversationId"], "k") is pooled

        # A server of the 2026-07-28 era only (no initialize) is tested just as well.
        modern = await c.call("servers.test", {"name": "modern"})
        assert modern["ok"] is True, modern
        assert modern["protocolVersion"] == "2026-07-28"
        assert (modern["serverInfo"]["name"], modern["serverInfo"]["version"]) == (
            "modk",
            "3.2.1",
        )
        assert len(modern["tools"]) == FIXED_KITCHEN_TOOLS
        await wait_gone(descendants() - before)
        assert daemon.pool.sessions == [pooled]


async def test_failures_are_named_plainly(short_tmp: Path) -> None:
    async with http_fixture("500") as url500:
        servers = {
            "missing": {"command": "/nonexistent/mework-test-server"},
            "exits": fake("--exit-at-start", "4"),
            "hangs": fake("--hang-initialize", timeoutSeconds=1),
            "unset": envdump(env={"TOKEN": "${MW_SURELY_UNSET_VARIABLE}"}),
            "http500": {"type": "streamable_http", "url": url500},
            "refused": {"type": "streamable_http", "url": f"http://127.0.0.1:{free_port()}/mcp"},
            "nocwd": fake(cwd="/nonexistent/mework-test-dir"),
        }
        async with start_daemon(short_tmp, servers) as (daemon, sock), connect(sock) as c:
            before = descendants()
            results = {name: await c.call("servers.test", {"name": name}) for name in servers}
            for result in results.values():
                assert_plain(result)

            missing = results["missing"]
            assert missing["reason"] == "command_not_found"
            assert missing["error"] == (
                "command not found: /nonexistent/mework-test-server (no such file)"
            )

            exits = results["exits"]
            assert exits["reason"] == "exited"
            assert exits["error"] == "the server exited with code 4 during start-up"
            assert exits["stderrTail"] == ["kitchen: fatal: cannot start"]

            hangs = results["hangs"]
            assert hangs["reason"] == "timeout"
            assert hangs["error"] == "timed out after 1 s"

            unset = results["unset"]
            assert unset["reason"] == "unset_variable"
            assert "${MW_SURELY_UNSET_VARIABLE}" in unset["error"]
            assert "not set" in unset["error"]

            http500 = results["http500"]
            assert http500["reason"] == "http_status"
            assert http500["error"] == f"HTTP 500 from {url500}: kitchen http: internal failure"

            refused = results["refused"]
            assert refused["reason"] == "connect_failed"
            assert refused["error"].endswith("connection refused")

            nocwd = results["nocwd"]
            assert nocwd["reason"] == "bad_cwd"
            assert (
                nocwd["error"] == "working directory does not exist: /nonexistent/mework-test-dir"
            )

            # Nothing was recorded for a failed test, and nothing is left running.
            on_disk = json.loads(daemon.paths.settings.read_text())["assets"]["mcpServers"]
            assert all("serverInfo" not in entry for entry in on_disk.values())
            await wait_gone(descendants() - before)
            assert daemon.pool.sessions == []

            with pytest.raises(Exception) as caught:
                await c.call("servers.test", {"name": "nobody"})
            assert getattr(caught.value, "kind", None) == "server_not_found"


async def test_problems_the_model_would_hit_are_reported(short_tmp: Path) -> None:
    servers = {"lint": envdump("--lint-tools"), "schemaless": envdump("--no-schema-tool")}
    async with start_daemon(short_tmp, servers) as (_daemon, sock), connect(sock) as c:
        lint = await c.call("servers.test", {"name": "lint"})
        assert lint["ok"] is True
        problems = {(p["tool"], p["problem"]) for p in lint["problems"]}
        long_name = next(t["name"] for t in lint["tools"] if len(t["name"]) == 60)
        assert problems == {
            (long_name, "name_shortened"),
            ("either", "root_combinator"),
            ("env", "duplicate_name"),
        }
        shortened = next(p for p in lint["problems"] if p["problem"] == "name_shortened")
        bound = next(t["boundName"] for t in lint["tools"] if t["name"] == long_name)
        assert bound in shortened["detail"]
        assert len(bound) <= 64

        # A tool without inputSchema makes the whole tools/list invalid for the SDK: the
        # test fails, plainly, and names the tool.
        schemaless = await c.call("servers.test", {"name": "schemaless"})
        assert_plain(schemaless)
        assert schemaless["reason"] == "invalid_reply"
        assert "'schemaless'" in schemaless["error"]
        assert "inputSchema" in schemaless["error"]
        assert schemaless["problems"] == [
            {
                "tool": "schemaless",
                "problem": "missing_input_schema",
                "detail": "inputSchema: Field required",
            }
        ]

        # In a turn, that server is absent and listed in the failures; the turn goes on.
        turn = await begin_turn(c, ["lint", "schemaless"])
        assert [f["server"] for f in turn["failures"]] == ["schemaless"]
        assert "inputSchema" in turn["failures"][0]["reason"]
        assert {b["server"] for b in turn["bindings"].values()} == {"lint"}


async def test_optional_sections_not_offered_and_task_only_tools_callable_on_stdio(
    short_tmp: Path,
) -> None:
    servers = {
        # Announces prompts and resources, answers their lists "method not found" (like the
        # official mcp-server-sqlite); one tool runs only as a (2025-11-25) task, which
        # meworkd follows on stdio: not a problem there (over HTTP it is: test_tasks.py).
        "sqlite_like": envdump("--claims-prompts-resources", "--task-tool"),
        "bare": envdump(),
        "no_templates": envdump("--resources-no-templates"),
    }
    async with start_daemon(short_tmp, servers) as (_daemon, sock), connect(sock) as c:
        result = await c.call("servers.test", {"name": "sqlite_like"})
        assert result["ok"] is True, result
        assert result["capabilities"]["prompts"] == {}
        assert (result["prompts"], result["resources"], result["resourceTemplates"]) == (
            None,
            None,
            None,
        )
        assert result["offered"] == {
            "prompts": False,
            "resources": False,
            "resourceTemplates": False,
        }
        assert result["sectionErrors"] == {}
        assert "needs_tasks" not in [p["problem"] for p in result["problems"]]
        partial = await c.call("servers.test", {"name": "no_templates"})
        assert partial["ok"] is True
        assert partial["offered"] == {
            "prompts": False,
            "resources": True,
            "resourceTemplates": False,
        }
        assert [r["uri"] for r in partial["resources"]] == ["mem://only"]
        assert partial["resourceTemplates"] is None
        assert "Resources (1):" in format_test(partial)
        assert "Prompts: not offered by this server" in format_test(partial)
        bare = await c.call("servers.test", {"name": "bare"})
        assert bare["ok"] is True
        assert bare["offered"] == {"prompts": False, "resources": False, "resourceTemplates": False}

        # In a turn the task-only tool is offered: on stdio meworkd asks for the task.
        turn = await begin_turn(c, ["sqlite_like"])
        assert "research" in {b["tool"] for b in turn["bindings"].values()}
        assert "env" in {b["tool"] for b in turn["bindings"].values()}
        assert turn["failures"] == []
