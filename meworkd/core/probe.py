"""Test connection: dial a fresh session, list everything, and lint what the model would see."""

import time
from datetime import UTC, datetime
from typing import Any

import anyio
from mcp import MCPError

from meworkd.base.errors import MeworkError
from meworkd.core.catalog import NAME_PATTERN, tool_name, was_truncated
from meworkd.mcp.pool import SessionPool
from meworkd.mcp.session import describe_failure, list_all
from meworkd.settings import ServerConfig

__all__ = ["lint_tools", "test_connection"]

_COMBINATORS = ("anyOf", "oneOf", "allOf")


def lint_tools(server: str, tools: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Problems a model provider would reject or stumble on, found before any turn."""
    problems: list[dict[str, str]] = []
    seen: set[str] = set()
    for tool in tools:
        name = tool.get("name", "")
        if name in seen:
            problems.append(
                {
                    "tool": name,
                    "problem": "duplicate_name",
                    "detail": "the server lists this tool name more than once",
                }
            )
        seen.add(name)
        bound = tool_name(server, name)
        if was_truncated(server, name):
            problems.append(
                {
                    "tool": name,
                    "problem": "name_shortened",
                    "detail": f"offered to the model as {bound}",
                }
            )
        if not NAME_PATTERN.match(name):
            problems.append(
                {
                    "tool": name,
                    "problem": "name_not_model_safe",
                    "detail": "the original name has characters models refuse; "
                    "the bound name is safe",
                }
            )
        schema = tool.get("inputSchema")
        if not isinstance(schema, dict):
            problems.append(
                {"tool": name, "problem": "missing_input_schema", "detail": "no inputSchema object"}
            )
            continue
        if schema.get("type") != "object":
            problems.append(
                {
                    "tool": name,
                    "problem": "input_schema_not_object",
                    "detail": 'inputSchema.type should be "object"',
                }
            )
        root = [k for k in _COMBINATORS if k in schema]
        if root:
            problems.append(
                {
                    "tool": name,
                    "problem": "root_combinator",
                    "detail": f"root-level {'/'.join(root)} is rejected by some model APIs",
                }
            )
    return problems


def _dump(items: list[Any]) -> list[dict[str, Any]]:
    return [i.model_dump(by_alias=True, mode="json", exclude_none=True) for i in items]


async def test_connection(pool: SessionPool, name: str, config: ServerConfig) -> dict[str, Any]:
    """Dial ``name`` once (not pooled); report what it offers or why it failed."""
    started = time.monotonic()
    result: dict[str, Any] = {"ok": False, "server": name, "stderrTail": []}
    try:
        session = await pool.open(name, None, config)
    except MeworkError as exc:
        result.update(
            error=exc.message,
            reason=exc.data.get("reason", exc.kind),
            stderrTail=exc.data.get("stderrTail", []),
            durationMs=round((time.monotonic() - started) * 1000, 1),
        )
        return result
    try:
        with anyio.fail_after(config.timeout):
            async with session.lease() as client:
                caps = session.capabilities
                tools = await list_all(client, "tools") if caps is None or caps.tools else []
                prompts = await list_all(client, "prompts") if caps and caps.prompts else []
                resources = await list_all(client, "resources") if caps and caps.resources else []
                templates = (
                    await list_all(client, "resource_templates") if caps and caps.resources else []
                )
    except MeworkError as exc:
        # E.g. an invalid tools/list (InvalidListing names the tools) or the session ending.
        # describe_failure() knows no MeworkError: it would answer "connection failed (...)".
        result.update(
            error=exc.message,
            reason=exc.data.get("reason", exc.kind),
            problems=exc.data.get("problems", []),
            stderrTail=list(session.stderr_tail),
            durationMs=round((time.monotonic() - started) * 1000, 1),
        )
        return result
    except (MCPError, TimeoutError, OSError) as exc:
        reason, message = describe_failure(exc, config)
        result.update(
            error=message,
            reason=reason,
            stderrTail=list(session.stderr_tail),
            durationMs=round((time.monotonic() - started) * 1000, 1),
        )
        return result
    finally:
        session.retire(force=True)
        with anyio.move_on_after(5, shield=True):
            await session.closed.wait()
    tool_dicts = _dump(tools)
    for tool in tool_dicts:
        tool["boundName"] = tool_name(name, tool["name"])
    info = session.server_info
    result.update(
        ok=True,
        serverInfo={
            "name": info.name if info else None,
            "version": info.version if info else None,
            "testedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
        protocolVersion=session.protocol_version,
        capabilities=caps.model_dump(by_alias=True, mode="json", exclude_none=True) if caps else {},
        instructions=session.instructions,
        tools=tool_dicts,
        prompts=_dump(prompts),
        resources=_dump(resources),
        resourceTemplates=_dump(templates),
        problems=lint_tools(name, tool_dicts),
        stderrTail=list(session.stderr_tail),
        durationMs=round((time.monotonic() - started) * 1000, 1),
    )
    return result
