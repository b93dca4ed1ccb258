"""events.subscribe: this connection's event topics (the events arrive as notifications)."""

from typing import Any

from mework_protocol.params import SubscribeParams
from mework_protocol.topics import TOPICS

from meworkd.base.errors import InvalidParams
from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup

__all__ = ["group"]

group: MethodGroup[Services, Connection] = MethodGroup()


@group.add("events.subscribe", SubscribeParams)
async def subscribe(_s: Services, conn: Connection, p: SubscribeParams) -> dict[str, Any]:
    if p.topics is not None:
        unknown = sorted(set(p.topics) - TOPICS)
        if unknown:
            raise InvalidParams(f"unknown topics: {', '.join(unknown)}", topics=sorted(TOPICS))
    conn.subscribe(p.topics, p.servers)
    result: dict[str, Any] = {"topics": sorted(TOPICS if p.topics is None else p.topics)}
    if p.servers is not None:
        result["servers"] = sorted(set(p.servers))
    return result
