"""What a server says when connected, and what it logged: servers.test, servers.logs, and the
detail page's inspection (servers.tools, prompts, getPrompt, resources, readResource, complete).

Inspection dials a short-lived session of its own (never a conversation's); what it reports is
redacted like Test connection's and nothing of it reaches a model.
"""

from datetime import UTC, datetime
from typing import Any

from mework_protocol import params

from meworkd import mcp
from meworkd.base.errors import ServerNotFound
from meworkd.core.inspect import SECTIONS, inspect
from meworkd.core.probe import test_connection
from meworkd.rpc.connection import Connection
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodGroup
from meworkd.settings import ServerConfig, edits

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
    # The test is the server's latest word: lastError ends with a success, is a failure.
    s.pool.status.tested(p.name, None if redacted["ok"] else redacted)
    if redacted["ok"]:
        s.inventory.record(p.name, "test", {k: redacted[k] for k in SECTIONS})
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


def _config(s: Services, name: str) -> ServerConfig:
    if (config := s.store.settings.servers.get(name)) is None:
        raise ServerNotFound(name)
    return config


async def _inspect(s: Services, name: str, request: mcp.InspectionRequest[Any]) -> dict[str, Any]:
    result = await inspect(s.pool, name, _config(s, name), request)
    redacted: dict[str, Any] = s.redactor.redact_value(result)  # type: ignore[assignment]
    return {"name": name, **redacted}


@group.add("servers.tools", params.NameParams)
async def tools(s: Services, _conn: Connection, p: params.NameParams) -> dict[str, Any]:
    _config(s, p.name)
    # A turn's discovery is recorded as the server sent it: redacted here, like servers.test.
    last: dict[str, Any] = s.redactor.redact_value(s.inventory.get(p.name))  # type: ignore[assignment]
    return {"name": p.name, **last}


@group.add("servers.prompts", params.NameParams)
async def prompts(s: Services, _conn: Connection, p: params.NameParams) -> dict[str, Any]:
    result = await _inspect(s, p.name, mcp.list_prompts)
    s.inventory.record(p.name, "inspection", {"prompts": result["prompts"]})
    return result


@group.add("servers.resources", params.NameParams)
async def resources(s: Services, _conn: Connection, p: params.NameParams) -> dict[str, Any]:
    result = await _inspect(s, p.name, mcp.list_resources)
    sections = {k: result[k] for k in ("resources", "resourceTemplates")}
    s.inventory.record(p.name, "inspection", sections)
    return result


@group.add("servers.getPrompt", params.GetPromptParams)
async def get_prompt(s: Services, _conn: Connection, p: params.GetPromptParams) -> dict[str, Any]:
    limit = s.store.settings.mcp.max_reply_bytes
    return await _inspect(s, p.name, mcp.get_prompt(p.prompt, p.arguments, limit))


@group.add("servers.readResource", params.ReadResourceParams)
async def read_resource(
    s: Services, _conn: Connection, p: params.ReadResourceParams
) -> dict[str, Any]:
    limit = s.store.settings.mcp.max_reply_bytes
    return {"uri": p.uri, **await _inspect(s, p.name, mcp.read_resource(p.uri, limit))}


@group.add("servers.complete", params.CompleteParams)
async def complete(s: Services, _conn: Connection, p: params.CompleteParams) -> dict[str, Any]:
    request = mcp.complete(p.ref, p.argument, p.context_arguments)  # checks ref and argument first
    return await _inspect(s, p.name, request)
