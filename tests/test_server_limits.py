"""A stdio server's ``limits`` (issue 28, section 2): set on its process as rlimits, checked in
the settings with clear errors, and a server that dies on one reported as ``resource_limit``
naming the limit, in Test connection, its last failure and its Logs.

The fixture server (tests/servers/greedy.py) goes past one limit each: 1 GiB at once, files
opened until the open fails, processes forked until the fork fails (as a spare uid when run as
root, which Linux never holds to the process limit), a busy loop.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from mework_client.aio import connect

from tests.common import PY, SERVERS, text_of
from tests.daemon_helpers import begin_turn, call_tool, start_daemon, wait_event

pytestmark = pytest.mark.anyio

GREEDY = str(SERVERS / "greedy.py")
SPARE_UID = 61_000 + os.getpid() % 4000  # a uid no account has, apart per test run

LIMITS = {
    "memory": ("memoryMiB", 64),
    "files": ("openFiles", 32),
    "processes": ("processes", 4),
    "cpu": ("cpuSeconds", 1),
}


def greedy(what: str, at: str = "start", **limits: int) -> dict[str, Any]:
    # The soft limit it waits for before going past it (files, processes: as given).
    expect = {"files": limits.get("openFiles"), "processes": limits.get("processes")}.get(what)
    wait = ["--expect", str(expect)] if expect is not None else []
    return {
        "command": PY,
        "args": [GREEDY, "--exceed", what, "--at", at, "--uid", str(SPARE_UID), *wait],
        "limits": limits,
        "timeoutSeconds": 30,
    }


async def logged(client: Any, server: str) -> list[str]:
    logs = await client.call("servers.logs", {"name": server})
    return [line["line"] for line in logs["lines"]]


@pytest.mark.parametrize("what", list(LIMITS))
async def test_a_server_that_dies_on_a_limit_is_a_resource_limit_failure(
    short_tmp: Path, what: str
) -> None:
    key, value = LIMITS[what]
    servers = {"g": greedy(what, **{key: value})}
    async with start_daemon(short_tmp, servers) as (_daemon, sock), connect(sock) as c:
        result = await c.call("servers.test", {"name": "g"})
        assert result["ok"] is False, result
        assert result["kind"] == "resource_limit", result
        assert result["limit"] == key, result
        assert result["error"].startswith(f"the server was stopped by its limits.{key}: "), result
        assert "raise the limit or leave it out" in result["error"]
        last = (await c.call("servers.get", {"name": "g"}))["lastError"]
        assert last["kind"] == "resource_limit", last
        assert last["limit"] == key, last
        lines = await logged(c, "g")
        assert any(
            line.startswith(f"[meworkd] the server was stopped by its limits.{key}")
            for line in lines
        ), lines


async def test_a_server_that_dies_on_its_cpu_limit_while_running(short_tmp: Path) -> None:
    """Past its limit during a call: the call fails, the server's failure is resource_limit
    (a server.status event, lastError) and its Logs say so."""
    servers = {"g": greedy("cpu", "call", cpuSeconds=1)}
    async with start_daemon(short_tmp, servers) as (_daemon, sock), connect(sock) as c:
        await c.subscribe(["server.status"])
        turn = await begin_turn(c, ["g"])
        reply = await call_tool(c, turn, "g", "exceed")
        assert reply["isError"] is True, reply
        failed = await wait_event(c, "server.status", lambda d: d["status"] == "failed")
        assert failed["kind"] == "resource_limit", failed
        assert failed["limit"] == "cpuSeconds", failed
        assert "(SIGXCPU)" in failed["error"], failed
        servers_list = (await c.call("servers.list"))["servers"]
        (entry,) = [s for s in servers_list if s["name"] == "g"]
        assert entry["lastError"]["kind"] == "resource_limit", entry
        assert any("limits.cpuSeconds" in line for line in await logged(c, "g"))


async def test_the_limits_are_set_on_the_servers_process(short_tmp: Path) -> None:
    limits = {"memoryMiB": 256, "processes": 500, "openFiles": 64, "cpuSeconds": 30}
    servers = {"g": greedy("cpu", "call", **limits)}
    async with start_daemon(short_tmp, servers) as (_daemon, sock), connect(sock) as c:
        turn = await begin_turn(c, ["g"])
        own = json.loads(text_of(await call_tool(c, turn, "g", "limits")))
        assert own == {
            "RLIMIT_DATA": [256 * 1024 * 1024] * 2,
            "RLIMIT_NPROC": [500, 500],
            "RLIMIT_NOFILE": [64, 64],
            "RLIMIT_CPU": [30, 31],
        }


@pytest.mark.parametrize(
    ("limits", "error"),
    [
        ({"memoryMiB": 8}, "g.limits.memoryMiB: expected a whole number from 16 to 4194304"),
        ({"cpuSeconds": 0}, "g.limits.cpuSeconds: expected a whole number from 1 to 31536000"),
        ({"openFiles": True}, "g.limits.openFiles: expected int, got bool"),
        ({"processes": "4"}, "g.limits.processes: expected int, got str"),
        ({"memoryMib": 64}, 'g.limits.memoryMib: unknown key; did you mean "memoryMiB"?'),
        ({}, "g.limits: empty; give one of memoryMiB, processes, openFiles, cpuSeconds"),
        ([64], "g.limits: expected object, got array"),
    ],
)
async def test_bad_limits_are_refused_with_a_clear_error(
    short_tmp: Path, limits: object, error: str
) -> None:
    async with start_daemon(short_tmp, {}) as (_daemon, sock), connect(sock) as c:
        entry = {"command": PY, "args": [GREEDY, "--exceed", "cpu"], "limits": limits}
        with pytest.raises(Exception) as caught:
            await c.call("servers.add", {"name": "g", "server": entry})
        assert error in str(caught.value), caught.value
        remote = {"url": "https://example.com/mcp", "limits": {"cpuSeconds": 5}}
        with pytest.raises(Exception) as caught:
            await c.call("servers.add", {"name": "r", "server": remote})
        assert "r.limits: only a stdio server's process has limits" in str(caught.value)
