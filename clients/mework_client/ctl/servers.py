"""meworkctl's ``servers`` group: the server registry (list, show, add, import, enable, ...).

The commands that dial a server (``test``, ``tools``, ``logs``) are in
:mod:`mework_client.ctl.servers_probe`; how a server is shown, in
:mod:`mework_client.ctl.servers_view`.
"""

from __future__ import annotations

import argparse
from typing import Any

from mework_client.ctl.command import (
    EXIT_OK,
    Args,
    Command,
    Ctx,
    UsageError,
    arg,
    call_method,
    pair,
    pick,
    plus,
    say,
    show,
)
from mework_client.ctl.layout import Style, obj
from mework_client.ctl.servers_import import format_import, run_import
from mework_client.ctl.servers_view import format_server, format_servers, server_label

__all__ = [
    "COMMANDS",
    "DIALING",
    "NAME",
    "format_import",
    "format_server",
    "format_servers",
    "server_label",
]

NAME = arg("name", metavar="NAME", help="the server's name", complete="servers")
NEW_NAME = arg("name", metavar="NAME", help="the new server's name")
# The spinner's label (on a terminal only) for every command that dials a server and waits.
DIALING = "connecting to {name}"
TOOL = arg("tool", metavar="TOOL", help="the tool's original name (as the server lists it)")
REVEAL = arg("--reveal", action="store_true", help="show secret env and header values")


def _server_params(args: Args) -> dict[str, Any]:
    """``servers add``: the entry from the flags (stdio after ``--``, or ``--url``)."""
    command: list[str] = args.command
    server: dict[str, Any]
    if args.url:
        if command or args.env or args.cwd:
            raise UsageError("an HTTP server (--url) takes no command, --env or --cwd")
        server = {"type": "streamable_http", "url": args.url}
        if args.header:
            server["headers"] = dict(args.header)
    else:
        if not command:
            raise UsageError("give the server's command after --, or --url URL for HTTP")
        if args.header:
            raise UsageError("--header is for HTTP servers (--url)")
        server = {"type": "stdio", "command": command[0], "args": command[1:]}
        if args.env:
            server["env"] = dict(args.env)
        if args.cwd:
            server["cwd"] = args.cwd
    optional = {
        "description": args.description,
        "timeoutSeconds": args.server_timeout,
        "longRunning": True if args.long_running else None,
        "enabled": False if args.disabled else None,
    }
    server.update({k: v for k, v in optional.items() if v is not None})
    return {"name": args.name, "server": server}


def _added(result: Any, args: Args, style: Style) -> str:
    """The entry is stored either way; what meworkd already knows will fail follows it."""
    kind = obj(result).get("type")
    lines = [style.green("ok") + f"  added {kind + ' ' if kind else ''}server {args.name}"]
    lines += [style.red("warning: ") + str(w) for w in obj(result).get("warnings") or []]
    return "\n".join(lines)


def _removed(result: Any, args: Args, style: Style) -> str:
    """The conversations that used it say so: their selection changed without being asked."""
    line = style.green("ok") + f"  removed {args.name}"
    touched = obj(result).get("conversationsUpdated") or []
    if touched:
        line += f" (no longer selected by {', '.join(map(str, touched))})"
    return line


def _run_tool_flag(cmd: Command, ctx: Ctx) -> int:
    """Sets the flag, then warns when the server's last tool list has no such tool (a typo, or
    a tool not offered yet: the flag is kept either way, so the exit code stays 0)."""
    status = call_method(cmd, ctx)
    if status == EXIT_OK and not ctx.json:
        tools = obj(ctx.call("servers.tools", {"name": ctx.args.name})).get("tools")
        names = {t.get("name") for t in tools or [] if isinstance(t, dict)}
        if tools is not None and ctx.args.tool not in names:
            ctx.note(
                f"warning: {ctx.args.name} did not list a tool named {ctx.args.tool!r} when it "
                f"last reported its tools (see: meworkctl servers tools {ctx.args.name})"
            )
    return status


def _tool_command(verb: str, enabled: bool) -> Command:
    return Command(
        f"servers tool-{verb}",
        f"{'offer' if enabled else 'stop offering'} one of a server's tools to the model",
        f"meworkctl servers tool-{verb} filesystem write_file",
        method="servers.setToolEnabled",
        args=(NAME, TOOL),
        params=plus(pick(name="name", tool="tool"), enabled=enabled),
        render=say(f"{{tool}} of {{name}} is {verb}d"),
        run=_run_tool_flag,
    )


def _enable_command(verb: str, enabled: bool) -> Command:
    return Command(
        f"servers {verb}",
        f"{verb} a server (a conversation uses servers that are enabled and selected)",
        f"meworkctl servers {verb} filesystem",
        method="servers.update",
        args=(NAME,),
        params=plus(pick(name="name"), patch={"enabled": enabled}),
        render=say(f"{{name}} is {verb}d"),
    )


