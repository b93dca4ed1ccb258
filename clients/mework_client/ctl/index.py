"""meworkctl's command index: every command's path, one-line help and module, loading none.

A command line loads only the module(s) of the command it names (start-up time, bench B6): the
top level of the parser, ``meworkctl --help`` and argparse's "invalid choice" messages are made
from this table, and a group's rows are read from its module only when that group is named.
The table must match the modules' rows exactly (path, help, order): tests/test_ctl_startup.py
checks it, so it cannot drift. A path may be a command and a group at once (``tasks`` lists,
``tasks show`` shows one): its group help is then the command's own.
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable

    from mework_client.ctl.command import Command

__all__ = ["GROUPS", "INDEX", "TOP_WORDS", "load", "rows"]

# Command groups: their one-line help and the example their --help shows.
GROUPS: dict[str, tuple[str, str]] = {
    "settings": ("show, reload or change the settings document", "meworkctl settings show"),
    "servers": ("register, inspect and test MCP servers", "meworkctl servers list"),
    "presets": (
        "conversation templates (selected servers, approval level)",
        "meworkctl presets list",
    ),
    "conv": (
        "conversations: which servers they use, at which approval level",
        "meworkctl conv list",
    ),
    "turn": (
        "begin, end or cancel a turn (what a frontend does for each model turn)",
        "meworkctl turn begin chat-1",
    ),
    "tasks": (
        "list the MCP tasks of tool calls (newest first)",
        "meworkctl tasks --open",
    ),
    "approvals": (
        "list, answer or watch approval requests for tool calls",
        "meworkctl approvals watch",
    ),
    "requests": (
        "answer what meworkd asks a person (approvals, forms, URLs, sampling)",
        "meworkctl requests watch",
    ),
}

# (path, one-line help, module under mework_client.ctl), in the order of ``meworkctl --help``
# and of the completion script.
INDEX: tuple[tuple[str, str, str], ...] = (
    ("status", "show the daemon's version, uptime and counts", "daemon"),
    ("shutdown", "stop the daemon (closing every MCP session)", "daemon"),
    ("settings show", "print the settings document (secrets masked)", "settings"),
    ("settings reload", "re-read the settings file now", "settings"),
    ("settings set", "change options of the mcp section", "settings"),
    ("servers list", "list registered servers and their status", "servers"),
    ("servers show", "show one server's settings", "servers"),
    ("servers add", "register a stdio or Streamable HTTP server", "servers"),
    ("servers rm", "remove a server", "servers"),
    ("servers rename", "rename a server (presets follow)", "servers"),
    (
        "servers enable",
        "enable a server (a conversation uses servers that are enabled and selected)",
        "servers",
    ),
    (
        "servers disable",
        "disable a server (a conversation uses servers that are enabled and selected)",
        "servers",
    ),
    ("servers import", "import servers from another MCP host's JSON document", "servers"),
    ("servers export", "print the registered servers as an mcpServers document", "servers"),
    ("servers tool-enable", "offer one of a server's tools to the model", "servers"),
    ("servers tool-disable", "stop offering one of a server's tools to the model", "servers"),
    ("servers auto-approve", "let a hook or full_access approve a tool, or always ask", "servers"),
    ("servers edit", "edit a server's entry as JSON in $VISUAL or $EDITOR", "servers_edit"),
    (
        "servers test",
        "dial a server once and list its tools, prompts and resources",
        "servers_probe",
    ),
    (
        "servers tools",
        "list a server's tools (runs servers test, shows only the tools)",
        "servers_probe",
    ),
    ("servers logs", "print a stdio server's stderr (the Logs tab)", "servers_probe"),
    ("servers prompts", "list a server's prompts and their arguments", "servers_inspect"),
    ("servers prompt", "show a prompt's messages for the given arguments", "servers_inspect"),
    ("servers resources", "list a server's resources and resource templates", "servers_inspect"),
    (
        "servers read",
        "read a resource (text shown, binary described; cut at mcp.max_reply_bytes)",
        "servers_inspect",
    ),
    (
        "servers complete",
        "suggest values for a prompt's or a resource template's argument",
        "servers_inspect",
    ),
    ("servers login", "log in to a server that uses OAuth (opens the browser)", "auth"),
    ("servers logout", "forget (and revoke) a server's OAuth tokens; its sessions close", "auth"),
    (
        "servers search",
        "find servers in the MCP registries by words of their name or description",
        "servers_registry",
    ),
    (
        "servers info",
        "show a registry server's details: packages, remotes, what it needs",
        "servers_registry",
    ),
    (
        "servers install",
        "install a server from an MCP registry (or a .mcpb bundle)",
        "servers_registry",
    ),
    (
        "servers outdated",
        "list servers installed from a registry that have a newer version",
        "servers_registry",
    ),
    (
        "servers upgrade",
        "move a server installed from a registry to a newer version",
        "servers_registry",
    ),
    ("presets list", "list presets", "presets"),
    ("presets set", "create or replace a preset", "presets"),
    ("presets rm", "remove a preset", "presets"),
    ("conv create", "create a conversation", "conv"),
    ("conv list", "list conversations", "conv"),
    ("conv show", "show a conversation", "conv"),
    ("conv select", "set the servers a conversation uses (none: clear)", "conv"),
    ("conv level", "set a conversation's approval level", "conv"),
    ("conv rm", "delete a conversation (closing its sessions)", "conv"),
    ("turn begin", "begin a turn: discover the tools of the conversation's servers", "turn"),
    ("turn list", "list the open turns (of one conversation) with their ids", "turn"),
    ("turn end", "end a turn (its sessions stay pooled)", "turn"),
    ("turn cancel", "cancel a turn's calls in flight", "turn"),
    ("turn search", "search a turn's tools, as the model's search_tools does", "turn"),
    ("turn result", "show the result of a call that moved to the background", "turn"),
    ("turn stop", "cancel a call running in the background", "turn"),
    ("call", "call a tool in a turn, as the model would", "turn"),
    ("tasks", "list the MCP tasks of tool calls (newest first)", "tasks"),
    ("tasks show", "show one MCP task in full", "tasks"),
    ("tasks cancel", "cancel an MCP task on its server (its call ends, saying so)", "tasks"),
    ("approvals list", "list pending approval requests", "approvals"),
    ("approvals allow", "allow a pending tool call", "approvals"),
    ("approvals deny", "deny a pending tool call", "approvals"),
    ("approvals watch", "answer approval requests as they arrive (y/N on stdin)", "approvals"),
    ("audit", "show the approval audit log", "approvals"),
    (
        "requests watch",
        "answer approvals, servers' forms and URLs, and sampling requests as they arrive",
        "requests",
    ),
    ("ui", "open Settings → MCP in the terminal", "ui"),
    ("view", "open a tool call's MCP Apps view in the browser (served on 127.0.0.1)", "view"),
    ("events", "print events as JSON lines until interrupted", "daemon"),
    ("install-service", "install meworkd's systemd user units", "daemon"),
    ("uninstall-service", "remove meworkd's systemd user units", "daemon"),
    ("completion", "print a shell completion script", "completion"),
)

TOP_WORDS: tuple[str, ...] = tuple(dict.fromkeys(path.split()[0] for path, _, _ in INDEX))


def load(module: str) -> tuple[Command, ...]:
    """The rows of one command module (its ``COMMANDS``), importing it."""
    commands: tuple[Command, ...] = import_module(f"mework_client.ctl.{module}").COMMANDS
    return commands


def rows(words: Iterable[str] | None = None) -> list[Command]:
    """The rows under these first words (all: None), in index order; only their modules load."""
    wanted = None if words is None else set(words)
    chosen = [(path, m) for path, _, m in INDEX if wanted is None or path.split()[0] in wanted]
    found = {c.path: c for module in dict.fromkeys(m for _, m in chosen) for c in load(module)}
    return [found[path] for path, _ in chosen]
