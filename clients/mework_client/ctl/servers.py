"""meworkctl's ``servers`` group: the server registry (list, show, add, import, enable, ...).

The commands that dial a server (``test``, ``tools``, ``logs``) are in
:mod:`mework_client.ctl.servers_probe`.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Mapping
from typing import Any

from mework_client.ctl.command import (
    Command,
    UsageError,
    arg,
    pair,
    pick,
    plus,
    read_text,
    say,
    show,
)
from mework_client.ctl.layout import (
    DESCRIPTION_WIDTH,
    DIM,
    GREEN,
    PLAIN,
    RED,
    Cell,
    Style,
    format_table,
    items,
    key_values,
    obj,
    plural,
    truncate,
    when,
)

__all__ = [
    "COMMANDS",
    "GROUP",
    "NAME",
    "format_import",
    "format_server",
    "format_servers",
    "server_label",
]

GROUP = ("register, inspect and test MCP servers", "meworkctl servers list")
NAME = arg("name", metavar="NAME", help="the server's name")
TOOL = arg("tool", metavar="TOOL", help="the tool's original name (as the server lists it)")
REVEAL = arg("--reveal", action="store_true", help="show secret env and header values")
_STATUS_COLOURS = {"enabled": GREEN, "invalid": RED, "disabled": DIM}


def _command_line(entry: Mapping[str, Any]) -> str:
    if entry.get("url"):
        return str(entry["url"])
    if not entry.get("command"):
        return ""
    return shlex.join([str(entry["command"]), *map(str, entry.get("args") or [])])


def format_servers(result: Any, style: Style = PLAIN) -> str:
    servers = items(result, "servers")
    if not servers:
        return "No MCP servers are registered. Add one with: meworkctl servers add NAME -- COMMAND"
    rows = [
        [
            s.get("name"),
            s.get("type"),
            s.get("enabled"),
            Cell(str(s.get("status") or "-"), _STATUS_COLOURS.get(str(s.get("status")), "")),
            truncate(_command_line(s), DESCRIPTION_WIDTH),
        ]
        for s in servers
    ]
    lines = [format_table(["NAME", "TYPE", "ENABLED", "STATUS", "COMMAND/URL"], rows, style)]
    lines += [style.red(f"{s.get('name')}: {s['error']}") for s in servers if s.get("error")]
    return "\n".join(lines)


def _pairs_text(values: object) -> list[str] | None:
    if not isinstance(values, dict) or not values:
        return None
    return [f"{k}={v}" for k, v in values.items()]


def server_label(info: Mapping[str, Any]) -> str | None:
    """``name version`` from a server's ``serverInfo`` (what it told about itself)."""
    return " ".join(str(info[k]) for k in ("name", "version") if info.get(k)) or None


def format_server(result: Any, style: Style = PLAIN) -> str:
    r = obj(result)
    raw = obj(r.get("server"))
    info = obj(r.get("serverInfo"))
    tested = server_label(info)
    if tested and info.get("testedAt"):
        tested += f" (tested {when(info['testedAt'])})"
    timeout = r.get("timeoutSeconds", raw.get("timeoutSeconds"))
    text = key_values(
        [
            ("name", r.get("name")),
            ("type", r.get("type")),
            ("status", r.get("status")),
            ("description", r.get("description")),
            ("command", _command_line(r) if r.get("command") else None),
            ("url", r.get("url")),
            ("cwd", raw.get("cwd")),
            ("env", _pairs_text(raw.get("env"))),
            ("headers", _pairs_text(raw.get("headers"))),
            ("timeout", f"{timeout:g} s" if isinstance(timeout, int | float) else timeout),
            ("long running", r.get("longRunning") or None),
            ("tools off", r.get("disabledTools") or None),
            ("always ask", r.get("disabledAutoApproveTools") or None),
            ("server", tested),
        ],
        style,
    )
    if r.get("error"):
        text += "\n" + style.red(f"error: {r['error']}")
    return text


def format_import(result: Any, style: Style = PLAIN) -> str:
    r = obj(result)
    rows: list[list[object]] = []
    for outcome, colour in [
        ("added", GREEN),
        ("replaced", GREEN),
        ("skipped", ""),
        ("rejected", RED),
    ]:
        for entry in r.get(outcome) or []:
            name, reason = (
                (entry.get("name"), entry.get("reason"))
                if isinstance(entry, dict)
                else (entry, None)
            )
            rows.append([Cell(outcome, colour), name, reason])
    counts = ", ".join(
        f"{len(r.get(k) or [])} {k}" for k in ("added", "replaced", "skipped", "rejected")
    )
    lines = (
        [format_table(["RESULT", "NAME", "REASON"], rows, style)] if rows else ["Nothing imported."]
    )
    if r.get("duplicates"):
        dupes = ", ".join(map(str, r["duplicates"]))
        lines.append(style.red(f"duplicate names in the document (not imported): {dupes}"))
    lines.append(f"{counts}" + (f" (format: {r['format']})" if r.get("format") else ""))
    return "\n".join(lines)


def _import_failed(result: Any) -> str | None:
    rejected = obj(result).get("rejected") or []
    if not rejected:
        return None
    verb = "was" if len(rejected) == 1 else "were"
    return f"{plural(len(rejected), 'entry', 'entries')} {verb} rejected"


def _server_params(args: argparse.Namespace) -> dict[str, Any]:
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


def _import_params(args: argparse.Namespace) -> dict[str, Any]:
    return {"text": read_text(args.file), "onConflict": args.on_conflict}


def _added(result: Any, args: argparse.Namespace, style: Style) -> str:
    kind = obj(result).get("type")
    return style.green("ok") + f"  added {kind + ' ' if kind else ''}server {args.name}"


def _tool_command(verb: str, enabled: bool) -> Command:
    return Command(
        f"servers tool-{verb}",
        f"{'offer' if enabled else 'stop offering'} one of a server's tools to the model",
        f"meworkctl servers tool-{verb} filesystem write_file",
        method="servers.setToolEnabled",
        args=(NAME, TOOL),
        params=plus(pick(name="name", tool="tool"), enabled=enabled),
        render=say(f"{{tool}} of {{name}} is {verb}d"),
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
    NAME,
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
        render=say("removed {name}"),
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
        "import servers from an mcpServers JSON document",
        "meworkctl servers import ~/.cursor/mcp.json\n  pbpaste | meworkctl servers import -",
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
        ),
        params=_import_params,
        render=show(format_import),
        failed=_import_failed,
        details='Reads Claude Desktop/Cline/Cursor {"mcpServers": ...}, VS Code '
        '{"servers": ...}, Claude Code .mcp.json or a bare map of servers. Names that '
        "appear twice in the document are reported, not merged. Exits 1 if any entry "
        "was rejected.",
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
    ),
)
