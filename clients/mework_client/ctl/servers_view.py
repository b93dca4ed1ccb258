"""How servers are shown on the command line: the servers list table, one server's fields.

The status reads as every frontend says it (:mod:`mework_protocol.wording`), and what a
server's tools would cost a turn (``cost`` of ``servers.list``) as a count and a size, the
tokens marked as an estimate.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from mework_protocol.wording import byte_size, server_state, token_estimate

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
from mework_client.ctl.settings_state import in_own_words, settings_lines

__all__ = ["cost_text", "format_server", "format_servers", "server_label"]

_STATUS_COLOURS = {"enabled": GREEN, "invalid": RED, "disabled": DIM}


def _command_line(entry: Mapping[str, Any]) -> str:
    if entry.get("url"):
        return str(entry["url"])
    if not entry.get("command"):
        return ""
    return shlex.join([str(entry["command"]), *map(str, entry.get("args") or [])])


def _status_cell(entry: Mapping[str, Any]) -> Cell:
    """The status in the words every frontend uses (a last failure shows as failed)."""
    state = server_state(entry)
    colour = RED if state.startswith("failed") else _STATUS_COLOURS.get(state, "")
    return Cell(state, colour)


def format_servers(result: Any, style: Style = PLAIN) -> str:
    servers = items(result, "servers")
    problems = settings_lines(result, style, entries=False)
    if not servers:
        empty = "No MCP servers are registered. Add one with: meworkctl servers add NAME -- COMMAND"
        return "\n".join([empty, *problems])
    rows = [
        [
            s.get("name"),
            s.get("type"),
            s.get("enabled"),
            _status_cell(s),
            *_cost_cells(s.get("cost")),
            truncate(_command_line(s), DESCRIPTION_WIDTH),
        ]
        for s in servers
    ]
    headers = ["NAME", "TYPE", "ENABLED", "STATUS", "TOOLS", "DEFINITIONS", "COMMAND/URL"]
    lines = [format_table(headers, rows, style)]
    if any(isinstance(s.get("cost"), dict) for s in servers):
        lines.append(
            style.dim(
                "TOOLS, DEFINITIONS: what a turn would offer, from the tools each last "
                "reported (-: not yet)"
            )
        )
    lines += [
        style.red(f"{s.get('name')}: {in_own_words(s['error'])}") for s in servers if s.get("error")
    ]
    return "\n".join(lines + problems)


def _cost_cells(cost: object) -> list[object]:
    """The tools a turn would offer of a server and the size of their definitions."""
    if not isinstance(cost, dict):
        return ["-", "-"]
    return [cost.get("tools"), byte_size(cost.get("bytes"))]


def cost_text(cost: object) -> str | None:
    """``servers show``: the cost in one line, the token count marked as an estimate."""
    if not isinstance(cost, dict):
        return None
    text = (
        f"{plural(int(cost.get('tools') or 0), 'tool')} offered, {byte_size(cost.get('bytes'))} "
        f"of definitions, {token_estimate(cost.get('tokensEstimate'))} (estimate)"
    )
    if cost.get("disabled"):
        text += f"; {cost['disabled']} switched off"
    return text


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
            ("status", server_state(r) if r.get("status") else None),
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
            ("always allow", r.get("alwaysAllowTools") or None),
            ("turn cost", cost_text(r.get("cost"))),
            ("server", tested),
        ],
        style,
    )
    if r.get("error"):
        text += "\n" + style.red(f"error: {in_own_words(r['error'])}")
    last = r.get("lastError")
    if isinstance(last, dict) and server_state(r).startswith("failed"):
        text += "\n" + style.red(f"last error: {in_own_words(last.get('error') or '')}")
    # This entry's own error is shown above; the file's state and other problems follow.
    for line in settings_lines(r, style, entries=False):
        text += "\n" + line
    return text
