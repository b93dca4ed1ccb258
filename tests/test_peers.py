"""meworkd against MCP servers that nobody here wrote: the reference servers from npm
(server-everything over stdio and Streamable HTTP, server-filesystem) and mcp-server-time (PyPI).

They are installed into ``.peers/`` by the test script; without them these tests skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mework_client.aio import AsyncClient, connect

from tests.daemon_helpers import (
    PEERS,
    begin_turn,
    call_tool,
    descendants,
    free_port,
    start_daemon,
    text_of,
    wait_gone,
    wait_port,
)

pytestmark = [pytest.mark.anyio, pytest.mark.peers]

EVERYTHING = PEERS / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
FILESYSTEM = PEERS / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
TIME = Path(sys.executable).parent / "mcp-server-time"
NODE = shutil.which("node")


def need(*paths: Path) -> None:
    if NODE is None:
        pytest.skip("node is not installed (the peers are Node.js servers)")
    for path in paths:
        if not path.exists():
            pytest.skip(
                f"{path} is missing: install the peers with `cd .peers && npm install "
                "@modelcontextprotocol/server-everything @modelcontextprotocol/server-filesystem`"
            )


def node(script: Path, *args: str) -> dict[str, Any]:
    return {"type": "stdio", "command": NODE, "args": [str(script), *args]}


async def servers_test_ok(c: AsyncClient, name: str) -> dict[str, Any]:
    result: dict[str, Any] = await c.call("servers.test", {"name": name})
    assert result["ok"] is True, result
    return result


@asynccontextmanager
async def everything_over_http() -> AsyncIterator[str]:
    """server-everything in Streamable HTTP mode on a free port (it reads PORT)."""
    port = free_port()
    proc = subprocess.Popen(
        [str(NODE), str(EVERYTHING), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        await wait_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            await anyio.to_thread.run_sync(proc.wait, 10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def test_server_everything_over_stdio(short_tmp: Path) -> None:
    need(EVERYTHING)
    async with (
        start_daemon(short_tmp, {"everything": node(EVERYTHING, "stdio")}) as (d, sock),
        connect(sock) as c,
    ):
        before = descendants()
        result = await servers_test_ok(c, "everything")
        tools = {t["name"] for t in result["tools"]}
        assert {"echo", "get-sum"} <= tools
        assert result["serverInfo"]["name"]
        assert result["prompts"]
        assert result["resources"]
        await wait_gone(descendants() - before)

        turn = await begin_turn(c, ["everything"])
        assert turn["failures"] == []
        reply = await call_tool(c, turn, "everything", "echo", {"message": "hi from meworkd"})
        assert reply["isError"] is False
        assert text_of(reply) == "Echo: hi from meworkd"
        reply = await call_tool(c, turn, "everything", "get-sum", {"a": 2, "b": 40})
        assert "42" in text_of(reply)
        assert d.pool.count_for("everything") == 1


async def test_server_everything_over_streamable_http(short_tmp: Path) -> None:
    need(EVERYTHING)
    async with everything_over_http() as url:
        servers = {"everything": {"type": "streamable_http", "url": url}}
        async with start_daemon(short_tmp, servers) as (_d, sock), connect(sock) as c:
            result = await servers_test_ok(c, "everything")
            assert "echo" in {t["name"] for t in result["tools"]}
            turn = await begin_turn(c, ["everything"])
            assert turn["failures"] == []
            reply = await call_tool(c, turn, "everything", "echo", {"message": "over http"})
            assert text_of(reply) == "Echo: over http"


async def test_server_filesystem(short_tmp: Path) -> None:
    need(FILESYSTEM)
    shared = (short_tmp / "shared").resolve()
    shared.mkdir()
    (shared / "hello.txt").write_text("hello from a peer test\n")
    servers = {"fs": node(FILESYSTEM, str(shared))}
    async with start_daemon(short_tmp, servers) as (_d, sock), connect(sock) as c:
        result = await servers_test_ok(c, "fs")
        assert {"list_allowed_directories", "read_text_file"} <= {
            t["name"] for t in result["tools"]
        }
        turn = await begin_turn(c, ["fs"])
        assert turn["failures"] == []
        allowed = await call_tool(c, turn, "fs", "list_allowed_directories")
        assert str(shared) in text_of(allowed)
        read = await call_tool(c, turn, "fs", "read_text_file", {"path": str(shared / "hello.txt")})
        assert read["isError"] is False
        assert "hello from a peer test" in text_of(read)
        outside = await call_tool(c, turn, "fs", "read_text_file", {"path": "/etc/hostname"})
        assert outside["isError"] is True


async def test_mcp_server_time(short_tmp: Path) -> None:
    if not TIME.exists():
        pytest.skip(f"{TIME} is missing: install the test extras (mcp-server-time)")
    async with (
        start_daemon(short_tmp, {"time": {"command": str(TIME)}}) as (_d, sock),
        connect(sock) as c,
    ):
        result = await servers_test_ok(c, "time")
        assert "get_current_time" in {t["name"] for t in result["tools"]}
        turn = await begin_turn(c, ["time"])
        assert turn["failures"] == []
        reply = await call_tool(c, turn, "time", "get_current_time", {"timezone": "UTC"})
        assert reply["isError"] is False
        now = json.loads(text_of(reply))
        assert now["timezone"] == "UTC"
        assert "datetime" in now
