"""A turn's tool catalog: model-facing names, the bindings behind them, tools and system prompt.

Names follow ``mcp__<server-slug>_<digest>__<tool-slug>__<digest>``, a pure function of the
original (server, tool) names, so they are stable across turns, reloads and restarts;
:func:`bind_names` reports, never shadows, the rare collision. A known secret in a name is
replaced in its slugs (:func:`shown_name`): the model must never read one. Everything here is
synchronous and pure: :func:`bind` turns the servers' listings and a settings snapshot into a
turn's catalog.
"""

import functools
import hashlib
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mework_protocol.failures import failure

from meworkd.core.approvals.policy import requires_user_interaction
from meworkd.core.viewref import ViewRef, view_ref
from meworkd.mcp import ToolInfo
from meworkd.settings import ServerConfig, Settings

__all__ = [
    "DIGEST_LENGTH",
    "NAME_PATTERN",
    "SERVER_SLUG_LENGTH",
    "TOOL_SLUG_LENGTH",
    "Binding",
    "Catalog",
    "Collision",
    "bind",
    "bind_names",
    "digest",
    "legacy_tasks_work",
    "needs_tasks_reason",
    "rebind",
    "select",
    "server_failure",
    "shown_name",
    "slug",
    "system_prompt",
    "task_only",
    "tool_name",
    "unbound",
    "was_shortened",
    "was_truncated",
    "wire_bindings",
]

SERVER_SLUG_LENGTH = 16
TOOL_SLUG_LENGTH = 24
DIGEST_LENGTH = 6
# The tool name rule shared by the model providers; use it with ``fullmatch``.
NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

_OUTSIDE_SLUG = re.compile(r"[^a-z0-9]+")
# What a slug holding a secret becomes (its digest still tells the originals apart).
_SECRET_SLUG = "redacted"

# Secrets out of a text (the daemon's redactor); the identity where none are known.
RedactText = Callable[[str], str]


@dataclass(frozen=True, slots=True)
class Collision:
    """A binding left out because an earlier (server, tool) pair already holds its name."""

    server: str
    tool: str
    name: str
    clashes_with: tuple[str, str]


def _slug_uncut(s: str) -> str:
    ascii_only = unicodedata.normalize("NFKD", s).encode("ascii", "ignore").decode("ascii")
    return _OUTSIDE_SLUG.sub("-", ascii_only.lower()).strip("-")


def slug(s: str, n: int) -> str:
    """``s`` folded to ``[a-z0-9-]``, at most ``n`` characters, never empty (``"x"``)."""
    return _slug_uncut(s)[:n].strip("-") or "x"


def digest(s: str) -> str:
    """The first 6 hex digits of SHA-256 over the original name's UTF-8 bytes."""
    # surrogatepass: a lone surrogate (possible from a lenient JSON parser) must not crash a turn.
    data = s.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:DIGEST_LENGTH]


def _name(server: str, tool: str, server_slug: str, tool_slug: str) -> str:
    return f"mcp__{server_slug}_{digest(server)}__{tool_slug}__{digest(tool)}"


@functools.lru_cache(maxsize=65536)
def tool_name(server: str, tool: str) -> str:
    """The model-facing name of ``tool`` on ``server`` (at most 62 characters)."""
    return _name(server, tool, slug(server, SERVER_SLUG_LENGTH), slug(tool, TOOL_SLUG_LENGTH))


def _shown_slug(s: str, n: int, redact: RedactText) -> str:
    # Redacted before it is folded and cut: a slug is a transformed copy the redactor cannot
    # recognise afterwards, and a cut would leave a secret's prefix. Checked again after, for
    # a secret that only the folding spelled out.
    folded = slug(redact(s), n)
    return folded if redact(folded) == folded else _SECRET_SLUG


def shown_name(server: str, tool: str, redact: RedactText) -> str:
    """:func:`tool_name`, with every secret ``redact`` knows kept out of the slugs.

    The digests stay those of the originals, so names differing only in a secret stay
    distinct; without a secret in either name this is exactly :func:`tool_name`.
    """
    if redact(server) == server and redact(tool) == tool:
        name = tool_name(server, tool)
        if redact(name) == name:
            return name
    server_slug = _shown_slug(server, SERVER_SLUG_LENGTH, redact)
    return _name(server, tool, server_slug, _shown_slug(tool, TOOL_SLUG_LENGTH, redact))


def was_truncated(server: str, tool: str) -> bool:
    """True when a slug had to be cut to its width (the name lost part of the original)."""
    return (
        len(_slug_uncut(server)) > SERVER_SLUG_LENGTH or len(_slug_uncut(tool)) > TOOL_SLUG_LENGTH
    )


def was_shortened(server: str, tool: str) -> bool:
    """True when the name does not carry both originals verbatim (a slug was cut or changed).

    Note that any character outside ``[a-z0-9-]`` counts as a change, so ``read_file`` (bound as
    ``read-file``) is reported; :func:`was_truncated` is the narrower test.
    """
    return slug(server, SERVER_SLUG_LENGTH) != server or slug(tool, TOOL_SLUG_LENGTH) != tool


