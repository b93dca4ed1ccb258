"""Test connection: dial a fresh session, list everything, and lint what the model would see."""

import time
from datetime import UTC, datetime
from typing import Any

from mework_protocol.failures import failure

from meworkd.base.errors import MeworkError
from meworkd.core.catalog import (
    NAME_PATTERN,
    legacy_tasks_work,
    needs_tasks_reason,
    task_only,
    tool_name,
    was_truncated,
)
from meworkd.core.viewref import view_ui
from meworkd.mcp import SessionPool, TalkFailed, describe
from meworkd.settings import ServerConfig

__all__ = ["lint_tools", "test_connection"]

_COMBINATORS = ("anyOf", "oneOf", "allOf")


def lint_tools(
    server: str, tools: list[dict[str, Any]], *, legacy_tasks: bool = False
) -> list[dict[str, str]]:
    """Problems a model provider would reject or stumble on, found before any turn;
    ``legacy_tasks``: the server's tools that run only as 2025-11-25 tasks can be called."""
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
        problems += _name_problems(server, name)
        if task_only(tool) and not legacy_tasks:
            problems.append(
                {"tool": name, "problem": "needs_tasks", "detail": needs_tasks_reason(name)}
            )
        problems += _schema_problems(name, tool.get("inputSchema"))
    return problems


def _name_problems(server: str, name: str) -> list[dict[str, str]]:
    problems: list[dict[str, str]] = []
    if was_truncated(server, name):
        problems.append(
            {
                "tool": name,
                "problem": "name_shortened",
                "detail": f"offered to the model as {tool_name(server, name)}",
            }
        )
    if not NAME_PATTERN.match(name):
        problems.append(
            {
                "tool": name,
                "problem": "name_not_model_safe",
                "detail": "the original name has characters models refuse; the bound name is safe",
            }
        )
    return problems


def _schema_problems(name: str, schema: object) -> list[dict[str, str]]:
    if not isinstance(schema, dict):
        return [
            {"tool": name, "problem": "missing_input_schema", "detail": "no inputSchema object"}
        ]
    problems: list[dict[str, str]] = []
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


CLOSE_WAIT = 5.0  # seconds the closing of a tested session is waited for


def _ms_since(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 1)


def _failed(
    result: dict[str, Any], started: float, exc: MeworkError, tail: object
) -> dict[str, Any]:
    """``result`` as a failed test: ``kind`` and ``error`` as every failure object, and
    ``reason``, the deprecated alias of ``kind``."""
    kind = str(exc.data.get("reason", exc.kind))
    result.update(failure(kind, exc.message, reason=kind))
    if exc.data.get("limit"):
        result["limit"] = exc.data["limit"]  # resource_limit: the one the server died on
    result.update(stderrTail=list(tail) if isinstance(tail, list) else [])
    result["durationMs"] = _ms_since(started)
    return result


async def test_connection(pool: SessionPool, name: str, config: ServerConfig) -> dict[str, Any]:
    """Dial ``name`` once (not pooled); report what it offers or why it failed."""
    started = time.monotonic()
    result: dict[str, Any] = {"ok": False, "server": name, "stderrTail": []}
    try:
        session = await pool.open(name, None, config)
    except MeworkError as exc:
        return _failed(result, started, exc, exc.data.get("stderrTail"))
    try:
        report = await describe(session, config)
    except MeworkError as exc:
        if not isinstance(exc, TalkFailed):
            # E.g. an invalid tools/list (InvalidListing names the tools) or the session ending.
            result["problems"] = exc.data.get("problems", [])
        return _failed(result, started, exc, session.stderr_tail)
    finally:
        await session.close(CLOSE_WAIT)
    for tool in report.tools:
        tool["boundName"] = tool_name(name, tool["name"])
        if (ui := view_ui(tool.get("_meta"))) is not None:
            tool["ui"] = ui  # an MCP Apps view (or a visibility)
    info = report.server_info
    result.update(
        ok=True,
        serverInfo={
            "name": info.name if info else None,
            "version": info.version if info else None,
            "testedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
        protocolVersion=report.protocol_version,
        capabilities=report.capabilities,
        instructions=report.instructions,
        tools=report.tools,
        prompts=report.prompts,
        resources=report.resources,
        resourceTemplates=report.resource_templates,
        offered=report.offered,
        sectionErrors=report.section_errors,
        problems=lint_tools(name, report.tools, legacy_tasks=legacy_tasks_work(config)),
        stderrTail=list(session.stderr_tail),
        sandbox=session.sandbox,
        durationMs=_ms_since(started),
    )
    return result
