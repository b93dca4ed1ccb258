"""What a server says when connected, and what it logged: servers.test, servers.logs, and the
detail page's inspection (servers.tools, prompts, getPrompt, resources, readResource, complete).

Each handler is one call of :class:`meworkd.core.servers.Servers`, which dials inspection on a
short-lived session of its own and redacts what the server sent.
"""

from typing import Any

from mework_protocol import params

from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup

__all__ = ["group"]

group: MethodGroup[Services, Connection] = MethodGroup()


@group.add("servers.test", params.NameParams)
async def test(s: Services, _conn: Connection, p: params.NameParams) -> dict[str, Any]:
    return await s.servers.test(p.name)


@group.add("servers.logs", params.LogsParams)
async def logs(s: Services, _conn: Connection, p: params.LogsParams) -> dict[str, Any]:
    return s.servers.logs(p.name, p.tail)


@group.add("servers.tools", params.NameParams)
async def tools(s: Services, _conn: Connection, p: params.NameParams) -> dict[str, Any]:
    return s.servers.tools(p.name)


@group.add("servers.prompts", params.NameParams)
async def prompts(s: Services, _conn: Connection, p: params.NameParams) -> dict[str, Any]:
    return await s.servers.prompts(p.name)


@group.add("servers.resources", params.NameParams)
async def resources(s: Services, _conn: Connection, p: params.NameParams) -> dict[str, Any]:
    return await s.servers.resources(p.name)


@group.add("servers.getPrompt", params.GetPromptParams)
async def get_prompt(s: Services, _conn: Connection, p: params.GetPromptParams) -> dict[str, Any]:
    return await s.servers.get_prompt(p.name, p.prompt, p.arguments)


@group.add("servers.readResource", params.ReadResourceParams)
async def read_resource(
    s: Services, _conn: Connection, p: params.ReadResourceParams
) -> dict[str, Any]:
    return await s.servers.read_resource(p.name, p.uri)


@group.add("servers.complete", params.CompleteParams)
async def complete(s: Services, _conn: Connection, p: params.CompleteParams) -> dict[str, Any]:
    return await s.servers.complete(p.name, p.ref, p.argument, p.context_arguments)
