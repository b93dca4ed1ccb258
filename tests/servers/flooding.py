"""Fixture MCP server (mcp 2.3 MCPServer) that floods its host with questions: ``flood`` asks
``n`` elicitations at once and answers how many were answered and what the refused ones said."""

import json

import anyio
from mcp import MCPError
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

mcp = MCPServer("flooding", version="0.0.1")


class Ok(BaseModel):
    ok: bool = True
    token: str = ""  # what a person may type into a form: never on meworkd's audit record


@mcp.tool()
async def flood(ctx: Context, n: int) -> str:
    answered: list[str] = []
    refused: list[str] = []

    async def ask(i: int) -> None:
        try:
            answered.append((await ctx.elicit(f"question {i}", Ok)).action)
        except MCPError as exc:
            refused.append(f"{exc.error.code}: {exc.error.message}")

    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(ask, i)
    return json.dumps({"answered": sorted(answered), "refused": refused})


if __name__ == "__main__":
    mcp.run()
