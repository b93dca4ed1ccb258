"""A server's detail page: prompts, resources and completion on a short-lived session, and
servers.tools (what it last reported, without connecting); against server-everything.

One daemon for the module's one test: each inspection dials a Node process, so they share it.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mework_client import RpcError
from mework_client.aio import AsyncClient, connect
from mework_client.ctl.servers_inspect import (
    format_completion,
    format_prompt,
    format_prompts,
    format_read,
    format_resources,
)

from tests.daemon_helpers import PEERS, begin_turn, descendants, envdump, start_daemon, wait_gone

pytestmark = [pytest.mark.anyio, pytest.mark.peers]

EVERYTHING = PEERS / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
NODE = shutil.which("node")
SECRET = "mw-inspect-secret-4f1c2a9e"
LIMIT = 20  # mcp.max_reply_bytes: shorter than the prompt and the blob below


async def kind_of(c: AsyncClient, method: str, params: dict[str, Any]) -> tuple[str, str]:
    with pytest.raises(RpcError) as caught:
        await c.call(method, params)
    return caught.value.kind, str(caught.value)


async def test_prompts_resources_completion_and_last_reported(short_tmp: Path) -> None:
    if NODE is None or not EVERYTHING.exists():
        pytest.skip("server-everything is not installed in .peers")
    servers = {
        "everything": {"command": NODE, "args": [str(EVERYTHING), "stdio"]},
        "plain": envdump(),
    }
    mcp = {"max_reply_bytes": LIMIT}
    async with start_daemon(short_tmp, servers, mcp=mcp) as (daemon, sock), connect(sock) as c:
        before = descendants()
        # Nothing reported yet, and nothing is dialed to say so.
        empty = await c.call("servers.tools", {"name": "everything"})
        assert empty == {
            "name": "everything",
            "tools": None,
            "prompts": None,
            "resources": None,
            "resourceTemplates": None,
            "reported": {},
        }

        prompts = await c.call("servers.prompts", {"name": "everything"})
        assert prompts["offered"] is True
        names = {p["name"] for p in prompts["prompts"]}
        assert {"simple-prompt", "args-prompt", "completable-prompt"} <= names
        assert "args-prompt" in format_prompts(prompts)

        # Past mcp.max_reply_bytes (LIMIT) text is cut and a blob left out, saying so.
        got = await c.call(
            "servers.getPrompt",
            {"name": "everything", "prompt": "args-prompt", "arguments": {"city": "Paris"}},
        )
        shown = got["messages"][0]["content"]
        assert "What's weather in Paris?".startswith(shown["text"])
        assert shown["truncated"]
        assert len(shown["text"].encode()) == LIMIT
        assert f"mcp.max_reply_bytes is {LIMIT}" in got["cut"][0]
        assert "user: " in format_prompt(got)
        assert "cut: " in format_prompt(got)

        # A missing required argument is the server's own -32602, its code said once.
        with pytest.raises(RpcError) as refused:
            await c.call("servers.getPrompt", {"name": "everything", "prompt": "args-prompt"})
        assert refused.value.kind == "server_unavailable"
        assert "(-32602)" in refused.value.message
        assert "MCP error" not in refused.value.message

        listed = await c.call("servers.resources", {"name": "everything"})
        assert len(listed["resources"]) >= 7
        templates = [t["uriTemplate"] for t in listed["resourceTemplates"]]
        assert "demo://resource/dynamic/text/{resourceId}" in templates
        assert "Templates (" in format_resources(listed)

        blob = await c.call(
            "servers.readResource", {"name": "everything", "uri": "demo://resource/dynamic/blob/1"}
        )
        content = blob["contents"][0]
        assert content["blob"] is None
        assert content["size"] > LIMIT
        assert content["truncated"]
        assert blob["uri"] == "demo://resource/dynamic/blob/1"
        assert "left out" in blob["cut"][0]
        assert f"[blob: {content['size']} bytes" in format_read(blob)

        ref = {"type": "ref/prompt", "name": "completable-prompt"}
        named = await c.call(
            "servers.complete",
            {
                "name": "everything",
                "ref": ref,
                "argument": {"name": "name", "value": ""},
                "contextArguments": {"department": "Sales"},
            },
        )
        assert named["values"] == ["David", "Eve", "Frank"]
        assert format_completion(named).splitlines() == ["David", "Eve", "Frank"]
        # What the inspections saw is kept; a turn's discovery reports the tools.
        last = await c.call("servers.tools", {"name": "everything"})
        assert {p["name"] for p in last["prompts"]} == names
        assert last["reported"]["prompts"]["source"] == "inspection"
        assert last["tools"] is None
        turn = await begin_turn(c, ["plain"])
        plain_last = await c.call("servers.tools", {"name": "plain"})
        assert plain_last["reported"]["tools"]["source"] == "turn"
        tools = {t["name"]: t for t in plain_last["tools"]}
        assert tools["env"]["boundName"] in turn["bindings"]

        # A server without prompts or resources: not offered, not an error.
        plain_prompts = await c.call("servers.prompts", {"name": "plain"})
        assert plain_prompts == {"name": "plain", "offered": False, "prompts": None}
        assert "not offered" in format_prompts(plain_prompts)
        plain = await c.call("servers.resources", {"name": "plain"})
        assert plain["offered"] is False
        nothing = await c.call(
            "servers.complete",
            {"name": "plain", "ref": ref, "argument": {"name": "x", "value": ""}},
        )
        assert nothing["offered"] is False

        # Bad input gets a clear error; the server's own refusals keep their kind.
        kind, message = await kind_of(
            c, "servers.complete", {"name": "everything", "ref": {"type": "x"}, "argument": {}}
        )
        assert kind == "invalid_params"
        assert "ref/prompt" in message
        kind, _ = await kind_of(c, "servers.prompts", {"name": "nobody"})
        assert kind == "server_not_found"
        kind, _ = await kind_of(c, "servers.tools", {"name": "nobody"})
        assert kind == "server_not_found"
        kind, message = await kind_of(c, "servers.getPrompt", {"name": "plain", "prompt": "p"})
        assert kind == "server_unavailable"
        assert "answered with an error" in message

        # Inspection never uses or adds to the pool beyond the turn's, and leaves nothing running.
        assert {s.conversation for s in daemon.pool.sessions} == {turn["conversationId"]}
        await wait_gone(descendants() - before - {s.pid for s in daemon.pool.sessions})


async def test_meworkctl_inspection_commands(short_tmp: Path) -> None:
    servers = {
        "plain": envdump(),
        "unset": envdump(env={"T": "${MW_SURELY_UNSET_VARIABLE}"}),
        # A tool named after the server's secret: what a turn discovered is shown redacted.
        "named": envdump("--tool-named-env", "API_TOKEN", env={"API_TOKEN": SECRET}),
    }
    ctl = [str(Path(sys.executable).parent / "meworkctl")]
    async with start_daemon(short_tmp, servers) as (_daemon, sock):
        base = [*ctl, "--socket", str(sock), "servers"]
        shown = await anyio.run_process([*base, "resources", "plain"], check=False)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.decode().strip() == "Resources: not offered by this server"

        # A server's failure keeps its kind, and its classified reason, on the terminal.
        failed = await anyio.run_process([*base, "prompts", "unset"], check=False)
        assert failed.returncode == 1
        assert "unset_variable" not in failed.stderr.decode()  # a kind is for --json

        async with connect(sock) as c:
            await begin_turn(c, ["named"])
            last = await c.call("servers.tools", {"name": "named"})
        assert last["reported"]["tools"]["source"] == "turn"
        assert SECRET not in json.dumps(last)

        usage = await anyio.run_process([*base, "complete", "plain", "x"], check=False)
        assert usage.returncode == 2
        assert "give either --prompt PROMPT or --template URI_TEMPLATE" in usage.stderr.decode()
