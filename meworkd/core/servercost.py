"""What a server's tools cost a turn: in a turn (``turns.begin`` ``costs``), and from the tools
it last reported (servers.list).

The tools a turn would offer of the server (those ``disabledTools`` does not switch off and that
do not need tasks), measured as ``turns.begin`` measures its ``costs``: the bytes of each
definition as the model is sent it (model-facing name, title, description, input schema), and
``tokensEstimate``, bytes / 4, an estimate (tokenizers differ). Pure: the servers view calls it
with the inventory's last listing, so a frontend can show which server fills the context before
any turn, without connecting.
"""

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from meworkd.core.approvals.policy import requires_user_interaction
from meworkd.core.catalog import Binding, legacy_tasks_work, task_only, tool_name
from meworkd.settings import ServerConfig

__all__ = ["costs", "server_cost"]


def server_cost(
    server: str,
    config: ServerConfig,
    tools: Sequence[Mapping[str, Any]] | None,
    reported: Mapping[str, Any] | None,
    mandatory_prefix: str,
) -> dict[str, Any] | None:
    """``{tools, disabled, bytes, tokensEstimate, reported}``, or None before the server has
    reported its tools (``reported``: where and when the listing came from)."""
    if tools is None:
        return None
    tasks_work = legacy_tasks_work(config)
    offered = [
        t
        for t in tools
        if (tasks_work or not task_only(t)) and not config.disables(str(t.get("name")))
    ]
    size = sum(len(_definition(server, config, t, mandatory_prefix)) for t in offered)
    return {
        "tools": len(offered),
        "disabled": sum(1 for t in tools if config.disables(str(t.get("name")))),
        "bytes": size,
        "tokensEstimate": size // 4,
        "reported": dict(reported) if reported else None,
    }


def _definition(
    server: str, config: ServerConfig, tool: Mapping[str, Any], mandatory_prefix: str
) -> bytes:
    """The tool as a turn offers it (the shape of ``turns.begin``'s ``tools``), encoded."""
    name = str(tool.get("name"))
    mandatory = requires_user_interaction(tool.get("_meta")) or (
        name in config.disabled_auto_approve_tools
    )
    description = str(tool.get("description") or "")
    annotations = tool.get("annotations")
    title = tool.get("title") or (
        annotations.get("title") if isinstance(annotations, Mapping) else None
    )
    return msgspec.json.encode(
        {
            "name": tool_name(server, name),
            "title": title,
            "description": mandatory_prefix + description if mandatory else description,
            "inputSchema": tool.get("inputSchema"),
        }
    )


def costs(
    tools: Sequence[dict[str, Any]],
    bindings: dict[str, Binding],
    deferred: frozenset[str] = frozenset(),
    sizes: Sequence[int] | None = None,
) -> list[dict[str, Any]]:
    """What each server's tools cost a turn: how many it has bound (``tools``), how many the
    model is offered and how many are deferred behind tool search, the bytes of the offered
    definitions as sent (``bytes``) and of the deferred ones (``deferredBytes``), with
    ``tokensEstimate`` (offered bytes / 4, an estimate: tokenizers differ). ``sizes``: each
    tool's encoded size, when the caller has them already."""
    if sizes is None:
        sizes = [len(msgspec.json.encode(tool)) for tool in tools]
    per_server: dict[str, dict[str, Any]] = {}
    for tool, size in zip(tools, sizes, strict=True):
        server = bindings[tool["name"]].server
        entry = per_server.setdefault(
            server,
            {
                "server": server,
                "tools": 0,
                "offered": 0,
                "deferred": 0,
                "bytes": 0,
                "deferredBytes": 0,
            },
        )
        entry["tools"] += 1
        if tool["name"] in deferred:
            entry["deferred"] += 1
            entry["deferredBytes"] += size
        else:
            entry["offered"] += 1
            entry["bytes"] += size
    for entry in per_server.values():
        entry["tokensEstimate"] = entry["bytes"] // 4
    return sorted(
        per_server.values(), key=lambda e: (-e["bytes"], -e["deferredBytes"], e["server"])
    )