def bind_names(
    pairs: Iterable[tuple[str, str]], redact: RedactText | None = None
) -> tuple[dict[str, tuple[str, str]], list[Collision]]:
    """Bind (server, tool) pairs in the given order; a later pair whose name is taken is reported.

    Callers pass the pairs sorted by (server, tool) so the survivor of a collision is stable.
    With ``redact``, each name is a :func:`shown_name`: no known secret in it.
    """
    bound: dict[str, tuple[str, str]] = {}
    collisions: list[Collision] = []
    for server, tool in pairs:
        name = tool_name(server, tool) if redact is None else shown_name(server, tool, redact)
        holder = bound.get(name)
        if holder is None:
            bound[name] = (server, tool)
        else:
            collisions.append(Collision(server, tool, name, holder))
    return bound, collisions


def server_failure(server: str, kind: str, error: str) -> dict[str, str]:
    """A server's entry in a turn's ``failures`` (and conversations.prepare's): ``kind`` and
    ``error`` as every failure object, and ``reason``, the deprecated alias of ``error``."""
    return failure(kind, error, server=server, reason=error)


def select(servers: Sequence[str], settings: Settings) -> tuple[list[str], list[dict[str, str]]]:
    """A conversation's servers that take part in a turn (enabled, in order, once each), and a
    failure for each whose entry never validated: it cannot take part, which the turn says like
    a server that failed to connect (one with a last good definition runs on that)."""
    wanted = list(dict.fromkeys(servers))
    selected = [n for n in wanted if n in settings.servers and settings.servers[n].enabled]
    failures = [
        server_failure(n, "invalid_entry", f"invalid settings entry: {settings.server_errors[n]}")
        for n in wanted
        if n not in settings.servers and n in settings.server_errors
    ]
    return selected, failures


@dataclass(frozen=True, slots=True)
class Binding:
    """What a model-facing name stands for."""

    server: str
    tool: str
    annotations: dict[str, Any] | None
    # The tool's _meta demands a person's approval (computed once, here, at bind).
    requires_user: bool
    # The server's connection_key() when its tools were listed: a redefinition changes it.
    definition: tuple[object, ...] = ()
    view: ViewRef | None = None  # its MCP Apps view reference (``_meta.ui``), with mcp.apps
    as_task: bool = False  # called as a 2025-11-25 task (its taskSupport is "required")


@dataclass(frozen=True, slots=True)
class Catalog:
    """A turn's bound tools: bindings by name, the tools as the model sees them, left-outs."""

    bindings: dict[str, Binding]
    tools: list[dict[str, Any]]
    problems: list[dict[str, str]]


def bind(
    servers: list[str],
    listings: dict[str, list[ToolInfo]],
    settings: Settings,
    redact: RedactText | None = None,
) -> Catalog:
    """Bind the enabled tools of ``servers`` (in that order) under their model-facing names.

    ``redact`` keeps secrets out of the names; the bindings keep the real names for the calls.
    """
    pairs: list[tuple[str, str]] = []
    by_pair: dict[tuple[str, str], ToolInfo] = {}
    for server in servers:
        config = settings.servers[server]
        for tool in listings.get(server, []):
            if config.disables(tool.name) or (server, tool.name) in by_pair:
                continue
            if tool.needs_tasks and not legacy_tasks_work(config):
                # Not offered; Test connection and servers.tools show it as needing tasks
                # (not a turn failure: the server works, and the model need not hear of it).
                continue
            if settings.mcp.apps and not _for_model(tool):
                continue  # an MCP Apps tool only its view may call: never offered to the model
            pairs.append((server, tool.name))
            by_pair[(server, tool.name)] = tool
    bound, collisions = bind_names(pairs, redact)
    definitions = {server: settings.servers[server].connection_key() for server in servers}
    bindings: dict[str, Binding] = {}
    for name, (server, tool_name_) in bound.items():
        tool = by_pair[(server, tool_name_)]
        meta = requires_user_interaction(tool.meta)
        view = view_ref(tool.meta) if settings.mcp.apps else None
        bindings[name] = Binding(
            server, tool_name_, tool.annotations, meta, definitions[server], view, tool.needs_tasks
        )
    problems = [
        server_failure(
            c.server,
            "name_collision",
            f"tool {c.tool!r} was left out: its name {c.name} "
            f"collides with {c.clashes_with[1]!r} of {c.clashes_with[0]}",
        )
        for c in collisions
    ]
    return Catalog(bindings, _model_tools(bindings, by_pair, settings), problems)


def _for_model(tool: ToolInfo) -> bool:
    ref = view_ref(tool.meta)
    return ref is None or ref.for_model


