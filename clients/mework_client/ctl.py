"""``meworkctl``: the command line of meworkd, a thin frontend over its JSON-RPC control socket.

Every subcommand maps to one control-API method (DESIGN.md, "The control API"); the simple ones
are rows of the :data:`COMMANDS` table (path, method, params, human rendering), the few that stream
events or prompt have their own ``run`` function. Output is a plain-text table or ``key: value``
lines by default (coloured only on a terminal without ``NO_COLOR``) and the raw result with
``--json``. Errors go to stderr as ``meworkctl: <message> (<kind>)``.

Exit codes: 0 ok, 1 the daemon (or the tool, or an import entry) reported an error, 2 usage
error, 3 meworkd is not running, 130 interrupted.

Start-up must stay fast, so this module imports only the standard library and ``mework_client``
(never ``mcp``, ``meworkd``, ``anyio`` or ``msgspec``); ``mework_client.service`` is imported only
by the commands that need it.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, NoReturn, Protocol, TextIO

from mework_protocol.address import default_socket_path

from mework_client import Client, DaemonNotRunning, RpcError, __version__

__all__ = [
    "COMMANDS",
    "EXIT_ERROR",
    "EXIT_NOT_RUNNING",
    "EXIT_OK",
    "EXIT_USAGE",
    "ApprovalWatcher",
    "Command",
    "Style",
    "bash_completion",
    "build_parser",
    "describe_rpc_error",
    "format_approval_request",
    "format_approvals",
    "format_audit",
    "format_call",
    "format_conversation",
    "format_conversations",
    "format_import",
    "format_logs",
    "format_presets",
    "format_server",
    "format_servers",
    "format_status",
    "format_table",
    "format_test",
    "format_turn",
    "main",
    "not_running_message",
]

PROG = "meworkctl"
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_RUNNING, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
DEFAULT_TIMEOUT = 30.0  # seconds per reply, for the quick methods (see Command.wait)
DESCRIPTION_WIDTH = 60
HELP_WIDTH = 79
LEVELS = ("request_approval", "allow_edits", "plan", "full_access")
APPROVAL_TOPICS = ["approval.requested", "approval.resolved"]
NEXT_STEPS = "systemctl --user daemon-reload && systemctl --user enable --now meworkd.socket"
RPC_KINDS = {
    -32700: "parse_error",
    -32600: "invalid_request",
    -32601: "method_not_found",
    -32602: "invalid_params",
    -32603: "internal",
}


class UsageError(Exception):
    """A command line that parses but makes no sense (exit code 2, with the command's usage)."""


class CtlError(Exception):
    """A local failure worth one line on stderr (exit code 1), e.g. an unreadable file."""


# --- terminal styling and plain-text layout ------------------------------------------------------


BOLD, DIM, RED, GREEN = "1", "2", "31", "32"  # SGR codes


# Records are NamedTuples and plain classes, not dataclasses: importing dataclasses (and the
# inspect module it pulls in) was ~5.5 ms of `meworkctl status`'s start-up (bench B6).


class Style(NamedTuple):
    """ANSI styling that is a no-op unless ``color`` (a terminal without ``NO_COLOR``)."""

    color: bool = False

    @classmethod
    def for_stream(cls, stream: TextIO) -> Style:
        try:
            tty = stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        return cls(tty and not os.environ.get("NO_COLOR"))

    def apply(self, sgr: str, text: str) -> str:
        return f"\x1b[{sgr}m{text}\x1b[0m" if self.color and sgr and text else text

    def bold(self, text: str) -> str:
        return self.apply(BOLD, text)

    def red(self, text: str) -> str:
        return self.apply(RED, text)

    def green(self, text: str) -> str:
        return self.apply(GREEN, text)

    def dim(self, text: str) -> str:
        return self.apply(DIM, text)


PLAIN = Style()


class Cell(NamedTuple):
    """A table cell with its own colour (padding is measured on ``text`` alone)."""

    text: str
    sgr: str = ""


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _cell_text(value: object) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(_cell_text(v) for v in value) or "-"
    if isinstance(value, float):
        return f"{value:g}" if value.is_integer() or abs(value) >= 1e6 else f"{value:.6g}"
    return " ".join(str(value).split("\n"))


def format_table(
    headers: Sequence[str], rows: Iterable[Sequence[object]], style: Style = PLAIN
) -> str:
    """Columns padded to their widest cell, a bold header row, two spaces between columns."""
    cells = [[v if isinstance(v, Cell) else Cell(_cell_text(v)) for v in row] for row in rows]
    widths = [_width(h) for h in headers]
    for row in cells:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], _width(cell.text))

    def line(row: Sequence[Cell]) -> str:
        last = len(row) - 1
        parts = [
            style.apply(c.sgr, c.text) + ("" if i == last else " " * (widths[i] - _width(c.text)))
            for i, c in enumerate(row)
        ]
        return "  ".join(parts).rstrip()

    return "\n".join([line([Cell(h, BOLD) for h in headers]), *(line(r) for r in cells)])


def _key_values(pairs: Iterable[tuple[str, object]], style: Style = PLAIN) -> str:
    """``key: value`` lines, values aligned; ``None`` values are left out."""
    kept = [(k, v) for k, v in pairs if v is not None]
    if not kept:
        return ""
    width = max(len(k) for k, _ in kept) + 1
    return "\n".join(
        style.bold(f"{k}:") + " " * (width - len(k)) + " " + _cell_text(v) for k, v in kept
    )


