"""Following a server's ``list_changed``: what ``servers.tools`` shows follows what it offers.

A server announces that its tools, prompts or resources changed on one of its sessions; the
list is asked again on that same live session (never a new one: a closed session's server is
asked at its next use) and kept in the :class:`~meworkd.core.inspect.Inventory` as reported by
``changed``. Then frontends get ``server.changed``, so whoever reads ``servers.tools`` on it
sees the new list. Announcements that come while their list is being asked are folded into one
more asking afterwards: a chatty server costs one listing at a time per session and list.
"""

from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus

from meworkd.base.errors import MeworkError
from meworkd.base.events import EventBus
from meworkd.base.log import get_logger
from meworkd.core.inspect import Inventory, tool_entry
from meworkd.mcp import (
    InspectionRequest,
    McpSession,
    SessionPool,
    list_prompts,
    list_resources,
    list_tools,
    run_inspection,
)

__all__ = ["ListFollower"]

log = get_logger("meworkd.listings")

Key = tuple[str, str | None, str]  # (server, the session's conversation, "tools" | ...)


async def _tools(client: Any, _caps: dict[str, Any]) -> Any:
    return await list_tools(client)


REQUESTS: dict[str, InspectionRequest[Any]] = {
    "tools": _tools,
    "prompts": list_prompts,
    "resources": list_resources,
}


class ListFollower:
    """Asks a session's list again when its server says it changed, then tells frontends."""

    def __init__(self, bus: EventBus, inventory: Inventory) -> None:
        self._bus = bus
        self._inventory = inventory
        # The pool whose sessions are asked, while run() runs: the pool is built after this
        # (its host, ServerAsks, reports list changes here), so it is given to run().
        self._pool: SessionPool | None = None
        self._pending: dict[Key, None] = {}  # announced, not yet asked (in order, once each)
        self._busy: set[Key] = set()  # being asked now
        self._wake = anyio.Event()
        self._tg: TaskGroup | None = None  # set while run() runs

    def changed(self, server: str, conversation: str | None, section: str) -> None:
        """The server's ``section`` changed on its session of ``conversation``."""
        key = (server, conversation, section)
        if self._tg is None or section not in REQUESTS:
            self._announce(key)  # nothing to ask it with: frontends still hear of it
            return
        self._pending[key] = None
        self._wake.set()

    async def run(
        self, pool: SessionPool, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Ask the announced lists on ``pool``'s sessions until cancelled (each asking bounded
        by its server's timeout)."""
        async with anyio.create_task_group() as tg:
            self._tg, self._pool = tg, pool
            task_status.started()
            try:
                while True:
                    await self._wake.wait()
                    self._wake = anyio.Event()
                    for key in [k for k in self._pending if k not in self._busy]:
                        del self._pending[key]
                        self._busy.add(key)
                        tg.start_soon(self._follow, key)
            finally:
                self._tg = self._pool = None

    async def _follow(self, key: Key) -> None:
        try:
            await self._ask(*key)
        finally:
            self._busy.discard(key)
            if key in self._pending:
                self._wake.set()  # announced again meanwhile: ask once more
            self._announce(key)

    async def _ask(self, server: str, conversation: str | None, section: str) -> None:
        session = self._live_session(server, conversation)
        if session is None:
            return
        try:
            result = await run_inspection(session, session.config, REQUESTS[section])
        except MeworkError as exc:
            log.info("listings.refresh_failed", server=server, list=section, error=exc.message)
            return
        if section == "tools":
            sections = {"tools": [tool_entry(server, t) for t in result]}
        else:
            sections = {k: v for k, v in result.items() if k != "offered"}
        self._inventory.record(server, "changed", sections)

    def _live_session(self, server: str, conversation: str | None) -> McpSession | None:
        for session in self._pool.sessions if self._pool else []:
            if session.server == server and session.conversation == conversation:
                return session if session.alive else None
        return None

    def _announce(self, key: Key) -> None:
        server, conversation, section = key
        data = {"server": server, "conversationId": conversation, "list": section}
        self._bus.publish("server.changed", data)
