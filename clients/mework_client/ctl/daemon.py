"""meworkctl's daemon-wide commands: status, shutdown, events and the systemd unit installer.

``mework_client.service`` is imported by the install commands only, so that ``meworkctl``'s
start-up stays on the standard library (tests/test_ctl.py).
"""

from __future__ import annotations

from pathlib import Path

from mework_protocol.topics import TOPICS

from mework_client.ctl.command import EXIT_OK, Command, CtlError, Ctx, arg, show
from mework_client.ctl.layout import PLAIN, Style, dumps, key_values, obj
from mework_client.ctl.settings_state import settings_lines

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (``meworkctl status``)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["COMMANDS", "format_status"]

NEXT_STEPS = "systemctl --user daemon-reload && systemctl --user enable --now meworkd.socket"


def _duration(seconds: float) -> str:
    total = int(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")]
    shown = [f"{n}{unit}" for n, unit in parts if n] or [f"{seconds:.1f}s"]
    return " ".join(shown[:2])


def format_status(result: Any, style: Style = PLAIN) -> str:
    r = obj(result)
    servers = r.get("servers")
    if "serversEnabled" in r:
        servers = f"{servers} ({r['serversEnabled']} enabled)"
    uptime = r.get("uptimeSeconds", r.get("uptime"))
    text = key_values(
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
    if "settings" in r:
        return "\n".join([text, *settings_lines(r, style)])
    if r.get("settingsError"):  # a daemon from before the settings object
        text += "\n" + style.red(f"settings error: {r['settingsError']}")
    for warning in r.get("settingsWarnings") or []:
        text += "\n" + style.red(f"settings warning: {warning}")
    return text


def _run_events(_cmd: Command, ctx: Ctx) -> int:
    topics = ctx.args.topics or None
    with ctx.connect(stream=True) as client:
        client.call("events.subscribe", {"topics": topics} if topics else None)
        ctx.note("Listening for events (Ctrl-C to stop)…")
        for topic, data in client.events(topics):
            ctx.print(dumps({"topic": topic, "data": data}, None))
    return EXIT_OK


def _report_paths(ctx: Ctx, key: str, verb: str, paths: list[Path], steps: list[str]) -> int:
    if ctx.json:
        ctx.print(dumps({key: [str(p) for p in paths]}))
        return EXIT_OK
    ctx.print("\n".join([*(f"{verb} {p}" for p in paths), *steps]))
    return EXIT_OK


def _run_install(_cmd: Command, ctx: Ctx) -> int:
    import os

    from mework_client import service

    chosen = ctx.args.exec
    if chosen is not None and not (os.path.isfile(chosen) and os.access(chosen, os.X_OK)):
        # systemd would only fail at the first connection, far from this typo.
        raise CtlError(f"--exec {chosen}: not an executable file; nothing was written")
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
        steps = ["No meworkd units were installed; nothing to do."]
    return _report_paths(ctx, "removed", "Removed", paths, steps)


# The first rows of ``meworkctl --help``.
_CONTROL: tuple[Command, ...] = (
    Command(
        "status",
        "show the daemon's version, uptime and counts",
        "meworkctl status",
        method="daemon.status",
        render=show(format_status),
    ),
    Command(
        "shutdown",
        "stop the daemon (closing every MCP session)",
        "meworkctl shutdown",
        method="daemon.shutdown",
        render=lambda _r, _a, style: style.green("ok") + "  meworkd is stopping",
    ),
)

# Rows that come after the command groups in ``meworkctl --help`` (the order is the index's).
_SYSTEM: tuple[Command, ...] = (
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
                help=f"{', '.join(sorted(TOPICS))} (default: all)",
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
)

COMMANDS = (*_CONTROL, *_SYSTEM)
