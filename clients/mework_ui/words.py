"""Status words: every state a symbol plus a word, so no meaning rests on colour alone."""

from typing import Any

from mework_protocol.wording import (
    OPEN_TASK_STATES,
    byte_size,
    task_state,
    token_estimate,
    unreadable_settings,
)

from mework_ui.link import is_down
from mework_ui.model import Check, failure_kind

__all__ = [
    "call_card",
    "check_lines",
    "check_summary",
    "cost_text",
    "failure_text",
    "server_status",
    "settings_banner",
    "test_summary",
    "time_left_text",
]

MARKS = {True: "✓", False: "✘", None: "?"}

_LIVE = {
    "connected": "● connected",
    "enabled": "○ idle",
    "closed": "○ idle",
    "disabled": "– disabled",
    "invalid": "! invalid",
    "unknown": "? unknown",  # while meworkd is away (the top bar says so)
}

# OAuth states (servers.list `auth.state`) that stop a server from connecting until a login.
LOGIN_STATES = {"required": "needs login", "pending": "login pending", "failed": "login failed"}

# The README's hint per failure reason: what a person can do about it.
HINTS = {
    "command_not_found": "the daemon's PATH is short under systemd: use an absolute command",
    "exited": "the server stopped during start-up: see its Logs",
    "timeout": "a first npx run downloads packages: raise timeoutSeconds",
    "http_status": "check the URL, the headers and their ${VAR}s",
    "unset_variable": "set it with: systemctl --user set-environment NAME=value",
    "protocol_error": "the server wrote something other than MCP on stdout",
    "auth_required": "log in to this server: Enter, then ctrl+l",
    "auth_unavailable": "its authorization server is failing; the login is kept: try again later",
    "connect_failed": "nothing answers at the URL: is the server running?",
    "resource_limit": "it died on one of its limits: raise that one in the entry's limits",
}


def server_status(entry: dict[str, Any], failure: dict[str, Any] | None) -> str:
    """The Status cell: the daemon's word, a failure the UI saw, or a needed login."""
    status = str(entry.get("status", ""))
    if status in ("disabled", "invalid"):
        return _LIVE[status]
    auth = entry.get("auth")
    if isinstance(auth, dict) and auth.get("state") in LOGIN_STATES:
        return f"⚷ {LOGIN_STATES[auth['state']]}"
    if failure is not None and status != "connected":
        return f"✘ failed: {failure_kind(failure)}"
    word = _LIVE.get(status, status)
    sessions = entry.get("sessions") or 0
    return f"{word} ({sessions})" if status == "connected" and sessions else word


def empty_note(online: bool, bar: str) -> str:
    """What an empty server list means: none registered, or none known while meworkd is away."""
    if online:
        return "No servers yet: press a to add one or import JSON."
    if is_down(bar):
        return (
            "meworkd is not running, so its servers are not known here. Start it with: "
            "meworkd  (or: systemctl --user start meworkd.socket); this screen connects by itself."
        )
    return "Waiting for meworkd…"


def failure_text(failure: dict[str, Any]) -> str:
    """A failure in full: the reason, the daemon's sentence, the hint and the stderr tail."""
    reason = failure_kind(failure)
    lines = [f"✘ {reason}: {failure.get('error') or ''}".rstrip(": ")]
    if reason in HINTS:
        lines.append(f"  hint: {HINTS[reason]}")
    lines += [f"  stderr: {line}" for line in failure.get("stderrTail") or []]
    return "\n".join(lines)


def test_summary(result: dict[str, Any]) -> str:
    """One line for a successful servers.test: who answered and what it offers."""
    info = result.get("serverInfo") or {}
    tools = len(result.get("tools") or [])
    ms = float(result.get("durationMs") or 0)
    return (
        f"✓ {info.get('name', '?')} {info.get('version', '')} · "
        f"protocol {result.get('protocolVersion') or '?'} · {tools} tools · {ms:.0f} ms"
    )


def settings_banner(state: dict[str, Any]) -> str:
    """The settings file's own state: unreadable, invalid parts, or unsafe permissions."""
    lines: list[str] = []
    if state.get("unreadable"):
        lines.append(f"! {unreadable_settings(state['unreadable'])}")
    lines += [f"! settings: {error}" for error in state.get("errors") or []]
    lines += [f"! unsafe: {warning}" for warning in state.get("warnings") or []]
    return "\n".join(lines)


def time_left_text(seconds: float | None) -> str:
    """How long a question still waits: ``⌛ 9:42 left to answer``."""
    if seconds is None:
        return ""
    minutes, rest = divmod(int(seconds), 60)
    if seconds <= 0:
        return "⌛ time is up: meworkd gives up waiting"
    return f"⌛ {minutes}:{rest:02d} left to answer"


def check_lines(checks: list[Check]) -> list[str]:
    """One line per check with where it was read, its details indented below."""
    lines = []
    for check in checks:
        lines.append(f"{MARKS[check.ok]} {check.text:44} {check.source}")
        lines += [f"    {line}" for line in check.detail if line]
    return lines


def check_summary(name: str, checks: list[Check]) -> list[str]:
    """A server in one line when nothing stops it, else one line per check not met."""
    failed = [c for c in checks if c.ok is False]
    if not failed:
        return [f"✓ {name}: valid, enabled, selected, no failure seen"]
    return [f"✘ {name}: {c.text}" for c in failed]


def _size(n: float) -> str:
    return f"{n:.0f} B" if n < 1024 else f"{n / 1024:.1f} KB"


def _duration(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def call_card(card: dict[str, Any], waiting: bool, task: dict[str, Any] | None = None) -> str:
    """A tool call in one line: server · tool · what was decided and by whom · time · size; a
    call waiting for its MCP task (``task``) says how the task is doing."""
    head = f"{card.get('server') or '?'} · {card.get('tool') or card.get('name') or '?'}"
    if card.get("origin") == "app":
        head += " (asked by its view)"
    decision, by = card.get("decision"), card.get("decidedBy")
    if decision == "requested":
        if waiting:
            return f"⏳ {head} · waiting for approval: y allow · c conversation · n deny"
        if task is not None and task.get("status") in OPEN_TASK_STATES:
            asks = " · F4 to answer" if task.get("status") == "input_required" else ""
            said = f": {task['message']}" if task.get("message") else ""
            return f"⏵ {head} · task {task_state(task)}{said}{asks} · t tasks"
        return f"… {head} · running"
    if decision != "allow":
        verb = "denied" if decision == "deny" else decision
        return f"✘ {head} · {verb} by {by}: {card.get('reason') or ''}".rstrip(": ")
    took = f"{_duration(float(card.get('durationMs') or 0))} · {_size(card.get('replyBytes') or 0)}"
    if card.get("isError"):
        return f"✘ {head} · error · allowed by {by} · {took}"
    return f"✓ {head} · allowed by {by} · {took}"


def cost_text(cost: Any) -> str:
    """What the server's tools cost a turn (servers.list ``cost``), or nothing until known."""
    if not isinstance(cost, dict):
        return ""
    tools = cost.get("tools")
    return (
        f"Turn cost: {tools} tool{'s' * (tools != 1)} offered, {byte_size(cost.get('bytes'))} "
        f"of definitions, {token_estimate(cost.get('tokensEstimate'))} (estimate)"
    )
