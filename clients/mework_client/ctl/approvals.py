"""meworkctl's ``approvals`` group and ``audit``: pending tool calls, answering them, the log."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from mework_protocol.topics import APPROVAL_TOPICS

from mework_client import RpcError, UntrustedSocket
from mework_client.ctl.answers import ALLOW_PROMPT, ask_decision, respond
from mework_client.ctl.command import EXIT_OK, Args, Command, Ctx, arg, pick, say, show
from mework_client.ctl.layout import (
    GREEN,
    PLAIN,
    RED,
    Cell,
    Style,
    dumps,
    format_table,
    items,
    obj,
    truncate,
    when,
)

__all__ = [
    "COMMANDS",
    "ApprovalWatcher",
    "format_approval_request",
    "format_approvals",
    "format_audit",
]

LONG_STRING = 200


def format_approvals(result: Any, style: Style = PLAIN) -> str:
    approvals = items(result, "approvals")
    if not approvals:
        return "No pending approvals."
    rows = [
        [
            a.get("approvalId"),
            a.get("conversationId"),
            a.get("server"),
            a.get("tool"),
            truncate(str(a.get("reason") or ""), 40),
            truncate(dumps(a.get("arguments"), None), 40),
        ]
        for a in approvals
    ]
    return format_table(["ID", "CONV", "SERVER", "TOOL", "REASON", "ARGUMENTS"], rows, style)


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
    a = obj(data)
    head = style.bold(f"{a.get('server')} / {a.get('tool')}") + style.dim(
        f"  (approval {a.get('approvalId')}, conversation {a.get('conversationId')}, "
        f"turn {a.get('turnId')})"
    )
    arguments = dumps(_shorten(a.get("arguments", {})))
    lines = [head]
    if a.get("origin") == "app":
        lines.append("asked by the tool's view (MCP Apps), not by the model")
    if a.get("reason"):
        lines.append(f"reason: {a['reason']}")
    lines += ["arguments:", *("  " + line for line in arguments.splitlines())]
    return "\n".join(lines)


def _first(entry: Mapping[str, Any], *keys: str) -> Any:
    return next((entry[k] for k in keys if entry.get(k) is not None), None)


def _ms(value: object) -> object:
    return round(value) if isinstance(value, float) else value


def format_audit(result: Any, style: Style = PLAIN) -> str:
    entries = items(result, "entries")
    if not entries:
        return "The audit log is empty."
    rows = []
    for e in entries:
        decision = str(_first(e, "decision") or "-")
        rows.append(
            [
                when(_first(e, "time", "at", "timestamp", "createdAt", "decidedAt")),
                e.get("conversationId"),
                e.get("server"),
                e.get("tool") or e.get("name"),  # a server's question: its MCP method
                Cell(decision, GREEN if decision == "allow" else RED if decision == "deny" else ""),
                _first(e, "by", "provenance", "decidedBy", "source"),
                _ms(_first(e, "durationMs", "ms")),
                _first(e, "replyBytes", "bytes", "size"),
                truncate(str(e.get("error") or ("isError" if e.get("isError") else "")), 40),
            ]
        )
    headers = ["TIME", "CONV", "SERVER", "TOOL", "DECISION", "BY", "MS", "BYTES", "ERROR"]
    return format_table(headers, rows, style)


class Caller(Protocol):
    def call(self, method: str, params: dict[str, Any] | None = None) -> Any: ...


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
        return items(self.control.call("approvals.list"), "approvals")

    def on_event(self, topic: str, data: Any) -> bool:
        """Handle one event; ``False`` when stdin ended (stop watching)."""
        if topic == "approval.requested":
            return self.request(obj(data))
        if topic == "approval.resolved":
            self.resolved(obj(data))
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
        answer = self.ask(ALLOW_PROMPT)
        if answer is None:
            self.write("\n(no more input: leaving it unanswered)")
            return False
        typed = ask_decision(answer)
        decision = typed.decision
        try:
            said = respond(self.control.call, approval_id, typed)
        except RpcError as exc:
            if exc.kind != "approval_not_found":
                raise
            self.write(self.style.dim(f"{approval_id}: already answered"))
            return True
        if said is not None:
            self.write(said)
        self.answered.add(approval_id)
        colour = self.style.green if decision == "allow" else self.style.red
        self.write(colour(f"{'allowed' if decision == 'allow' else 'denied'} {approval_id}"))
        return True

    def resolved(self, data: dict[str, Any]) -> None:
        approval_id = str(data.get("approvalId"))
        if approval_id in self.shown and approval_id not in self.answered:
            how = " ".join(str(data[k]) for k in ("decision", "decidedBy") if data.get(k))
            self.write(self.style.dim(f"{approval_id}: answered elsewhere ({how or 'resolved'})"))


RECONNECT_DELAYS = (0.1, 0.2, 0.5, 1.0, 2.0)  # seconds between tries, the last one repeated


class _Watch:
    """What outlives one connection: the watcher (what was shown stays shown), whether up."""

    def __init__(self) -> None:
        self.watcher: ApprovalWatcher | None = None
        self.connected = False


def _watch_once(ctx: Ctx, watch: _Watch) -> bool:
    """One connection's worth of watching; ``False`` when it should stop (end of input)."""
    topics = list(APPROVAL_TOPICS)
    with ctx.connect(stream=True) as stream, ctx.connect() as control:
        # Subscribe before listing, so a request made in between is seen (once: by id).
        stream.call("events.subscribe", {"topics": topics})
        if watch.watcher is None:
            watch.watcher = ApprovalWatcher(control, ctx.print, style=ctx.style)
            ctx.note("Waiting for approval requests (Ctrl-C to stop)…")
        else:
            watch.watcher.control = control
            ctx.note("Reconnected to meworkd; waiting for approval requests…")
        watch.connected = True
        for approval in watch.watcher.pending():
            if not watch.watcher.request(approval):
                return False
        for topic, data in stream.events(topics):
            if not watch.watcher.on_event(topic, data):
                return False
    return True


