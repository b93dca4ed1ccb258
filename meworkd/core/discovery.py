"""Discovery at a turn's start: the selected servers' tools, listed concurrently.

A server that fails to connect or to list is left out of the turn: its failure is added to the
turn's ``failures`` and published once (``server.status`` failed); the others still answer.
"""

import anyio

from meworkd.base.errors import MeworkError
from meworkd.core.catalog import server_failure
from meworkd.core.inspect import Inventory
from meworkd.mcp import SessionPool, ToolInfo, list_tools
from meworkd.settings import Settings

__all__ = ["discover"]


async def discover(
    pool: SessionPool,
    inventory: Inventory,
    conversation_id: str,
    servers: list[str],
    settings: Settings,
    failures: list[dict[str, str]],
) -> dict[str, list[ToolInfo]]:
    """Each of ``servers``' tools (on the conversation's pooled sessions), by server; a
    failure is appended to ``failures``. What was found is recorded (``servers.tools``)."""
    listings: dict[str, list[ToolInfo]] = {}

    async def one(server: str) -> None:
        config = settings.servers[server]
        try:
            listings[server] = await pool.using(
                conversation_id, server, config, list_tools, within=config.timeout
            )
            inventory.record_tools(server, listings[server])
        except MeworkError as exc:
            kind = str(exc.data.get("reason", exc.kind))
            failures.append(server_failure(server, kind, exc.message))
            # Published once, here: frontends show the failure (server.status failed).
            pool.status.failed(server, conversation_id, exc)

    async with anyio.create_task_group() as tg:
        for server in servers:
            tg.start_soon(one, server)
    return listings
