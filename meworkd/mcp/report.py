"""Test connection's MCP side: list everything a fresh session offers, as plain data."""

from typing import Any

import anyio
from mcp import MCPError
from mcp_types import METHOD_NOT_FOUND

from meworkd.mcp.errors import TALK_ERRORS, InvalidListing, server_error_text, talk_failure
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
    offered: dict[str, bool] = {}
    errors: dict[str, str] = {}
    try:
        with anyio.fail_after(config.timeout):
            async with session.lease() as client:
                tools = await list_all(client, "tools") if caps is None or "tools" in caps else []
                optional = {}
                for section, what, capability in _OPTIONAL:
                    listed = None
                    if caps and capability in caps:
                        listed = await _optional_list(client, what, section, errors)
                    offered[section] = listed is not None
                    optional[section] = listed
    except TALK_ERRORS as exc:
        raise talk_failure(exc, session.server, config) from None
    return ServerReport(
        protocol_version=session.protocol_version,
        server_info=session.server_info,
        capabilities=caps or {},
        instructions=session.instructions,
        tools=_dump(tools),
        prompts=_dump_or_none(optional["prompts"]),
        resources=_dump_or_none(optional["resources"]),
        resource_templates=_dump_or_none(optional["resourceTemplates"]),
        offered=offered,
        section_errors=errors,
    )


# Sections a server may leave out: (report key, list_all name, capability that announces it).
_OPTIONAL = (
    ("prompts", "prompts", "prompts"),
    ("resources", "resources", "resources"),
    ("resourceTemplates", "resource_templates", "resources"),
)


async def _optional_list(
    client: Any, what: str, section: str, errors: dict[str, str]
) -> list[Any] | None:
    """``what``'s listing, or None when the server does not really offer it.

    Only initialize and tools/list decide whether a server works: a server that announces
    prompts or resources and answers "method not found" (mcp-server-sqlite does) or a broken
    listing is connected with that section not offered; other failures are noted in ``errors``.
    """
    try:
        return await list_all(client, what)
    except MCPError as exc:
        if exc.code != METHOD_NOT_FOUND:
            errors[section] = server_error_text(exc)
        return None
    except InvalidListing as exc:
        errors[section] = exc.message
        return None


def _dump_or_none(items: list[Any] | None) -> list[dict[str, Any]] | None:
    return None if items is None else _dump(items)


def _dump(items: list[Any]) -> list[dict[str, Any]]:
    return [i.model_dump(by_alias=True, mode="json", exclude_none=True) for i in items]
