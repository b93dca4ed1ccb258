"""Following a 2026-07-28 server's list changes with ``subscriptions/listen``.

On a handshake-era session a server announces list changes with notifications on the session
itself; a 2026-07-28 server sends them only on a ``subscriptions/listen`` stream that the client
keeps open. A session whose server declares ``listChanged`` for its tools, prompts or resources
holds one such stream for its life (in its owner task's group). Each change drops the list kept
as fresh (:class:`meworkd.mcp.listcache.ListingCache`) and is passed on as handshake-era ones are.
A stream that breaks, or that the server ends, is opened again after a pause that doubles up to
a minute (with jitter), never in a tight loop; a server that refuses it is not asked again.
"""

import random
from collections.abc import Callable

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.client.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    SubscriptionLost,
    ToolsListChanged,
    listen,
)

from meworkd.base.log import get_logger
from meworkd.mcp.direct import DirectClientSession

__all__ = ["FIRST_PAUSE", "LONGEST_PAUSE", "follow_lists", "listed_changes"]

log = get_logger("meworkd.lists")

FIRST_PAUSE = 1.0  # seconds before opening a broken stream again; doubles each time
LONGEST_PAUSE = 60.0
_WHAT = {
    ToolsListChanged: "tools",
    PromptsListChanged: "prompts",
    ResourcesListChanged: "resources",
}
# A refusal that asking again will not change.
_FINAL = {types.METHOD_NOT_FOUND, types.INVALID_PARAMS}


def listed_changes(capabilities: types.ServerCapabilities | None) -> dict[str, bool]:
    """Which lists the server says it announces changes of (``listChanged``)."""
    if capabilities is None:
        return {}
    offered = {
        "tools": capabilities.tools,
        "prompts": capabilities.prompts,
        "resources": capabilities.resources,
    }
    return {what: bool(getattr(c, "list_changed", False)) for what, c in offered.items() if c}


async def follow_lists(
    client: DirectClientSession, server: str, changed: Callable[[str], None]
) -> None:
    """Keep a stream open until cancelled; ``changed(what)`` for each list change."""
    wanted = listed_changes(client.server_capabilities)
    if not any(wanted.values()):
        return
    pause = FIRST_PAUSE
    while True:
        try:
            async with listen(
                client,
                tools_list_changed=wanted.get("tools", False),
                prompts_list_changed=wanted.get("prompts", False),
                resources_list_changed=wanted.get("resources", False),
            ) as stream:
                pause = FIRST_PAUSE  # it opened: the next break starts the pauses afresh
                async for event in stream:
                    if (what := _WHAT.get(type(event))) is not None:
                        client.listings.forget(what)
                        changed(what)
        except MCPError as exc:
            if exc.code in _FINAL:
                log.info("lists.listen_refused", server=server, code=exc.code)
                return
            log.info("lists.listen_failed", server=server, code=exc.code)
        except (SubscriptionLost, TimeoutError):
            log.info("lists.listen_lost", server=server)
        # Ended or broken: while it was down a change may have been missed.
        for what in ("tools", "prompts", "resources"):
            client.listings.forget(what)
        await anyio.sleep(pause * random.uniform(0.8, 1.2))  # jitter, not secrecy
        pause = min(pause * 2, LONGEST_PAUSE)
