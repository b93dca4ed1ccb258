"""meworkctl's commands for MCP registries: ``servers search``, ``info``, ``install``,
``outdated`` and ``upgrade``.

``install`` asks the daemon first with a dry run: the inputs the server needs are asked on a
terminal (hidden when secret; the value, or a ``${VAR}`` reference to meworkd's environment) or
given with ``--input NAME=VALUE``; a missing one without a terminal is an error naming them all.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from mework_client.ctl.command import (
    EXIT_ERROR,
    EXIT_OK,
    Command,
    CtlError,
    Ctx,
    arg,
    pair,
    pick,
    show,
)
from mework_client.ctl.layout import PLAIN, RED, Cell, Style, format_table, items, obj
from mework_client.ctl.servers_import import ask_input

__all__ = ["COMMANDS", "format_info", "format_install", "format_outdated", "format_search"]


def _needs(needs: dict[str, Any]) -> str:
    parts = list(needs.get("runtimes") or [])
    if needs.get("remote"):
        parts.append("remote")
    wanted = [*(needs.get("environment") or []), *(needs.get("headers") or [])]
    if wanted:
        parts.append("needs " + ", ".join(map(str, wanted)))
    return "; ".join(parts)


def format_search(result: Any, style: Style = PLAIN) -> str:
    r = obj(result)
    rows = [
        [
            s.get("name"),
            s.get("version"),
            Cell("deprecated", RED) if s.get("status") == "deprecated" else "",
            _needs(obj(s.get("needs"))),
            s.get("description") or "",
        ]
        for s in items(r, "servers")
    ]
    headers = ["NAME", "VERSION", "STATUS", "RUNS WITH", "DESCRIPTION"]
    lines = [format_table(headers, rows, style)] if rows else ["No server matches."]
    for state in items(r, "registries"):
        if not state.get("ok"):
            age = state.get("ageSeconds")
            since = "" if age is None else f"; results from its copy of {age // 60} min ago"
            lines.append(style.red(f"offline: {state.get('error')}{since}"))
    if r.get("nextCursor"):
        lines.append(f"more: --cursor {r['nextCursor']}")
    return "\n".join(lines)


def format_info(result: Any, style: Style = PLAIN) -> str:
    r = obj(result)
    server = obj(r.get("server"))
    lines = [style.bold(str(server.get("title") or server.get("name")))]
    lines.append(f"{server.get('name')} {server.get('version')} ({r.get('status')})")
    if server.get("description"):
        lines.append(str(server["description"]))
    for package in items(server, "packages"):
        lines.append(
            f"package: {package.get('registryType')} {package.get('identifier')} "
            f"{package.get('version') or ''}".rstrip()
        )
        for env in items(package, "environmentVariables"):
            required = " (required)" if env.get("isRequired") else ""
            lines.append(f"  env {env.get('name')}{required}: {env.get('description') or ''}")
    for remote in items(server, "remotes"):
        lines.append(f"remote: {remote.get('type')} {remote.get('url')}")
        for header in items(remote, "headers"):
            required = " (required)" if header.get("isRequired") else ""
            lines.append(f"  header {header.get('name')}{required}")
    lines.append(f"registry: {r.get('registry')}" + (" (offline copy)" if r.get("offline") else ""))
    return "\n".join(lines)


def format_install(result: Any, style: Style = PLAIN) -> str:
    r = obj(result)
    lines = []
    for choice in items(r, "choices"):
        mark = "*" if choice.get("index") == r.get("choice") else " "
        what = choice.get("identifier") or choice.get("url") or ""
        why = "" if choice.get("supported") else f" (not installable: {choice.get('why')})"
        lines.append(f"{mark} [{choice.get('index')}] {choice.get('kind')} {what}{why}")
    server = obj(r.get("server"))
    command = server.get("url") or " ".join([str(server.get("command")), *server.get("args", [])])
    lines.append(f"runs: {command}")
    lines += [style.red(f"warning: {w}") for w in r.get("warnings") or []]
    for need in items(r, "needsInputs"):
        lines.append(style.red(f"needs input {need.get('id')}: {need.get('description') or ''}"))
    if r.get("installed"):
        lines.append(f"installed as {r.get('name')}")
    elif r.get("dryRun"):
        lines.append(f"dry run: would install as {r.get('name')}")
    return "\n".join(lines)


def format_outdated(result: Any, style: Style = PLAIN) -> str:
    r = obj(result)
    rows = [
        [s.get("name"), s.get("installed"), s.get("latest"), s.get("server")]
        for s in items(r, "servers")
    ]
    lines = [format_table(["NAME", "INSTALLED", "LATEST", "SERVER"], rows, style)] if rows else []
    lines = lines or ["Every server installed from a registry is at its latest version."]
    lines += [style.red(f"{e.get('name')}: {e.get('error')}") for e in items(r, "errors")]
    return "\n".join(lines)


def _search_params(args: Any) -> dict[str, Any]:
    params = {"query": " ".join(args.query), "limit": args.limit, "refresh": args.refresh}
    return params | ({"cursor": args.cursor} if args.cursor is not None else {})


def _install_params(args: Any) -> dict[str, Any]:
    target = str(args.server)
    params: dict[str, Any] = {"inputs": dict(args.input or [])}
    if target.endswith(".mcpb") or (os.sep in target and os.path.exists(target)):
        params["bundle"] = os.path.abspath(target)
    else:
        params["name"] = target
    for key, value in (("version", args.version), ("choice", args.choice), ("entryName", args.as_)):
        if value is not None:
            params[key] = value
    return params


def run_install(cmd: Command, ctx: Ctx) -> int:
    params = _install_params(ctx.args)
    preview = ctx.call("servers.install", {**params, "dryRun": True}, wait=True)
    needed = items(preview, "needsInputs")
    if needed and not ctx.args.dry_run:
        if not sys.stdin.isatty():
            wanted = ", ".join(str(n.get("id")) for n in needed)
            raise CtlError(
                f"the server needs values for: {wanted}. Give each with --input NAME=VALUE (a "
                "${VAR} value stores a reference to meworkd's environment instead of the "
                "secret), or run on a terminal to be asked."
            )
        name = obj(preview).get("name")
        for need in needed:
            asked = {**need, "password": need.get("secret"), "servers": [name]}
            params["inputs"][str(need["id"])] = ask_input(asked, ctx.note)
    result = preview if ctx.args.dry_run else ctx.call("servers.install", params, wait=True)
    ctx.emit(result, lambda: format_install(result, ctx.style))
    return EXIT_OK if ctx.args.dry_run or obj(result).get("installed") else EXIT_ERROR


COMMANDS: tuple[Command, ...] = (
    Command(
        "servers search",
        "find servers in the MCP registries by words of their name or description",
        "meworkctl servers search weather",
        method="servers.search",
        args=(
            arg("query", nargs="*", metavar="WORDS", help="words to look for (all must match)"),
            arg("--limit", type=int, default=20, metavar="N", help="at most N (1-100)"),
            arg("--cursor", metavar="C", help="the next page (printed after a full page)"),
            arg("--refresh", action="store_true", help="ask the registries now"),
        ),
        params=_search_params,
        render=show(format_search),
        wait=True,
        details="Searches a local copy of each registry of mcp.registries (refreshed every few "
        "minutes); when a registry does not answer, its last copy does, and that is said.",
    ),
    Command(
        "servers info",
        "show a registry server's details: packages, remotes, what it needs",
        "meworkctl servers info io.github.example/weather-mcp",
        method="servers.registryGet",
        args=(
            arg("name", metavar="SERVER", help="the server's registry name"),
            arg("--version", metavar="V", help="that version (default: the latest)"),
        ),
        params=pick(name="name", version="version"),
        render=show(format_info),
        wait=True,
    ),
    Command(
        "servers install",
        "install a server from an MCP registry (or a .mcpb bundle)",
        "meworkctl servers install io.github.example/weather-mcp --input WEATHER_API_KEY='${KEY}'",
        args=(
            arg("server", metavar="SERVER", help="a registry name, or the path of a .mcpb file"),
            arg("--version", metavar="V", help="that version (default: the latest)"),
            arg("--choice", type=int, metavar="N", help="which package or remote (see --dry-run)"),
            arg("--as", dest="as_", metavar="NAME", help="the settings entry's name"),
            arg(
                "--input",
                action="append",
                type=pair,
                metavar="NAME=VALUE",
                help="a value the server asks for (repeatable); ${VAR} stores a reference",
            ),
            arg("--dry-run", action="store_true", help="show what would be installed"),
        ),
        run=run_install,
        details="Values the server needs (environment variables, headers, arguments) are asked "
        "on the terminal or given with --input. Exits 1 if nothing was installed.",
    ),
    Command(
        "servers outdated",
        "list servers installed from a registry that have a newer version",
        "meworkctl servers outdated",
        method="servers.outdated",
        render=show(format_outdated),
        wait=True,
    ),
    Command(
        "servers upgrade",
        "move a server installed from a registry to a newer version",
        "meworkctl servers upgrade weather-mcp",
        method="servers.upgrade",
        args=(
            arg("name", metavar="NAME", help="the settings entry"),
            arg("--version", metavar="V", help="that version (default: the latest)"),
            arg("--dry-run", action="store_true", help="show what would change"),
        ),
        params=pick(name="name", version="version", dryRun="dry_run"),
        wait=True,
    ),
)
