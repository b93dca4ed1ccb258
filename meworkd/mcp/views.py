"""MCP Apps on the session's side: the extension meworkd advertises, and reading a view.

A view is a ``ui://`` resource read with ``resources/read`` on the conversation's own session.
Unlike a tool reply, its ``_meta`` is kept: the view's CSP, permissions, domain and border
preference are declared there. The reply is refused while it arrives past its bound.
"""

from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp import ClientSession, MCPError

from meworkd.mcp.budget import REPLY_ALLOWANCE, REPLY_BUDGET, ReplyBudget
from meworkd.mcp.errors import TalkFailed

__all__ = ["APPS_EXTENSION", "APP_MIME_TYPE", "MAX_VIEW_BYTES", "read_raw"]

APPS_EXTENSION = "io.modelcontextprotocol/ui"
APP_MIME_TYPE = "text/html;profile=mcp-app"
MAX_VIEW_BYTES = 2 * 1024 * 1024  # a view's HTML; a resource a view reads, likewise


def read_raw(uri: str, limit: int = MAX_VIEW_BYTES) -> Callable[[ClientSession], Awaitable[Any]]:
    """A ``resources/read`` of ``uri`` for :meth:`SessionPool.using`: ``{contents}`` as sent,
    ``_meta`` kept; refused (reason ``view_too_large``) once it passes ``limit`` bytes."""

    async def use(client: ClientSession) -> dict[str, Any]:
        budget = ReplyBudget(limit + REPLY_ALLOWANCE)
        token = REPLY_BUDGET.set(budget)
        try:
            result = await client.read_resource(uri, allow_input_required=True)
        except MCPError:
            if not budget.refused:
                raise
            raise TalkFailed(
                f"the server's resources/read reply for {uri} passed {limit} bytes while it "
                "arrived; refused",
                reason="view_too_large",
                call_text="",
            ) from None
        finally:
            REPLY_BUDGET.reset(token)
        if isinstance(result, types.InputRequiredResult):
            raise TalkFailed(
                f"the server asks for input to answer resources/read of {uri}",
                reason="input_required",
                call_text="",
            )
        dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped

    return use
