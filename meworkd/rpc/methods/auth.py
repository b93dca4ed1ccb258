"""servers.login and servers.logout: OAuth for a server, as core.servers.Servers runs it."""

from typing import Any

from mework_protocol import params

from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup

__all__ = ["group"]

group: MethodGroup[Services, Connection] = MethodGroup()


@group.add("servers.login", params.NameParams)
async def login(s: Services, _conn: Connection, p: params.NameParams) -> dict[str, Any]:
    return await s.servers.login(p.name)


@group.add("servers.logout", params.NameParams)
async def logout(s: Services, _conn: Connection, p: params.NameParams) -> dict[str, Any]:
    return await s.servers.logout(p.name)
