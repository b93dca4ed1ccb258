"""Fixture MCP server (mcp 2.3 MCPServer) whose tools ask their host for things mid-call.

``python tests/servers/asking.py`` serves stdio in the handshake era; behind
``modern_only.py --server asking.py`` (which answers ``initialize`` with -32601) the client
discovers the 2026-07-28 era and the ``*_any_era`` tools ask through ``input_required`` rounds
instead of requests.
"""

import json
import sys
import uuid
from typing import Annotated, Literal

import mcp_types as types
from mcp import MCPError
from mcp.server.mcpserver import (
    Context,
    Elicit,
    ElicitationResult,
    ListRoots,
    MCPServer,
    Resolve,
    Sample,
)
from mcp.shared.exceptions import UrlElicitationRequiredError
from pydantic import BaseModel, Field

mcp = MCPServer("asking", version="0.0.1")


class Prefs(BaseModel):
    name: str = Field(description="Your name")
    count: int = Field(default=3, ge=1, le=10)
    color: Literal["red", "green", "blue"] = "green"
    notify: bool = False


@mcp.tool()
async def ask_prefs(ctx: Context) -> str:
    r = await ctx.elicit("Tell me your preferences", Prefs)
    return (
        f"accepted {json.dumps(r.data.model_dump(), sort_keys=True)}"
        if r.action == "accept"
        else r.action
    )


@mcp.tool()
async def open_url(ctx: Context) -> str:
    eid = str(uuid.uuid4())
    r = await ctx.elicit_url("Log in to Example", "https://example.com/login", eid)
    if r.action == "accept":
        await ctx.session.send_elicit_complete(eid)
    return f"{r.action} {eid}"


logged_in = {"done": False}


@mcp.tool()
async def needs_login() -> str:
    """Fails with -32042 (URL elicitation required) until the client has consented once."""
    if not logged_in["done"]:
        logged_in["done"] = True
        url = types.ElicitRequestURLParams(
            message="Log in first", url="https://example.com/auth", elicitation_id="auth-1"
        )
        raise UrlElicitationRequiredError([url])
    return "logged in"


@mcp.tool()
async def nested_form(ctx: Context) -> str:
    schema = {"type": "object", "properties": {"addr": {"type": "object", "properties": {}}}}
    try:
        return (
            await ctx.session.elicit_form("Address?", schema, related_request_id=ctx.request_id)
        ).action
    except MCPError as exc:
        return f"refused {exc.error.code}"


@mcp.tool()
async def slow_elicit(ctx: Context) -> str:
    try:
        return (await ctx.elicit("Nobody will answer this", Prefs)).action
    except BaseException as exc:
        print(f"asking: slow_elicit ended by {type(exc).__name__}", file=sys.stderr, flush=True)
        raise


LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
log_level = {"min": "debug"}  # what the client last asked for with logging/setLevel


async def _set_level(_ctx: object, params: types.SetLevelRequestParams) -> types.EmptyResult:
    log_level["min"] = params.level
    return types.EmptyResult()


# MCPServer serves no logging/setLevel (and so declares no `logging`): this one does.
mcp._lowlevel_server.add_request_handler(
    "logging/setLevel", types.SetLevelRequestParams, _set_level
)


@mcp.tool()
async def chatty(ctx: Context) -> str:
    for level, text in (("info", "working hard"), ("warning", "almost out of tea")):
        if LEVELS.index(level) >= LEVELS.index(log_level["min"]):
            await ctx.log(level, text)
    return "ok"


def _ask() -> Elicit[Prefs]:
    return Elicit("Preferences, please", Prefs)


def _sample(topic: str) -> Sample:
    msg = types.SamplingMessage(
        role="user", content=types.TextContent(type="text", text=f"One line on {topic}")
    )
    return Sample([msg], max_tokens=50)


def _roots() -> ListRoots:
    return ListRoots()


@mcp.tool()
async def prefs_any_era(p: Annotated[ElicitationResult[Prefs], Resolve(_ask)]) -> str:
    data = json.dumps(p.data.model_dump(), sort_keys=True) if p.action == "accept" else ""
    return f"{p.action} {data}".strip()


@mcp.tool()
async def summarize(topic: str, r: Annotated[types.CreateMessageResult, Resolve(_sample)]) -> str:
    return f"model={r.model} text={r.content.text}"


@mcp.tool()
async def show_roots(r: Annotated[types.ListRootsResult, Resolve(_roots)]) -> str:
    return ", ".join(f"{x.name}={x.uri}" for x in r.roots) or "no roots"


if __name__ == "__main__":
    mcp.run()