def wire_bindings(bindings: dict[str, Binding]) -> dict[str, dict[str, Any]]:
    """A turn's bindings as frontends get them (turns.begin): what each name stands for, and
    the tool's MCP Apps view reference (``ui``) where it has one."""
    return {
        name: {"server": b.server, "tool": b.tool, "annotations": b.annotations}
        | ({"ui": b.view.wire()} if b.view else {})
        for name, b in bindings.items()
    }


def task_only(tool: Mapping[str, Any]) -> bool:
    """A tool as a server reported it (``servers.tools``, Test connection) that runs only as a
    2025-11-25 task (``execution.taskSupport: "required"``; :attr:`ToolInfo.needs_tasks`)."""
    execution = tool.get("execution")
    return isinstance(execution, Mapping) and execution.get("taskSupport") == "required"


def legacy_tasks_work(config: ServerConfig) -> bool:
    """Whether a tool that runs only as a 2025-11-25 task (``execution.taskSupport:
    "required"``) can be called on this server: on stdio (meworkd sends that tools/call on the
    pipes itself); over HTTP the SDK refuses the task it answers with."""
    return config.type == "stdio"


def needs_tasks_reason(tool: str) -> str:
    """Why a tool that only runs as a 2025-11-25 task is left out on an HTTP server."""
    return (
        f"tool {tool!r} was left out: it runs only as a 2025-11-25 task (execution.taskSupport "
        'is "required"), which meworkd follows on stdio servers only'
    )


def unbound(binding: Binding, settings: Settings, selection: tuple[str, ...]) -> str | None:
    """Why ``binding`` is gone under ``settings`` and the conversation's ``selection`` now.

    None while it holds. The text starts with a stable kind (``server_removed``,
    ``server_disabled``, ``server_deselected``, ``tool_disabled``) for the model and the audit.
    """
    server, tool = binding.server, binding.tool
    config = settings.servers.get(server)
    if config is None:
        why = f"server_removed: the MCP server {server} was removed from the settings"
    elif not config.enabled:
        why = f"server_disabled: the MCP server {server} was disabled"
    elif server not in selection:
        why = f"server_deselected: the MCP server {server} was removed from this conversation"
    elif config.disables(tool):
        why = f"tool_disabled: the tool {tool!r} of {server} was switched off"
    else:
        return None
    return f"{why}. The tool is no longer available."


def rebind(binding: Binding, listing: list[ToolInfo], config: ServerConfig) -> Binding | str:
    """``binding`` against its redefined server's ``listing``, or why it is gone."""
    for tool in listing:
        if tool.name == binding.tool and (not tool.needs_tasks or legacy_tasks_work(config)):
            return Binding(
                binding.server,
                tool.name,
                tool.annotations,
                requires_user_interaction(tool.meta),
                config.connection_key(),
                view_ref(tool.meta) if binding.view is not None else None,
                tool.needs_tasks,
            )
    return (
        f"server_redefined: the MCP server {binding.server} was redefined and no longer "
        f"offers the tool {binding.tool!r}. The tool is no longer available."
    )


def _model_tools(
    bindings: dict[str, Binding],
    by_pair: dict[tuple[str, str], ToolInfo],
    settings: Settings,
) -> list[dict[str, Any]]:
    """The tools as offered to the model; those that always ask say so in their description."""
    prefix = settings.mcp.mandatory_description_prefix
    out: list[dict[str, Any]] = []
    for name, binding in bindings.items():
        # A name a server lists twice is bound, and described, by its first listing.
        tool = by_pair[(binding.server, binding.tool)]
        config = settings.servers.get(binding.server)
        mandatory = binding.requires_user or (
            config is not None and tool.name in config.disabled_auto_approve_tools
        )
        description = tool.description or ""
        out.append(
            {
                "name": name,
                "title": tool.title,
                "description": prefix + description if mandatory else description,
                "inputSchema": tool.input_schema,
            }
        )
    return out


def system_prompt(
    selected: tuple[str, ...],
    settings: Settings,
    failures: list[dict[str, str]],
    search_tool: str | None = None,
) -> str:
    """The paragraph naming a conversation's servers (and which are unavailable this turn);
    with ``search_tool``, a sentence saying that more tools are found with it."""
    failed = {f["server"] for f in failures}
    lines = []
    for name in selected:
        config = settings.servers.get(name)
        if config is None or not config.enabled:
            continue
        text = f"- {name}"
        if config.description:
            text += f": {config.description}"
        if name in failed:
            text += " (unavailable this turn)"
        lines.append(text)
    if not lines:
        return ""
    more = (
        f" Not every tool of these servers is listed: call {search_tool} with a few words "
        "saying what you want to do to find more, then call them by the names it returns."
        if search_tool
        else ""
    )
    return (
        "## MCP servers\n"
        "These MCP servers are connected to this conversation. Their tools are offered "
        "with names that start with mcp__<server>; calls that have side effects may ask "
        f"the user for approval first.{more}\n" + "\n".join(lines)
    )