def _truncate(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _duration(seconds: float) -> str:
    total = int(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")]
    shown = [f"{n}{unit}" for n, unit in parts if n] or [f"{seconds:.1f}s"]
    return " ".join(shown[:2])


def _when(value: object) -> str | None:
    """A timestamp (epoch seconds or ISO 8601) as local ``YYYY-MM-DD HH:MM:SS``."""
    from datetime import datetime  # here, not at the top: start-up time (bench B6)

    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            moment = datetime.fromtimestamp(value)
        elif isinstance(value, str) and value:
            moment = datetime.fromisoformat(value).astimezone()
        else:
            return None
    except (ValueError, OverflowError, OSError):
        return str(value)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _dumps(value: object, indent: int | None = 2) -> str:
    separators = None if indent else (",", ":")
    return json.dumps(value, indent=indent, ensure_ascii=False, separators=separators)


def _obj(value: object, key: str | None = None) -> dict[str, Any]:
    """``value`` as an object (or its ``key`` member when it wraps one), ``{}`` otherwise."""
    if key is not None and isinstance(value, dict) and isinstance(value.get(key), dict):
        value = value[key]
    return value if isinstance(value, dict) else {}


def _items(value: object, key: str) -> list[dict[str, Any]]:
    """The objects in the list ``value[key]`` (listings answer ``{key: [...]}``)."""
    found = value.get(key) if isinstance(value, dict) else value
    return [v for v in found if isinstance(v, dict)] if isinstance(found, list) else []


def _first(entry: Mapping[str, Any], *keys: str) -> Any:
    return next((entry[k] for k in keys if entry.get(k) is not None), None)


def _listing(title: str, headers: Sequence[str], rows: list[list[object]], style: Style) -> str:
    """``Title (N):`` and a table of the rows (none: just the title)."""
    head = style.bold(f"{title} ({len(rows)}):")
    return head + "\n" + format_table(headers, rows, style) if rows else head


# --- rendering results (pure functions: result in, text out) -------------------------------------


def format_status(result: Any, style: Style = PLAIN) -> str:
    r = _obj(result)
    servers = r.get("servers")
    if "serversEnabled" in r:
        servers = f"{servers} ({r['serversEnabled']} enabled)"
    uptime = r.get("uptimeSeconds", r.get("uptime"))
    text = _key_values(
        [
            ("version", r.get("version")),
            ("pid", r.get("pid")),
            ("uptime", _duration(float(uptime)) if isinstance(uptime, int | float) else uptime),
            ("settings", r.get("settingsPath")),
            ("socket", r.get("socketPath")),
            ("state", r.get("stateDir")),
            ("servers", servers),
            ("sessions", r.get("sessions")),
            ("conversations", r.get("conversations")),
            ("turns", r.get("turns")),
            ("connections", r.get("connections")),
        ],
        style,
    )
    if r.get("settingsError"):
        text += "\n" + style.red(f"settings error: {r['settingsError']}")
    return text


def _command_line(entry: Mapping[str, Any]) -> str:
    if entry.get("url"):
        return str(entry["url"])
    if not entry.get("command"):
        return ""
    return shlex.join([str(entry["command"]), *map(str, entry.get("args") or [])])


_STATUS_COLOURS = {"enabled": GREEN, "invalid": RED, "disabled": DIM}


def format_servers(result: Any, style: Style = PLAIN) -> str:
    servers = _items(result, "servers")
    if not servers:
        return "No MCP servers are registered. Add one with: meworkctl servers add NAME -- COMMAND"
    rows = [
        [
            s.get("name"),
            s.get("type"),
            s.get("enabled"),
            Cell(str(s.get("status") or "-"), _STATUS_COLOURS.get(str(s.get("status")), "")),
            _truncate(_command_line(s), DESCRIPTION_WIDTH),
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


def format_server(result: Any, style: Style = PLAIN) -> str:
    r = _obj(result)
    raw = _obj(r.get("server"))
    info = _obj(r.get("serverInfo"))
    tested = " ".join(str(info[k]) for k in ("name", "version") if info.get(k)) or None
    if tested and info.get("testedAt"):
        tested += f" (tested {_when(info['testedAt'])})"
    timeout = r.get("timeoutSeconds", raw.get("timeoutSeconds"))
    text = _key_values(
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


def format_mcp_options(result: Any, style: Style = PLAIN) -> str:
    options = sorted(_obj(result, "mcp").items())
    # Strings are quoted: the description prefix usually ends with a space.
    return _key_values([(k, _dumps(v) if isinstance(v, str) else v) for k, v in options], style)


def format_reload(result: Any, style: Style = PLAIN) -> str:
    r = _obj(result)
    if r.get("error"):
        return style.red(f"not applied: {r['error']}")
    changes = [
        f"{label}: {', '.join(map(str, r[key]))}"
        for key, label in [
            ("added", "added"),
            ("removed", "removed"),
            ("connectionChanged", "reconnecting"),
            ("policyChanged", "updated"),
            ("invalid", "invalid"),
        ]
        if r.get(key)
    ]
    return "\n".join(["Settings reloaded.", *changes]) if changes else "Settings reloaded."


def format_import(result: Any, style: Style = PLAIN) -> str:
    r = _obj(result)
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


def _problem_text(problem: object) -> str:
    if not isinstance(problem, dict):
        return str(problem)
    where = f"{problem['tool']}: " if problem.get("tool") else ""
    kind = f" ({problem['problem']})" if problem.get("problem") else ""
    return f"{where}{problem.get('detail') or problem.get('message') or ''}{kind}"


def _failure_text(r: Mapping[str, Any], style: Style) -> str:
    lines = [style.red(f"{r.get('server') or 'server'}: {r.get('error') or 'failed'}")]
    tail = [str(x) for x in r.get("stderrTail") or []]
    if tail:
        lines += [style.bold("stderr (last lines):"), *(f"  {x}" for x in tail)]
    return "\n".join(lines)


def _describe(item: Mapping[str, Any]) -> str:
    return _truncate(str(item.get("description") or ""), DESCRIPTION_WIDTH)


def _tool_rows(tools: list[dict[str, Any]]) -> list[list[object]]:
    return [[t.get("name"), t.get("boundName"), _describe(t)] for t in tools]


TOOL_HEADERS = ["NAME", "BOUND AS", "DESCRIPTION"]


def _test_head(r: Mapping[str, Any], style: Style) -> str:
    info = _obj(r.get("serverInfo"))
    who = " ".join(str(info[k]) for k in ("name", "version") if info.get(k)) or "(no serverInfo)"
    head = f"{style.green('ok')}  {who}"
    if r.get("protocolVersion"):
        head += f", protocol {r['protocolVersion']}"
    if isinstance(r.get("durationMs"), int | float):
        head += f", {r['durationMs']:.0f} ms"
    return head


def format_test(result: Any, style: Style = PLAIN, *, tools_only: bool = False) -> str:
    """``servers.test``: what the server offers (or why dialing it failed)."""
    r = _obj(result)
    if not r.get("ok"):
        return _failure_text(r, style)
    tools = _tool_rows(_items(r, "tools"))
    if tools_only:
        return format_table(TOOL_HEADERS, tools, style) if tools else "The server offers no tools."
    prompts = [[p.get("name"), _describe(p)] for p in _items(r, "prompts")]
    resources = [
        [x.get("uri") or x.get("uriTemplate"), x.get("name"), x.get("mimeType")]
        for x in _items(r, "resources") + _items(r, "resourceTemplates")
    ]
    parts = [
        _test_head(r, style),
        _listing("Tools", TOOL_HEADERS, tools, style),
        _listing("Prompts", ["NAME", "DESCRIPTION"], prompts, style),
        _listing("Resources", ["URI", "NAME", "MIME TYPE"], resources, style),
    ]
    problems = r.get("problems") or []
    if problems:
        parts.append(style.bold(f"Problems ({len(problems)}):"))
        parts += [f"  - {_problem_text(p)}" for p in problems]
    if r.get("stderrTail"):
        name = r.get("server") or "NAME"
        count = len(r["stderrTail"])
        parts.append(style.dim(f"({count} lines on stderr: meworkctl servers logs {name})"))
    return "\n".join(parts)


def _log_line(entry: object) -> str:
    return str(entry.get("line", "")) if isinstance(entry, dict) else str(entry)


def format_logs(result: Any, style: Style = PLAIN) -> str:
    lines = result.get("lines") if isinstance(result, dict) else result
    text = "\n".join(_log_line(x) for x in lines or [])
    dropped = _obj(result).get("dropped")
    if dropped:
        text = style.dim(f"({dropped} older lines were dropped)") + ("\n" + text if text else "")
    return text


def format_presets(result: Any, style: Style = PLAIN) -> str:
    presets = _items(result, "presets")
    if not presets:
        return "No presets."
    rows = [[p.get("name"), p.get("mcpServers"), p.get("approvalLevel")] for p in presets]
    return format_table(["NAME", "SERVERS", "LEVEL"], rows, style)


def format_conversations(result: Any, style: Style = PLAIN) -> str:
    conversations = _items(result, "conversations")
    if not conversations:
        return "No conversations."
    rows = [
        [
            c.get("id"),
            c.get("mcpServers"),
            c.get("approvalLevel"),
            c.get("preset"),
            _when(c.get("updatedAt")),
        ]
        for c in conversations
    ]
    return format_table(["ID", "SERVERS", "LEVEL", "PRESET", "UPDATED"], rows, style)


def format_conversation(result: Any, style: Style = PLAIN) -> str:
    c = _obj(result, "conversation")
    return _key_values(
        [
            ("id", c.get("id")),
            ("servers", c.get("mcpServers", [])),
            ("level", c.get("approvalLevel")),
            ("preset", c.get("preset")),
            ("created", _when(c.get("createdAt"))),
            ("updated", _when(c.get("updatedAt"))),
        ],
        style,
    )


def format_turn(result: Any, style: Style = PLAIN) -> str:
    """``turns.begin``: the turn id, the tools as bound for the model, and failed servers."""
    r = _obj(result)
    bindings = _obj(r.get("bindings"))
    rows: list[list[object]] = []
    for tool in _items(r, "tools"):
        binding = _obj(bindings.get(str(tool.get("name"))))
        rows.append([tool.get("name"), binding.get("server"), binding.get("tool"), _describe(tool)])
    lines = [
        _key_values([("turn", r.get("turnId"))], style),
        _listing("Tools", ["NAME", "SERVER", "TOOL", "DESCRIPTION"], rows, style),
    ]
    for failure in _items(r, "failures"):
        lines.append(style.red(f"{failure.get('server')}: {failure.get('reason')}"))
    return "\n".join(lines)


def _decoded_size(data: object) -> int:
    """Bytes a base64 string decodes to (without decoding it)."""
    if not isinstance(data, str):
        return 0
    text = data.strip()
    return len(text) * 3 // 4 - text[-2:].count("=")


def _content_block(block: Mapping[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        return f"[{kind} {block.get('mimeType') or '?'}, {_decoded_size(block.get('data'))} bytes]"
    if kind == "resource":
        resource = _obj(block.get("resource"))
        text = resource.get("text")
        head = f"[resource {resource.get('uri') or '?'}"
        if isinstance(text, str):
            return f"{head}]\n{text}"
        size = _decoded_size(resource.get("blob"))
        return f"{head}, {resource.get('mimeType') or '?'}, {size} bytes]"
    if kind == "resource_link":
        return f"[link {block.get('uri') or '?'} {block.get('name') or ''}]".replace(" ]", "]")
    return f"[{kind or 'unknown'} content]"


def format_call(result: Any, style: Style = PLAIN) -> str:
    """``turns.callTool``: text as text, other blocks summarised, structuredContent as JSON."""
    r = _obj(result)
    parts = [_content_block(block) for block in _items(r, "content")]
    if r.get("structuredContent") is not None:
        parts.append(_dumps(r["structuredContent"]))
    text = "\n".join(parts)
    return style.red(text) if r.get("isError") and text else text


def format_approvals(result: Any, style: Style = PLAIN) -> str:
    approvals = _items(result, "approvals")
    if not approvals:
        return "No pending approvals."
    rows = [
        [
            a.get("approvalId"),
            a.get("conversationId"),
            a.get("server"),
            a.get("tool"),
            _truncate(str(a.get("reason") or ""), 40),
            _truncate(_dumps(a.get("arguments"), None), 40),
        ]
        for a in approvals
    ]
    return format_table(["ID", "CONV", "SERVER", "TOOL", "REASON", "ARGUMENTS"], rows, style)


LONG_STRING = 200


def _shorten(value: Any, limit: int = LONG_STRING) -> Any:
    """Arguments made readable: strings longer than ``limit`` are cut, saying how much."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]}… ({len(value) - limit} more characters)"
    if isinstance(value, dict):
        return {k: _shorten(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_shorten(v, limit) for v in value]
    return value


def format_approval_request(data: Any, style: Style = PLAIN) -> str:
    a = _obj(data)
    head = style.bold(f"{a.get('server')} / {a.get('tool')}") + style.dim(
        f"  (approval {a.get('approvalId')}, conversation {a.get('conversationId')}, "
        f"turn {a.get('turnId')})"
    )
    arguments = _dumps(_shorten(a.get("arguments", {})))
    lines = [head]
    if a.get("reason"):
        lines.append(f"reason: {a['reason']}")
    lines += ["arguments:", *("  " + line for line in arguments.splitlines())]
    return "\n".join(lines)


def _ms(value: object) -> object:
    return round(value) if isinstance(value, float) else value


def format_audit(result: Any, style: Style = PLAIN) -> str:
    entries = _items(result, "entries")
    if not entries:
        return "The audit log is empty."
    rows = []
    for e in entries:
        decision = str(_first(e, "decision") or "-")
        rows.append(
            [
                _when(_first(e, "time", "at", "timestamp", "createdAt", "decidedAt")),
                e.get("conversationId"),
                e.get("server"),
                e.get("tool"),
                Cell(decision, GREEN if decision == "allow" else RED if decision == "deny" else ""),
                _first(e, "by", "provenance", "decidedBy", "source"),
                _ms(_first(e, "durationMs", "ms")),
                _first(e, "replyBytes", "bytes", "size"),
                _truncate(str(e.get("error") or ("isError" if e.get("isError") else "")), 40),
            ]
        )
    headers = ["TIME", "CONV", "SERVER", "TOOL", "DECISION", "BY", "MS", "BYTES", "ERROR"]
    return format_table(headers, rows, style)


# --- errors --------------------------------------------------------------------------------------


def not_running_message(path: Path | str) -> str:
    return (
        f"meworkd is not running (no daemon on {path}). "
        "Start it with: meworkd  (or: systemctl --user start meworkd.socket)"
    )


def describe_rpc_error(error: RpcError, method: str | None = None) -> str:
    """One line for a person: the message, what it was about, and the stable kind."""
    kind = error.kind if error.kind != "unknown" else RPC_KINDS.get(error.code, "unknown")
    if error.code == -32601:
        name = error.data if isinstance(error.data, str) else method
        return f"this meworkd does not implement {name or 'that method'} ({kind})"
    text = f"{error} ({kind})"
    details = _obj(error.data).get("errors")
    if isinstance(details, list) and details != [error.message]:
        text += "".join(f"\n  {d}" for d in details)
    return text


# --- the invocation context -----------------------------------------------------------------------


class _StdoutClosed(Exception):
    """stdout went away (``meworkctl ... | head``): stop quietly."""


class Caller(Protocol):
    def call(self, method: str, params: dict[str, Any] | None = None) -> Any: ...


class Ctx:
    """One run of a command: its arguments, the streams and how to reach the daemon."""

    __slots__ = ("args", "err", "out")

    def __init__(
        self, args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
    ) -> None:
        self.args = args
        self.out: TextIO = sys.stdout if out is None else out
        self.err: TextIO = sys.stderr if err is None else err

    @property
    def style(self) -> Style:
        return Style.for_stream(self.out)

    @property
    def json(self) -> bool:
        return bool(self.args.json)

    def timeout(self, *, wait: bool = False) -> float | None:
        explicit: float | None = self.args.timeout
        return explicit if explicit is not None else None if wait else DEFAULT_TIMEOUT

    def connect(self, *, stream: bool = False, wait: bool = False) -> Client:
        """A connection; ``stream`` ones wait for events forever, ``wait`` ones for slow calls."""
        return Client(self.args.socket, None if stream else self.timeout(wait=wait))

    def call(self, method: str, params: dict[str, Any] | None, *, wait: bool = False) -> Any:
        with self.connect(wait=wait) as client:
            return client.call(method, params)

    def print(self, text: str) -> None:
        try:
            print(text, file=self.out, flush=True)
        except BrokenPipeError:
            raise _StdoutClosed from None

    def note(self, text: str) -> None:
        print(text, file=self.err, flush=True)

    def fail(self, message: str) -> None:
        self.note(Style.for_stream(self.err).red(f"{PROG}: {message}"))

    def emit(self, result: Any, human: Callable[[], str]) -> None:
        """The raw result with ``--json``, else the human text (if any)."""
        text = _dumps(result) if self.json else human()
        if text:
            self.print(text)


# --- the command table ----------------------------------------------------------------------------

Params = Callable[[argparse.Namespace], dict[str, Any] | None]
Render = Callable[[Any, argparse.Namespace, Style], str]
Failed = Callable[[Any], str | None]


class Arg(NamedTuple):
    """The arguments of one ``add_argument`` call."""

    names: tuple[str, ...]
    options: dict[str, Any]


def arg(*names: str, **options: Any) -> Arg:
    return Arg(names, options)


def _no_params(_args: argparse.Namespace) -> dict[str, Any] | None:
    return None


def _pick(**fields: str) -> Params:
    """Params from arguments: ``rpcName="attribute"``; unset (``None``) ones are left out."""

    def build(args: argparse.Namespace) -> dict[str, Any]:
        values = {key: getattr(args, attr) for key, attr in fields.items()}
        return {key: value for key, value in values.items() if value is not None}

    return build


def _with(params: Params, **constants: Any) -> Params:
    """``params`` plus fixed members."""
    return lambda args: {**(params(args) or {}), **constants}


def _show(formatter: Callable[[Any, Style], str]) -> Render:
    return lambda result, _args, style: formatter(result, style)


def _say(template: str) -> Render:
    """A fixed confirmation, filled in from the arguments (``{name}``)."""
    return lambda _result, args, style: style.green("ok") + "  " + template.format_map(vars(args))


def _never(_result: Any) -> str | None:
    return None


def _dump(result: Any, _args: argparse.Namespace, _style: Style) -> str:
    return _dumps(result)


def _test_failed(result: Any) -> str | None:
    r = _obj(result)
    return None if r.get("ok") else f"cannot connect to {r.get('server') or 'the server'}"


def _import_failed(result: Any) -> str | None:
    rejected = _obj(result).get("rejected") or []
    return f"{len(rejected)} entries were rejected" if rejected else None


def _call_failed(result: Any) -> str | None:
    return "the tool reported an error (isError)" if _obj(result).get("isError") else None


def _reload_failed(result: Any) -> str | None:
    r = _obj(result)
    return "the settings file was not applied" if r.get("applied") is False else None


class Command(NamedTuple):
    """One leaf of the command tree; ``run`` defaults to calling ``method`` with ``params``."""

    path: str
    help: str
    example: str
    method: str | None = None
    args: tuple[Arg, ...] = ()
    params: Params = _no_params
    render: Render = _dump
    failed: Failed = _never
    run: Callable[[Command, Ctx], int] | None = None
    details: str = ""
    wait: bool = False  # may take long (dials servers, waits for approvals): no default timeout
    streams: bool = False  # runs until interrupted; Ctrl-C is a normal way to stop it
    local: tuple[str, ...] = ()  # global options this command uses for itself
    usage: str | None = None

    def execute(self, ctx: Ctx) -> int:
        return self.run(self, ctx) if self.run is not None else call_method(self, ctx)


def call_method(cmd: Command, ctx: Ctx) -> int:
    assert cmd.method is not None
    result = ctx.call(cmd.method, cmd.params(ctx.args), wait=cmd.wait)
    ctx.emit(result, lambda: cmd.render(result, ctx.args, ctx.style))
    problem = cmd.failed(result)
    if problem:
        ctx.fail(problem)
        return EXIT_ERROR
    return EXIT_OK


# Argument parsers (``type=``): a ValueError/ArgumentTypeError becomes a usage error.


def _pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _number(text: str) -> int | float:
    value = float(text)
    return (
        int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value
    )


MCP_OPTIONS: dict[str, Callable[[str], object]] = {
    "mandatory_description_prefix": str,
    "session_idle_minutes": _number,
    "max_reply_bytes": int,
    "approval_timeout_seconds": _number,
}


def _mcp_option(text: str) -> tuple[str, object]:
    key, value = _pair(text)
    if key not in MCP_OPTIONS:
        raise argparse.ArgumentTypeError(
            f"unknown option {key!r} (one of: {', '.join(MCP_OPTIONS)})"
        )
    try:
        return key, MCP_OPTIONS[key](value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{key} needs a number, got {value!r}") from None


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _read_text(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise CtlError(f"cannot read {source}: {reason}") from None


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
    return {"text": _read_text(args.file), "onConflict": args.on_conflict}


def _call_params(args: argparse.Namespace) -> dict[str, Any]:
    text = _read_text("-") if args.arguments == "-" else args.arguments
    try:
        arguments = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"ARGUMENTS is not valid JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(arguments, dict):
        raise UsageError('ARGUMENTS must be a JSON object, e.g. \'{"path": "/tmp"}\'')
    params = {"turnId": args.turn, "name": args.name, "arguments": arguments}
    return params | ({"callId": args.call_id} if args.call_id else {})


def _preset_params(args: argparse.Namespace) -> dict[str, Any]:
    preset: dict[str, Any] = {"mcpServers": args.servers or []}
    if args.level:
        preset["approvalLevel"] = args.level
    return {"name": args.name, "preset": preset}


NAME = arg("name", metavar="NAME", help="the server's name")
TOOL = arg("tool", metavar="TOOL", help="the tool's original name (as the server lists it)")
CONV = arg("id", metavar="ID", help="the conversation id")
TURN = arg("turn", metavar="TURN", help="the turn id (from turn begin)")
REASON = arg("--reason", help="a reason, recorded in the audit log")
REVEAL = arg("--reveal", action="store_true", help="show secret env and header values")
LEVEL_CHOICES = {"choices": LEVELS, "metavar": "LEVEL"}
LEVEL_HELP = f"approval level: {', '.join(LEVELS)}"


def _added(result: Any, args: argparse.Namespace, style: Style) -> str:
    kind = _obj(result).get("type")
    return style.green("ok") + f"  added {kind + ' ' if kind else ''}server {args.name}"


def _tool_command(verb: str, enabled: bool) -> Command:
    return Command(
        f"servers tool-{verb}",
        f"{'offer' if enabled else 'stop offering'} one of a server's tools to the model",
        f"meworkctl servers tool-{verb} filesystem write_file",
        method="servers.setToolEnabled",
        args=(NAME, TOOL),
        params=_with(_pick(name="name", tool="tool"), enabled=enabled),
        render=_say(f"{{tool}} of {{name}} is {verb}d"),
    )


def _enable_command(verb: str, enabled: bool) -> Command:
    return Command(
        f"servers {verb}",
        f"{verb} a server (a conversation uses servers that are enabled and selected)",
        f"meworkctl servers {verb} filesystem",
        method="servers.update",
        args=(NAME,),
        params=_with(_pick(name="name"), patch={"enabled": enabled}),
        render=_say(f"{{name}} is {verb}d"),
    )


def _respond_command(decision: str) -> Command:
    return Command(
        f"approvals {decision}",
        f"{decision} a pending tool call",
        f"meworkctl approvals {decision} 3f2a9c1b7d4e --reason 'looks fine'",
        method="approvals.respond",
        args=(arg("approval", metavar="ID", help="the approval id (from approvals list)"), REASON),
        params=_with(_pick(approvalId="approval", reason="reason"), decision=decision),
        render=_say(f"{'allowed' if decision == 'allow' else 'denied'} {{approval}}"),
    )


# --- commands with their own run function ---------------------------------------------------------


def _run_test(cmd: Command, ctx: Ctx) -> int:
    if ctx.err.isatty():
        ctx.note(f"Dialing {ctx.args.name}…")
    return call_method(cmd, ctx)


def _print_log_line(ctx: Ctx, entry: object) -> None:
    ctx.print(_dumps(entry, None) if ctx.json else _log_line(entry))


def _run_logs(cmd: Command, ctx: Ctx) -> int:
    if not ctx.args.follow:
        return call_method(cmd, ctx)
    topics = ["server.log"]
    with ctx.connect(stream=True) as client:
        # Subscribe first so that no line falls between the tail and the stream.
        client.call("events.subscribe", {"topics": topics})
        result = client.call("servers.logs", cmd.params(ctx.args))
        for entry in _obj(result).get("lines") or []:
            _print_log_line(ctx, entry)
        for _topic, data in client.events(topics):
            if _obj(data).get("server") == ctx.args.name:
                _print_log_line(ctx, data)
    return EXIT_OK


def _run_events(_cmd: Command, ctx: Ctx) -> int:
    topics = ctx.args.topics or None
    with ctx.connect(stream=True) as client:
        client.call("events.subscribe", {"topics": topics} if topics else None)
        ctx.note("Listening for events (Ctrl-C to stop)…")
        for topic, data in client.events(topics):
            ctx.print(_dumps({"topic": topic, "data": data}, None))
    return EXIT_OK


def _ask_stdin(prompt: str) -> str | None:
    try:
        return input(prompt)
    except EOFError:
        return None


class ApprovalWatcher:
    """``approvals watch``: shows each request, asks y/N, answers on a second connection."""

    def __init__(
        self,
        control: Caller,
        write: Callable[[str], None],
        ask: Callable[[str], str | None] = _ask_stdin,
        style: Style = PLAIN,
    ) -> None:
        self.control, self.write, self.ask, self.style = control, write, ask, style
        self.shown: set[str] = set()
        self.answered: set[str] = set()

    def pending(self) -> list[dict[str, Any]]:
        return _items(self.control.call("approvals.list"), "approvals")

    def on_event(self, topic: str, data: Any) -> bool:
        """Handle one event; ``False`` when stdin ended (stop watching)."""
        if topic == "approval.requested":
            return self.request(_obj(data))
        if topic == "approval.resolved":
            self.resolved(_obj(data))
        return True

    def request(self, approval: dict[str, Any]) -> bool:
        approval_id = str(approval.get("approvalId"))
        if approval_id in self.shown:
            return True
        self.shown.add(approval_id)
        if approval_id not in {str(a.get("approvalId")) for a in self.pending()}:
            self.write(self.style.dim(f"{approval_id}: already answered"))
            return True
        self.write(format_approval_request(approval, self.style))
        answer = self.ask("Allow? [y/N] ")
        if answer is None:
            self.write("\n(no more input: leaving it unanswered)")
            return False
        decision = "allow" if answer.strip().lower() in ("y", "yes") else "deny"
        try:
            self.control.call(
                "approvals.respond", {"approvalId": approval_id, "decision": decision}
            )
        except RpcError as exc:
            if exc.kind != "approval_not_found":
                raise
            self.write(self.style.dim(f"{approval_id}: already answered"))
            return True
        self.answered.add(approval_id)
        colour = self.style.green if decision == "allow" else self.style.red
        self.write(colour(f"{'allowed' if decision == 'allow' else 'denied'} {approval_id}"))
        return True

    def resolved(self, data: dict[str, Any]) -> None:
        approval_id = str(data.get("approvalId"))
        if approval_id in self.shown and approval_id not in self.answered:
            how = " ".join(str(data[k]) for k in ("decision", "decidedBy") if data.get(k))
            self.write(self.style.dim(f"{approval_id}: answered elsewhere ({how or 'resolved'})"))


def _run_watch(_cmd: Command, ctx: Ctx) -> int:
    with ctx.connect(stream=True) as stream, ctx.connect() as control:
        # Subscribe before listing, so a request made in between is seen (once: by id).
        stream.call("events.subscribe", {"topics": APPROVAL_TOPICS})
        watcher = ApprovalWatcher(control, ctx.print, style=ctx.style)
        for approval in watcher.pending():
            if not watcher.request(approval):
                return EXIT_OK
        ctx.note("Waiting for approval requests (Ctrl-C to stop)…")
        for topic, data in stream.events(APPROVAL_TOPICS):
            if not watcher.on_event(topic, data):
                return EXIT_OK
    return EXIT_OK


def _report_paths(ctx: Ctx, key: str, verb: str, paths: list[Path], steps: list[str]) -> int:
    if ctx.json:
        ctx.print(_dumps({key: [str(p) for p in paths]}))
        return EXIT_OK
    ctx.print("\n".join([*(f"{verb} {p}" for p in paths), *steps]))
    return EXIT_OK


def _run_install(_cmd: Command, ctx: Ctx) -> int:
    from mework_client import service

    try:
        paths = service.install(unit_dir=ctx.args.unit_dir, exec_path=ctx.args.exec)
    except (OSError, ValueError) as exc:
        raise CtlError(str(exc)) from None
    steps = ["Next, to start meworkd on first use:", f"  {NEXT_STEPS}"]
    return _report_paths(ctx, "written", "Wrote", paths, steps)


def _run_uninstall(_cmd: Command, ctx: Ctx) -> int:
    from mework_client import service

    try:
        paths = service.uninstall(unit_dir=ctx.args.unit_dir)
    except OSError as exc:
        raise CtlError(str(exc)) from None
    steps = [
        "Then: systemctl --user daemon-reload",
        "(a running daemon keeps running: systemctl --user stop meworkd.socket meworkd.service)",
    ]
    if not paths:
        steps.insert(0, "No meworkd units were installed.")
    return _report_paths(ctx, "removed", "Removed", paths, steps)


def _run_completion(_cmd: Command, ctx: Ctx) -> int:
    ctx.print(bash_completion(build_parser()))
    return EXIT_OK


# --- the command tree -----------------------------------------------------------------------------

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
    "approvals": (
        "list, answer or watch approval requests for tool calls",
        "meworkctl approvals watch",
    ),
}

COMMANDS: tuple[Command, ...] = (
    Command(
        "status",
        "show the daemon's version, uptime and counts",
        "meworkctl status",
        method="daemon.status",
        render=_show(format_status),
    ),
    Command(
        "shutdown",
        "stop the daemon (closing every MCP session)",
        "meworkctl shutdown",
        method="daemon.shutdown",
        render=lambda _r, _a, style: style.green("ok") + "  meworkd is stopping",
    ),
    # settings
    Command(
        "settings show",
        "print the settings document (secrets masked)",
        "meworkctl settings show > settings-backup.json",
        method="settings.get",
        render=lambda result, _a, _s: _dumps(_obj(result).get("document", result)),
    ),
    Command(
        "settings reload",
        "re-read the settings file now",
        "meworkctl settings reload",
        method="settings.reload",
        render=_show(format_reload),
        failed=_reload_failed,
        details="meworkd also reloads by itself when the file changes, and on SIGHUP.",
    ),
    Command(
        "settings set",
        "change options of the mcp section",
        "meworkctl settings set session_idle_minutes=10 max_reply_bytes=131072",
        method="settings.setMcpOptions",
        args=(
            arg(
                "options",
                nargs="+",
                type=_mcp_option,
                metavar="KEY=VALUE",
                help=f"one of: {', '.join(MCP_OPTIONS)}",
            ),
        ),
        params=lambda args: dict(args.options),
        render=_show(format_mcp_options),
    ),
    # servers
    Command(
        "servers list",
        "list registered servers and their status",
        "meworkctl servers list",
        method="servers.list",
        render=_show(format_servers),
    ),
    Command(
        "servers show",
        "show one server's settings",
        "meworkctl servers show filesystem --reveal",
        method="servers.get",
        args=(NAME, REVEAL),
        params=_pick(name="name", reveal="reveal"),
        render=_show(format_server),
    ),
    Command(
        "servers add",
        "register a stdio or Streamable HTTP server",
        "meworkctl servers add filesystem --env LOG_LEVEL=info -- npx -y "
        "@modelcontextprotocol/server-filesystem ~/projects\n"
        "  meworkctl servers add docs --url http://127.0.0.1:3000/mcp "
        "--header 'Authorization=Bearer ${DOCS_TOKEN}'",
        method="servers.add",
        args=(
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
                type=_pair,
                metavar="KEY=VALUE",
                help="environment variable for a stdio server (repeatable; ${VAR} is expanded)",
            ),
            arg(
                "--header",
                action="append",
                type=_pair,
                metavar="KEY=VALUE",
                help="HTTP header for a --url server (repeatable; ${VAR} is expanded)",
            ),
            arg("--cwd", help="working directory of a stdio server"),
            arg("--description", help="shown to the model in the system prompt"),
            arg(
                "--timeout",
                "--timeout-seconds",
                dest="server_timeout",
                type=int,
                metavar="N",
                help="the server's request timeout in seconds (default 60); here --timeout is "
                "the server's: give meworkctl's own --timeout before 'servers'",
            ),
            arg(
                "--long-running",
                action="store_true",
                help="tool calls may run for as long as the server sends progress",
            ),
            arg("--disabled", action="store_true", help="register it switched off"),
        ),
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
        params=_pick(name="name"),
        render=_say("removed {name}"),
    ),
    Command(
        "servers rename",
        "rename a server (presets follow)",
        "meworkctl servers rename fs files",
        method="servers.rename",
        args=(NAME, arg("new", metavar="NEW", help="the new name")),
        params=_pick(name="name", newName="new"),
        render=_say("renamed {name} to {new}"),
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
        render=_show(format_import),
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
        params=_pick(reveal="reveal"),
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
        render=_say("auto-approve of {tool} of {name} is {state}"),
    ),
    Command(
        "servers test",
        "dial a server once and list its tools, prompts and resources",
        "meworkctl servers test filesystem",
        method="servers.test",
        args=(NAME,),
        params=_pick(name="name"),
        render=_show(format_test),
        failed=_test_failed,
        run=_run_test,
        wait=True,
        details="Records the server's name and version. On failure, shows the cause and the "
        "end of its stderr, and exits 1.",
    ),
    Command(
        "servers tools",
        "list a server's tools (runs servers test, shows only the tools)",
        "meworkctl servers tools filesystem",
        method="servers.test",
        args=(NAME,),
        params=_pick(name="name"),
        render=lambda r, _a, style: format_test(r, style, tools_only=True),
        failed=_test_failed,
        run=_run_test,
        wait=True,
        details="There is no separate method for this: it dials the server like "
        "'servers test' and prints only the tools table.",
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
        params=_pick(name="name", tail="tail"),
        render=_show(format_logs),
        run=_run_logs,
        streams=True,
    ),
    # presets
    Command(
        "presets list",
        "list presets",
        "meworkctl presets list",
        method="presets.list",
        render=_show(format_presets),
    ),
    Command(
        "presets set",
        "create or replace a preset",
        "meworkctl presets set research --server docs --level request_approval",
        method="presets.set",
        args=(
            arg("name", metavar="NAME", help="the preset's name"),
            arg(
                "--server",
                dest="servers",
                action="append",
                metavar="NAME",
                help="a server it selects (repeatable)",
            ),
            arg("--level", help=LEVEL_HELP, **LEVEL_CHOICES),
        ),
        params=_preset_params,
        render=_say("preset {name} saved"),
    ),
    Command(
        "presets rm",
        "remove a preset",
        "meworkctl presets rm research",
        method="presets.remove",
        args=(arg("name", metavar="NAME", help="the preset's name"),),
        params=_pick(name="name"),
        render=_say("removed preset {name}"),
    ),
    # conversations
    Command(
        "conv create",
        "create a conversation",
        "meworkctl conv create --id chat-1 --server filesystem --level allow_edits",
        method="conversations.create",
        args=(
            arg("--id", help="its id (default: a new one)"),
            arg("--preset", help="take servers and level from this preset"),
            arg(
                "--server",
                dest="servers",
                action="append",
                metavar="NAME",
                help="select this server (repeatable)",
            ),
            arg("--level", help=LEVEL_HELP, **LEVEL_CHOICES),
        ),
        params=_pick(id="id", preset="preset", mcpServers="servers", approvalLevel="level"),
        render=_show(format_conversation),
    ),
    Command(
        "conv list",
        "list conversations",
        "meworkctl conv list",
        method="conversations.list",
        render=_show(format_conversations),
    ),
    Command(
        "conv show",
        "show a conversation",
        "meworkctl conv show chat-1",
        method="conversations.get",
        args=(CONV,),
        params=_pick(id="id"),
        render=_show(format_conversation),
    ),
    Command(
        "conv select",
        "set the servers a conversation uses (none: clear)",
        "meworkctl conv select chat-1 filesystem docs",
        method="conversations.update",
        args=(CONV, arg("names", nargs="*", metavar="NAME", help="server names")),
        params=_pick(id="id", mcpServers="names"),
        render=_show(format_conversation),
    ),
    Command(
        "conv level",
        "set a conversation's approval level",
        "meworkctl conv level chat-1 full_access",
        method="conversations.update",
        args=(CONV, arg("level", help=LEVEL_HELP, **LEVEL_CHOICES)),
        params=_pick(id="id", approvalLevel="level"),
        render=_show(format_conversation),
    ),
    Command(
        "conv rm",
        "delete a conversation (closing its sessions)",
        "meworkctl conv rm chat-1",
        method="conversations.delete",
        args=(CONV,),
        params=_pick(id="id"),
        render=_say("deleted conversation {id}"),
    ),
    # turns
    Command(
        "turn begin",
        "begin a turn: discover the tools of the conversation's servers",
        "meworkctl turn begin chat-1",
        method="turns.begin",
        args=(
            arg("conversation", metavar="CONV", help="the conversation id"),
            arg("--parent", metavar="TURN", help="a subagent's turn: inherit this turn's tools"),
        ),
        params=_pick(conversationId="conversation", parentTurnId="parent"),
        render=_show(format_turn),
        wait=True,
    ),
    Command(
        "turn end",
        "end a turn (its sessions stay pooled)",
        "meworkctl turn end t-123",
        method="turns.end",
        args=(TURN,),
        params=_pick(turnId="turn"),
        render=_say("ended {turn}"),
    ),
    Command(
        "turn cancel",
        "cancel a turn's calls in flight",
        "meworkctl turn cancel t-123",
        method="turns.cancel",
        args=(TURN, arg("--call", metavar="ID", help="only this call")),
        params=_pick(turnId="turn", callId="call"),
        render=_say("cancelled calls of {turn}"),
    ),
    Command(
        "call",
        "call a tool in a turn, as the model would",
        'meworkctl call t-123 mcp__filesystem_1a2b3c__read-file__4d5e6f \'{"path": "/tmp/x"}\'',
        method="turns.callTool",
        args=(
            TURN,
            arg("name", metavar="NAME", help="the bound tool name (from turn begin)"),
            arg(
                "arguments",
                metavar="ARGUMENTS",
                nargs="?",
                default="{}",
                help="the arguments as a JSON object, or - to read them from stdin",
            ),
            arg("--call-id", metavar="ID", help="an id for turn cancel --call"),
        ),
        params=_call_params,
        render=_show(format_call),
        failed=_call_failed,
        wait=True,
        details="Waits for approval when the conversation's level asks for it. Prints text "
        "content, summarises other content and exits 1 when the tool reports isError.",
    ),
    # approvals
    Command(
        "approvals list",
        "list pending approval requests",
        "meworkctl approvals list",
        method="approvals.list",
        render=_show(format_approvals),
    ),
    _respond_command("allow"),
    _respond_command("deny"),
    Command(
        "approvals watch",
        "answer approval requests as they arrive (y/N on stdin)",
        "meworkctl approvals watch",
        run=_run_watch,
        streams=True,
        details="Shows each request (server, tool, reason, arguments) and asks 'Allow? [y/N]'; "
        "the first answer from any frontend wins. Stops at end of input or Ctrl-C.",
    ),
    Command(
        "audit",
        "show the approval audit log",
        "meworkctl audit --conversation chat-1 --limit 20",
        method="audit.list",
        args=(
            arg("--conversation", metavar="ID", help="only this conversation"),
            arg("--limit", type=int, metavar="N", help="at most N entries (default 100)"),
        ),
        params=_pick(conversationId="conversation", limit="limit"),
        render=_show(format_audit),
    ),
    Command(
        "events",
        "print events as JSON lines until interrupted",
        "meworkctl events server.status approval.requested",
        run=_run_events,
        streams=True,
        args=(
            arg(
                "topics",
                nargs="*",
                metavar="TOPIC",
                help="approval.requested, approval.resolved, settings.reloaded, "
                "settings.invalid, server.log, server.status, turn.progress "
                "(default: all)",
            ),
        ),
        details='Each line is {"topic": ..., "data": ...}, also without --json.',
    ),
    Command(
        "install-service",
        "install meworkd's systemd user units",
        "meworkctl install-service && " + NEXT_STEPS,
        run=_run_install,
        args=(
            arg(
                "--exec",
                type=Path,
                metavar="PATH",
                help="the meworkd executable (default: the one on PATH or beside python)",
            ),
            arg(
                "--unit-dir",
                type=Path,
                metavar="DIR",
                help="where to write them (default: ~/.config/systemd/user)",
            ),
        ),
    ),
    Command(
        "uninstall-service",
        "remove meworkd's systemd user units",
        "meworkctl uninstall-service && systemctl --user daemon-reload",
        run=_run_uninstall,
        args=(
            arg(
                "--unit-dir",
                type=Path,
                metavar="DIR",
                help="where they are (default: ~/.config/systemd/user)",
            ),
        ),
    ),
    Command(
        "completion",
        "print a shell completion script",
        "source <(meworkctl completion bash)",
        run=_run_completion,
        args=(arg("shell", choices=("bash",), help="the shell (bash)"),),
    ),
)


# --- the parser -----------------------------------------------------------------------------------

EPILOG = f"""\
exit codes: {EXIT_OK} ok, {EXIT_ERROR} error reply (or a failed test, a tool error, a rejected
import entry), {EXIT_USAGE} usage error, {EXIT_NOT_RUNNING} meworkd is not running.
Run 'meworkctl COMMAND --help' for a command's options and an example."""


def _description(help_text: str, example: str, details: str = "") -> str:
    text = help_text[0].upper() + help_text[1:] + "."
    if details:
        import textwrap  # here, not at the top: start-up time (bench B6)

        text += "\n\n" + textwrap.fill(details, HELP_WIDTH)
    return f"{text}\n\nexample:\n  {example}"


def _add_global_options(
    parser: argparse.ArgumentParser, *, top: bool, skip: Sequence[str] = ()
) -> None:
    """The global options; leaves accept them too (``servers list --json``), without defaults."""
    group = parser.add_argument_group("global options")

    def default(value: object) -> object:
        return value if top else argparse.SUPPRESS

    group.add_argument(
        "--socket",
        type=Path,
        metavar="PATH",
        default=default(None),
        help=f"the daemon's control socket (default: {default_socket_path()})",
    )
    group.add_argument(
        "--json",
        action="store_true",
        default=default(False),
        help="print the raw JSON result (for scripts)",
    )
    if "--timeout" not in skip:
        group.add_argument(
            "--timeout",
            type=_positive,
            metavar="SECONDS",
            default=default(None),
            help=f"how long to wait for a reply (default: {DEFAULT_TIMEOUT:g}; no limit for "
            "commands that dial servers or wait for approvals)",
        )


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        # The width argparse would compute itself, without its `import shutil` (~1.5 ms of
        # start-up: argparse builds a formatter for every add_argument; bench B6).
        super().__init__(prog, max_help_position=30, width=_terminal_columns() - 2)


def _terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``, the same way, without importing shutil."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Retry(Exception):
    """A partial parser (see :func:`parse_args`) met something it cannot judge alone."""


class _PartialParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Retry(message)


def build_parser(
    only: str | None = None, parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser
) -> argparse.ArgumentParser:
    """The whole command tree, or with ``only`` just the commands under that first word."""
    parser = parser_class(
        prog=PROG,
        description="Control meworkd, the MCP host daemon of Mework.",
        epilog=EPILOG,
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    _add_global_options(parser, top=True)
    commands = {"": parser.add_subparsers(title="commands", metavar="COMMAND", required=True)}
    for cmd in COMMANDS:
        *groups, leaf = cmd.path.split()
        if only is not None and (groups or [leaf])[0] != only:
            continue
        parent = ""
        for group in groups:
            path = f"{parent} {group}".strip()
            if path not in commands:
                help_text, example = GROUPS[path]
                sub = commands[parent].add_parser(
                    group,
                    help=help_text,
                    description=_description(help_text, example),
                    formatter_class=_Formatter,
                )
                commands[path] = sub.add_subparsers(
                    title="commands", metavar="COMMAND", required=True
                )
            parent = path
        sub = commands[parent].add_parser(
            leaf,
            help=cmd.help,
            usage=cmd.usage,
            description=_description(cmd.help, cmd.example, cmd.details),
            formatter_class=_Formatter,
        )
        for a in cmd.args:
            sub.add_argument(*a.names, **a.options)
        _add_global_options(sub, top=False, skip=cmd.local)
        sub.set_defaults(spec=cmd, leaf=sub)
    return parser


_TOP_WORDS = frozenset(c.path.split()[0] for c in COMMANDS)


def _split_trailing_command(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """``servers add NAME [options] -- CMD ARGS...``: everything after ``--`` is the command.

    argparse cannot take options between a positional and a ``--`` list (nor keep a second
    ``--`` inside the command), so the command is cut off before parsing.
    """
    if "--" not in argv:
        return argv, None
    cut = argv.index("--")
    head = argv[:cut]
    if any(head[i : i + 2] == ["servers", "add"] for i in range(len(head) - 1)):
        return head, argv[cut + 1 :]
    return argv, None


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Parse (``SystemExit`` for ``--help``, ``--version`` and usage errors, as argparse does)."""
    head, command = _split_trailing_command(list(argv))
    # Start-up speed (bench B6): building all ~50 sub-parsers took ~9 ms of a ~47 ms
    # `meworkctl status`. When exactly one top-level command word occurs in argv, only that
    # subtree is built; help requests, and anything the partial parser would reject, go to the
    # whole tree, so every message is what the full parser says.
    words = {w for w in head if w in _TOP_WORDS}
    args: argparse.Namespace | None = None
    if len(words) == 1 and not {"-h", "--help"} & set(head):
        try:
            args = build_parser(words.pop(), _PartialParser).parse_args(head)
        except _Retry:
            args = None
    if args is None:
        args = build_parser().parse_args(head)
    if command is not None:
        args.command = [*args.command, *command]
    if args.socket is None:
        args.socket = default_socket_path()
    return args


# --- bash completion (generated from the parser) --------------------------------------------------


class _Node:
    __slots__ = ("choices", "commands", "options", "valued")

    def __init__(self) -> None:
        self.commands: list[str] = []
        self.options: list[str] = []
        self.valued: list[str] = []
        self.choices: dict[str, list[str]] = {}  # option or #index -> words


def _walk(parser: argparse.ArgumentParser, path: str, nodes: dict[str, _Node]) -> None:
    node = nodes.setdefault(path, _Node())
    fixed: int | None = 0  # positionals so far, while they all take exactly one word
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                node.commands.append(name)
                _walk(sub, f"{path} {name}".strip(), nodes)
        elif action.option_strings:
            node.options += action.option_strings
            if action.nargs != 0:
                node.valued += action.option_strings
                for option in action.option_strings:
                    if action.choices:
                        node.choices[option] = [str(c) for c in action.choices]
        elif fixed is not None:
            if action.choices:
                node.choices[f"#{fixed}"] = [str(c) for c in action.choices]
            fixed = fixed + 1 if action.nargs is None else None


def _case(entries: Mapping[str, Sequence[str]]) -> str:
    lines = [
        f"        {shlex.quote(key)}) echo {shlex.quote(' '.join(words))} ;;"
        for key, words in entries.items()
        if words
    ]
    return "\n".join(lines)


_BASH = """\
# bash completion for meworkctl, generated by `meworkctl completion bash`.
# Load it with:  source <(meworkctl completion bash)

_meworkctl_words() {
    # $1: commands|options|valued, $2: the command path
    case "$1:$2" in
%(words)s
    esac
}

_meworkctl_choices() {
    # $1: the command path, $2: an option, or #N for the Nth positional argument
    case "$1:$2" in
%(choices)s
    esac
}

_meworkctl() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="" path="" word i skip=0 npos=0
    ((COMP_CWORD > 0)) && prev="${COMP_WORDS[COMP_CWORD-1]}"
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${COMP_WORDS[i]}"
        if ((skip)); then skip=0; continue; fi
        [[ $word == -- ]] && return 0
        if [[ $word == -* ]]; then
            [[ " $(_meworkctl_words valued "$path") " == *" $word "* ]] && skip=1
        elif [[ " $(_meworkctl_words commands "$path") " == *" $word "* ]]; then
            path="${path:+$path }$word"
        else
            ((npos++))
        fi
    done
    local words
    if [[ $prev == -* ]] && [[ " $(_meworkctl_words valued "$path") " == *" $prev "* ]]; then
        words="$(_meworkctl_choices "$path" "$prev")"
    elif [[ $cur == -* ]]; then
        words="$(_meworkctl_words options "$path")"
    else
        words="$(_meworkctl_words commands "$path")"
        [[ -n $words ]] || words="$(_meworkctl_choices "$path" "#$npos")"
    fi
    [[ -n $words ]] && COMPREPLY=($(compgen -W "$words" -- "$cur"))
    return 0
}

complete -o default -F _meworkctl meworkctl
"""


def bash_completion(parser: argparse.ArgumentParser) -> str:
    """A bash script completing subcommands, options and choices at every level of ``parser``."""
    nodes: dict[str, _Node] = {}
    _walk(parser, "", nodes)
    words: dict[str, list[str]] = {}
    choices: dict[str, list[str]] = {}
    for path, node in nodes.items():
        for kind in ("commands", "options", "valued"):
            words[f"{kind}:{path}"] = getattr(node, kind)
        for key, values in node.choices.items():
            choices[f"{path}:{key}"] = values
    return _BASH % {"words": _case(words), "choices": _case(choices)}


# --- main -----------------------------------------------------------------------------------------


def run(args: argparse.Namespace, ctx: Ctx) -> int:
    """Run the parsed command; every failure becomes a message and an exit code."""
    cmd: Command = args.spec
    try:
        return cmd.execute(ctx)
    except UsageError as exc:
        args.leaf.print_usage(ctx.err)
        ctx.note(f"{args.leaf.prog}: error: {exc}")
        return EXIT_USAGE
    except DaemonNotRunning as exc:
        ctx.fail(not_running_message(exc.path))
        return EXIT_NOT_RUNNING
    except RpcError as exc:
        ctx.fail(describe_rpc_error(exc, cmd.method))
        return EXIT_ERROR
    except TimeoutError:
        ctx.fail(f"no reply from meworkd within {ctx.timeout():g} s (wait longer with --timeout)")
        return EXIT_ERROR
    except CtlError as exc:
        ctx.fail(str(exc))
        return EXIT_ERROR
    except _StdoutClosed:
        _silence_stdout()
        return EXIT_OK
    except KeyboardInterrupt:
        return EXIT_OK if cmd.streams else EXIT_INTERRUPTED
    except ConnectionError as exc:
        ctx.fail(f"lost the connection to meworkd: {exc}")
        return EXIT_ERROR
    except OSError as exc:
        ctx.fail(f"cannot talk to meworkd on {args.socket}: {exc.strerror or exc}")
        return EXIT_ERROR


def _silence_stdout() -> None:
    """After EPIPE, make the interpreter's final flush of stdout a no-op."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    return run(args, Ctx(args))


if __name__ == "__main__":
    sys.exit(main())
