"""meworkctl's commands that reach a server itself: ``servers test``, ``tools`` and ``logs``.

The rest of the ``servers`` group (the registry in the settings document) is in
:mod:`mework_client.ctl.servers`; the command table lists these rows after its.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mework_protocol.failures import failure_error
from mework_protocol.wording import tool_problem

from mework_client.ctl.command import EXIT_OK, Command, Ctx, arg, pick, show
from mework_client.ctl.layout import (
    PLAIN,
    Style,
    describe,
    dumps,
    format_table,
    items,
    listing,
    obj,
    plural,
)
from mework_client.ctl.servers import DIALING, NAME, server_label
from mework_client.ctl.words import in_own_words

__all__ = ["COMMANDS", "format_logs", "format_test"]

TOOL_HEADERS = ["NAME", "BOUND AS", "DESCRIPTION"]


def _problem_text(problem: object) -> str:
    return tool_problem(problem) if isinstance(problem, dict) else str(problem)


def _failure_text(r: Mapping[str, Any], style: Style) -> str:
    # The failure's kind (unset_variable, ...) is for programs: --json has it.
    said = in_own_words(failure_error(r) or "failed")
    lines = [style.red(f"{r.get('server') or 'server'}: {said}")]
    tail = [str(x) for x in r.get("stderrTail") or []]
    if tail:
        lines += [style.bold("stderr (last lines):"), *(f"  {x}" for x in tail)]
    return "\n".join(lines)


def _tool_rows(tools: list[dict[str, Any]]) -> list[list[object]]:
    return [[t.get("name"), t.get("boundName"), describe(t)] for t in tools]


def _test_head(r: Mapping[str, Any], style: Style) -> str:
    who = server_label(obj(r.get("serverInfo"))) or "(no serverInfo)"
    head = f"{style.green('ok')}  {who}"
    if r.get("protocolVersion"):
        head += f", protocol {r['protocolVersion']}"
    if isinstance(r.get("durationMs"), int | float):
        head += f", {r['durationMs']:.0f} ms"
    return head


def format_test(result: Any, style: Style = PLAIN, *, tools_only: bool = False) -> str:
    """``servers.test``: what the server offers (or why dialing it failed)."""
    r = obj(result)
    if not r.get("ok"):
        return _failure_text(r, style)
    tools = _tool_rows(items(r, "tools"))
    if tools_only:
        return format_table(TOOL_HEADERS, tools, style) if tools else "The server offers no tools."
    prompts = [[p.get("name"), describe(p)] for p in items(r, "prompts")]
    resources = [
        [x.get("uri") or x.get("uriTemplate"), x.get("name"), x.get("mimeType")]
        for x in items(r, "resources") + items(r, "resourceTemplates")
    ]
    offered = obj(r.get("offered"))
    parts = [
        _test_head(r, style),
        listing("Tools", TOOL_HEADERS, tools, style),
        _optional("Prompts", offered.get("prompts", True), prompts, ["NAME", "DESCRIPTION"], style),
        _optional(
            "Resources",
            offered.get("resources", True) or offered.get("resourceTemplates", True),
            resources,
            ["URI", "NAME", "MIME TYPE"],
            style,
        ),
    ]
    sandbox = obj(r.get("sandbox"))
    if sandbox:
        writes = ", ".join(str(p) for p in sandbox.get("write") or []) or "nothing but its /tmp"
        network = "with network" if sandbox.get("network") else "no network"
        parts.append(f"Sandboxed (bubblewrap): {network}; writes {writes}")
    for section, error in obj(r.get("sectionErrors")).items():
        parts.append(style.red(f"{section} could not be listed: {error}"))
    problems = r.get("problems") or []
    if problems:
        parts.append(style.bold(f"Problems ({len(problems)}):"))
        parts += [f"  - {_problem_text(p)}" for p in problems]
    if r.get("stderrTail"):
        name = r.get("server") or "NAME"
        lines = plural(len(r["stderrTail"]), "line")
        parts.append(style.dim(f"({lines} on stderr: meworkctl servers logs {name})"))
    return "\n".join(parts)


def _optional(
    title: str, offered: object, rows: list[list[object]], headers: list[str], style: Style
) -> str:
    """A section the server may leave out: "not offered" rather than an empty table."""
    if offered is False:
        return style.bold(f"{title}:") + " " + style.dim("not offered by this server")
    return listing(title, headers, rows, style)


def _log_line(entry: object) -> str:
    return str(entry.get("line", "")) if isinstance(entry, dict) else str(entry)


def format_logs(result: Any, style: Style = PLAIN) -> str:
    lines = result.get("lines") if isinstance(result, dict) else result
    text = "\n".join(_log_line(x) for x in lines or [])
    dropped = obj(result).get("dropped")
    if dropped:
        text = style.dim(f"({dropped} older lines were dropped)") + ("\n" + text if text else "")
    return text


def _test_failed(result: Any) -> str | None:
    r = obj(result)
    return None if r.get("ok") else f"cannot connect to {r.get('server') or 'the server'}"


def _print_log_line(ctx: Ctx, entry: object) -> None:
    ctx.print(dumps(entry, None) if ctx.json else _log_line(entry))


def _run_logs(cmd: Command, ctx: Ctx) -> int:
    if not ctx.args.follow:
        result = ctx.call("servers.logs", cmd.params(ctx.args))
        ctx.emit(result, lambda: format_logs(result, ctx.style))
        if not ctx.json and not obj(result).get("lines"):
            ctx.note(f"no stderr lines from {ctx.args.name} (yet)")  # else a silent, blank run
        return EXIT_OK
    topics = ["server.log"]
    with ctx.connect(stream=True) as client:
        # Subscribe first so that no line falls between the tail and the stream.
        client.call("events.subscribe", {"topics": topics})
        result = client.call("servers.logs", cmd.params(ctx.args))
        for entry in obj(result).get("lines") or []:
            _print_log_line(ctx, entry)
        ctx.note(f"Following {ctx.args.name}'s stderr (Ctrl-C to stop)…")  # as events says
        for _topic, data in client.events(topics):
            if obj(data).get("server") == ctx.args.name:
                _print_log_line(ctx, data)
    return EXIT_OK


COMMANDS: tuple[Command, ...] = (
    Command(
        "servers test",
        "dial a server once and list its tools, prompts and resources",
        "meworkctl servers test filesystem",
        method="servers.test",
        args=(NAME,),
        params=pick(name="name"),
        render=show(format_test),
        failed=_test_failed,
        wait=True,
        progress=DIALING,
        details="Records the server's name and version. On failure, shows the cause and the "
        "end of its stderr, and exits 1.",
    ),
    Command(
        "servers tools",
        "list a server's tools (runs servers test, shows only the tools)",
        "meworkctl servers tools filesystem",
        method="servers.test",
        args=(NAME,),
        params=pick(name="name"),
        render=lambda r, _a, style: format_test(r, style, tools_only=True),
        failed=_test_failed,
        wait=True,
        progress=DIALING,
        details="It dials the server like 'servers test' and prints only the tools table "
        "(the servers.tools method returns what the server last reported, without dialing).",
    ),
    Command(
        "servers logs",
        "print a stdio server's stderr (the Logs tab)",
        "meworkctl servers logs filesystem --tail 50 -f",
        method="servers.logs",
        args=(
            NAME,
            arg("--tail", type=int, metavar="N", help="only the last N lines"),
            arg("-f", "--follow", action="store_true", help="keep printing new lines"),
        ),
        params=pick(name="name", tail="tail"),
        render=show(format_logs),
        run=_run_logs,
        streams=True,
    ),
)