def _wait_for_daemon(ctx: Ctx) -> None:
    """Back off until meworkd answers on its socket again (a restart, a socket activation)."""
    import time

    tries = 0
    while True:
        try:
            ctx.connect().close()
            return
        except UntrustedSocket:
            raise
        except ConnectionError:
            time.sleep(RECONNECT_DELAYS[min(tries, len(RECONNECT_DELAYS) - 1)])
            tries += 1


def _run_watch(_cmd: Command, ctx: Ctx) -> int:
    watch = _Watch()
    while True:
        try:
            if not _watch_once(ctx, watch):
                return EXIT_OK
        except UntrustedSocket:
            raise
        except ConnectionError:  # DaemonNotRunning, or the connection closed under us
            if watch.watcher is None:
                raise  # never connected: the usual "meworkd is not running" message
            if watch.connected:  # once per outage: a stopping daemon may still accept a try
                ctx.note("meworkd went away; reconnecting when it is back (Ctrl-C to stop)…")
            watch.connected = False
            _wait_for_daemon(ctx)


def _respond_params(decision: str) -> Callable[[Args], dict[str, Any]]:
    def build(args: Args) -> dict[str, Any]:
        params = pick(approvalId="approval", reason="reason")(args) or {}
        if getattr(args, "always", False):  # allow only
            params["scope"] = "always"
        return {**params, "decision": decision}

    return build


def _respond_command(decision: str) -> Command:
    return Command(
        f"approvals {decision}",
        f"{decision} a pending tool call",
        f"meworkctl approvals {decision} 3f2a9c1b7d4e --reason 'looks fine'",
        method="approvals.respond",
        args=(
            arg("approval", metavar="ID", help="the approval id (from approvals list)"),
            arg("--reason", help="a reason, recorded in the audit log"),
            *(
                (
                    arg(
                        "--always",
                        action="store_true",
                        help="allow this tool for good: it joins its server's alwaysAllowTools",
                    ),
                )
                if decision == "allow"
                else ()
            ),
        ),
        params=_respond_params(decision),
        render=say(f"{'allowed' if decision == 'allow' else 'denied'} {{approval}}"),
    )


COMMANDS: tuple[Command, ...] = (
    Command(
        "approvals list",
        "list pending approval requests",
        "meworkctl approvals list",
        method="approvals.list",
        render=show(format_approvals),
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
        "the first answer from any frontend wins. When meworkd restarts it says so and "
        "reconnects. Stops at end of input or Ctrl-C.",
    ),
    Command(
        "audit",
        "show the approval audit log",
        "meworkctl audit --conversation chat-1 --limit 20",
        method="audit.list",
        args=(
            arg(
                "--conversation",
                metavar="ID",
                help="only this conversation",
                complete="conversations",
            ),
            arg("--limit", type=int, metavar="N", help="at most N entries (default 100)"),
        ),
        params=pick(conversationId="conversation", limit="limit"),
        render=show(format_audit),
    ),
)
