"""servers.test and servers.logs: what a server says when connected, and what it logged."""

from datetime import UTC, datetime
from typing import Any

from mework_protocol import params

from meworkd.base.errors import ServerNotFound
from meworkd.core.probe import test_connection
from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup
from meworkd.settings import edits

__all__ = ["group"]

group: MethodGroup[Services, Connection] = MethodGroup()


@group.add("servers.test", params.NameParams)
async def test(s: Services, _conn: Connection, p: params.NameParams) -> dict[str, Any]:
    if (config := s.store.settings.servers.get(p.name)) is None:
        raise ServerNotFound(p.name)
    result = await test_connection(s.pool, p.name, config)
    # Server-sourced text may quote a secret: redacted for the reply and for the settings file
    # alike (the recorded serverInfo shows in servers.list).
    redacted: dict[str, Any] = s.redactor.redact_value(result)  # type: ignore[assignment]
    if redacted["ok"]:
        info = redacted["serverInfo"]
        await s.store.mutate(lambda doc: edits.record_server_info(doc, p.name, info))
    return redacted


@group.add("servers.logs", params.LogsParams)
async def logs(s: Services, _conn: Connection, p: params.LogsParams) -> dict[str, Any]:
    settings = s.store.settings
    if p.name not in settings.servers and p.name not in settings.server_errors:
        raise ServerNotFound(p.name)
    ring = s.logs.ring(p.name)
    lines = [
        {"time": datetime.fromtimestamp(t, UTC).isoformat(), "line": line}
        for t, line in ring.tail(p.tail)
    ]
    return {"name": p.name, "lines": lines, "dropped": ring.dropped}
