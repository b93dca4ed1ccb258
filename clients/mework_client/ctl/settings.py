"""meworkctl's ``settings`` group: show, reload and set options of the settings document."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from mework_client.ctl.command import Command, arg, pair, show
from mework_client.ctl.layout import PLAIN, Style, dumps, key_values, obj

__all__ = ["COMMANDS", "format_mcp_options", "format_reload"]


def format_mcp_options(result: Any, style: Style = PLAIN) -> str:
    options = sorted(obj(result, "mcp").items())
    # Strings are quoted: the description prefix usually ends with a space.
    return key_values([(k, dumps(v) if isinstance(v, str) else v) for k, v in options], style)


def format_reload(result: Any, style: Style = PLAIN) -> str:
    r = obj(result)
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


def _reload_failed(result: Any) -> str | None:
    r = obj(result)
    return "the settings file was not applied" if r.get("applied") is False else None


def _number(text: str) -> int | float:
    value = float(text)
    return (
        int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value
    )


def _boolean(text: str) -> bool:
    answer = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}
    try:
        return answer[text.strip().lower()]
    except KeyError:
        raise ValueError(text) from None


def _urls(text: str) -> list[str]:
    return [url.strip() for url in text.split(",") if url.strip()]


# Every option settings.setMcpOptions takes, in the order of docs/api.md.
MCP_OPTIONS: dict[str, Callable[[str], object]] = {
    "mandatory_description_prefix": str,
    "session_idle_minutes": _number,
    "max_reply_bytes": int,
    "approval_timeout_seconds": _number,
    "question_timeout_seconds": _number,
    "sampling": _boolean,
    "apps": _boolean,
    "max_live_sessions": int,
    "registries": _urls,  # comma-separated registry base URLs
}


def _mcp_option(text: str) -> tuple[str, object]:
    key, value = pair(text)
    if key not in MCP_OPTIONS:
        raise argparse.ArgumentTypeError(
            f"unknown option {key!r} (one of: {', '.join(MCP_OPTIONS)})"
        )
    try:
        return key, MCP_OPTIONS[key](value)
    except ValueError:
        wanted = "true or false" if MCP_OPTIONS[key] is _boolean else "a number"
        raise argparse.ArgumentTypeError(f"{key} needs {wanted}, got {value!r}") from None


COMMANDS: tuple[Command, ...] = (
    Command(
        "settings show",
        "print the settings document (secrets masked)",
        "meworkctl settings show > settings-backup.json",
        method="settings.get",
        render=lambda result, _a, _s: dumps(obj(result).get("document", result)),
    ),
    Command(
        "settings reload",
        "re-read the settings file now",
        "meworkctl settings reload",
        method="settings.reload",
        render=show(format_reload),
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
        render=show(format_mcp_options),
    ),
)