_ADD_ARGS = (
    NEW_NAME,
    arg(
        "command",
        nargs="*",
        metavar="COMMAND",
        help="a stdio server: the command and its arguments, after --",
    ),
    arg("--url", help="a Streamable HTTP server: its URL"),
    arg(
        "--env",
        action="append",
        type=pair,
        metavar="KEY=VALUE",
        help="environment variable for a stdio server (repeatable; ${VAR} is expanded)",
    ),
    arg(
        "--header",
        action="append",
        type=pair,
        metavar="KEY=VALUE",
        help="HTTP header for a --url server (repeatable; ${VAR} is expanded)",
    ),
    arg("--cwd", help="working directory of a stdio server"),
    arg("--description", help="shown to the model in the system prompt"),
    arg(
        "--timeout-seconds",
        dest="server_timeout",
        type=int,
        metavar="N",
        help="the server's request timeout in seconds (default 60; the settings field "
        "timeoutSeconds)",
    ),
    # The old spelling, kept working: after 'servers add' it was the server's timeout, which
    # read like meworkctl's own --timeout (the wait for a reply). Give that one before 'servers'.
    arg("--timeout", dest="server_timeout", type=int, help=argparse.SUPPRESS),
    arg(
        "--long-running",
        action="store_true",
        help="tool calls may run for as long as the server sends progress",
    ),
    arg("--disabled", action="store_true", help="register it switched off"),
)

COMMANDS: tuple[Command, ...] = (
    Command(
        "servers list",
        "list registered servers and their status",
        "meworkctl servers list",
        method="servers.list",
        render=show(format_servers),
    ),
    Command(
        "servers show",
        "show one server's settings",
        "meworkctl servers show filesystem --reveal",
        method="servers.get",
        args=(NAME, REVEAL),
        params=pick(name="name", reveal="reveal"),
        render=show(format_server),
    ),
    Command(
        "servers add",
        "register a stdio or Streamable HTTP server",
        "meworkctl servers add filesystem --env LOG_LEVEL=info -- npx -y "
        "@modelcontextprotocol/server-filesystem ~/projects\n"
        "  meworkctl servers add docs --url http://127.0.0.1:3000/mcp "
        "--header 'Authorization=Bearer ${DOCS_TOKEN}'",
        method="servers.add",
        args=_ADD_ARGS,
        params=_server_params,
        render=_added,
        local=("--timeout",),
        usage="%(prog)s NAME [options] -- COMMAND [ARGS...]\n"
        "       %(prog)s NAME [options] --url URL [--header KEY=VALUE ...]",
        details="Variables like ${HOME} or ${TOKEN:-default} in the command, --env, --cwd, --url "
        "and --header values are expanded by meworkd when it connects.",
    ),
    Command(
        "servers rm",
        "remove a server",
        "meworkctl servers rm filesystem",
        method="servers.remove",
        args=(NAME,),
        params=pick(name="name"),
        render=_removed,
    ),
    Command(
        "servers rename",
        "rename a server (presets follow)",
        "meworkctl servers rename fs files",
        method="servers.rename",
        args=(NAME, arg("new", metavar="NEW", help="the new name")),
        params=pick(name="name", newName="new"),
        render=say("renamed {name} to {new}"),
    ),
    _enable_command("enable", True),
    _enable_command("disable", False),
    Command(
        "servers import",
        "import servers from another MCP host's JSON document",
        "meworkctl servers import ~/.cursor/mcp.json\n  pbpaste | meworkctl servers import -\n"
        "  meworkctl servers import .vscode/mcp.json --input api-key='${API_KEY}'\n"
        "  meworkctl servers import .claude/settings.json --dry-run",
        method="servers.import",
        args=(
            arg("file", metavar="FILE", help="the JSON file, or - for stdin"),
            arg(
                "--on-conflict",
                choices=("error", "replace", "skip"),
                default="error",
                help="when a name is already registered: reject the entry (default), replace "
                "the registered one, or skip it",
            ),
            arg(
                "--input",
                action="append",
                type=pair,
                metavar="ID=VALUE",
                help="a value for VS Code's ${input:ID} (repeatable); a ${VAR} value stores that "
                "reference to meworkd's environment instead",
            ),
            arg("--dry-run", action="store_true", help="show what would happen; change nothing"),
        ),
        run=run_import,
        details="Reads Claude Desktop/Claude Code/Cursor/Windsurf/Cline/Roo/Gemini CLI "
        '{"mcpServers": ...}, VS Code {"servers": ...}, Zed {"context_servers": ...}, Goose '
        '{"extensions": ...} (as JSON), Continue\'s mcpServers list or a bare map of servers. '
        "Claude Code's permission rules for MCP tools (permissions.allow/deny/ask of a "
        ".claude/settings.json: mcp__server__tool) become the servers' alwaysAllowTools, "
        "disabledTools and disabledAutoApproveTools, each listed as a rule line. "
        "Fields meworkd does not use are listed as warnings. Values the document asks for with "
        "${input:ID} are asked on the terminal (or given with --input). Names that appear twice "
        "are reported, not merged. Exits 1 if any entry was rejected or an input is missing.",
    ),
    Command(
        "servers export",
        "print the registered servers as an mcpServers document",
        "meworkctl servers export > mcp.json",
        method="servers.export",
        args=(REVEAL,),
        params=pick(reveal="reveal"),
    ),
    _tool_command("enable", True),
    _tool_command("disable", False),
    Command(
        "servers auto-approve",
        "let a hook or full_access approve a tool, or always ask",
        "meworkctl servers auto-approve filesystem move_file off",
        method="servers.setToolAutoApprove",
        args=(NAME, TOOL, arg("state", choices=("on", "off"), help="off: ask the user every time")),
        params=lambda a: {"name": a.name, "tool": a.tool, "autoApprove": a.state == "on"},
        render=say("auto-approve of {tool} of {name} is {state}"),
        run=_run_tool_flag,
    ),
)
