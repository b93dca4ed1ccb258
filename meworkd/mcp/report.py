"""Test connection's MCP side: list everything a fresh session offers, as plain data."""

from typing import Any

import anyio

from meworkd.mcp.errors import TALK_ERRORS, talk_failure
from meworkd.mcp.model import ServerReport
from meworkd.mcp.session import McpSession
from meworkd.mcp.tools import list_all
from meworkd.settings import ServerConfig

__all__ = ["describe"]


async def describe(session: McpSession, config: ServerConfig) -> ServerReport:
    """What ``session``'s server offers, each list complete (every page), within its timeout.

    Raises:
        TalkFailed: a request failed (worded for ``config``, the entry as written).
        ServerUnavailable: another failure, e.g. an InvalidListing naming the tools.
    """
    caps = session.capabilities
    try:
        with anyio.fail_after(config.timeout):
            async with session.lease() as client:
                tools = await list_all(client, "tools") if caps is None or "tools" in caps else []
                prompts = await list_all(client, "prompts") if caps and "prompts" in caps else []
                has_resources = bool(caps and "resources" in caps)
                resources = await list_all(client, "resources") if has_resources else []
                templates = await list_all(client, "resource_templates") if has_resources else []
    except TALK_ERRORS as exc:
        raise talk_failure(exc, session.server, config) from None
    return ServerReport(
        protocol_version=session.protocol_version,
        server_info=session.server_info,
        capabilities=caps or {},
        instructions=session.instructions,
        tools=_dump(tools),
        prompts=_dump(prompts),
        resources=_dump(resources),
        resource_templates=_dump(templates),
    )


def _dump(items: list[Any]) -> list[dict[str, Any]]:
    return [i.model_dump(by_alias=True, mode="json", exclude_none=True) for i in items]
