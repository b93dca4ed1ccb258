"""What a server's tools would cost a turn, from the tools it last reported (servers.list).

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
from meworkd.core.catalog import tool_name
from meworkd.settings import ServerConfig

__all__ = ["server_cost"]


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
    offered = [t for t in tools if not _needs_tasks(t) and not config.disables(str(t.get("name")))]
    size = sum(len(_definition(server, config, t, mandatory_prefix)) for t in offered)
    return {
        "tools": len(offered),
        "disabled": sum(1 for t in tools if config.disables(str(t.get("name")))),
        "bytes": size,
        "tokensEstimate": size // 4,
        "reported": dict(reported) if reported else None,
    }


def _needs_tasks(tool: Mapping[str, Any]) -> bool:
    execution = tool.get("execution")
    return isinstance(execution, Mapping) and execution.get("taskSupport") == "required"


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
