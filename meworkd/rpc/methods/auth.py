"""servers.login and servers.logout: OAuth for a server (run by meworkd.mcp.AuthRegistry)."""

from typing import Any

from mework_protocol import params

from meworkd.base.errors import ServerNotFound
from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup
from meworkd.settings import ServerConfig

__all__ = ["group"]

group: MethodGroup[Services, Connection] = MethodGroup()


def _config(s: Services, name: str) -> ServerConfig:
    if (config := s.store.settings.servers.get(name)) is None:
        raise ServerNotFound(name)
    return config


@group.add("servers.login", params.NameParams)
async def login(s: Services, _conn: Connection, p: params.NameParams) -> dict[str, Any]:
    return await s.auth.login(p.name, _config(s, p.name))


@group.add("servers.logout", params.NameParams)
async def logout(s: Services, _conn: Connection, p: params.NameParams) -> dict[str, Any]:
    revoked = await s.auth.logout(p.name, _config(s, p.name))
    # Live sessions of the server hold no token of their own, but close them all the same: the
    # user asked to be logged out, and a server may tie its session to the login.
    s.pool.retire(lambda session: session.server == p.name, force=True)
    return {"revoked": revoked}
