"""servers.search, .registryGet, .install, .outdated, .upgrade: servers found in MCP registries.

Every handler is one call of :class:`meworkd.core.registry.Registries`.
"""

from typing import Any

from mework_protocol import params

from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup

__all__ = ["group"]

group: MethodGroup[Services, Connection] = MethodGroup()


@group.add("servers.search", params.SearchParams)
async def search(s: Services, _conn: Connection, p: params.SearchParams) -> dict[str, Any]:
    return await s.registries.search(p.query, p.limit, p.cursor, refresh=p.refresh)


@group.add("servers.registryGet", params.RegistryGetParams)
async def registry_get(
    s: Services, _conn: Connection, p: params.RegistryGetParams
) -> dict[str, Any]:
    return await s.registries.get(p.name, p.version)


@group.add("servers.install", params.InstallParams)
async def install(s: Services, _conn: Connection, p: params.InstallParams) -> dict[str, Any]:
    return await s.registries.install(
        p.name, p.bundle, p.version, p.choice, p.inputs, p.entry_name, dry_run=p.dry_run
    )


@group.add("servers.outdated")
async def outdated(s: Services, _conn: Connection, _p: params.NoParams) -> dict[str, Any]:
    return await s.registries.outdated()


@group.add("servers.upgrade", params.UpgradeParams)
async def upgrade(s: Services, _conn: Connection, p: params.UpgradeParams) -> dict[str, Any]:
    return await s.registries.update(p.name, p.version, p.inputs, dry_run=p.dry_run)
