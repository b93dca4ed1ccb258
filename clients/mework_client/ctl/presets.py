"""meworkctl's ``presets`` group: conversation templates (selected servers, approval level)."""

from __future__ import annotations

from typing import Any

from mework_client.ctl.command import EXIT_OK, Args, Command, Ctx, arg, call_method, pick, say, show
from mework_client.ctl.layout import PLAIN, Style, format_table, items
from mework_client.ctl.levels import LEVEL_CHOICES, LEVEL_HELP

__all__ = ["COMMANDS", "format_presets"]

PRESET = arg("name", metavar="NAME", help="the preset's name", complete="presets")


def format_presets(result: Any, style: Style = PLAIN) -> str:
    presets = items(result, "presets")
    if not presets:
        return "No presets."
    rows = [[p.get("name"), p.get("mcpServers"), p.get("approvalLevel")] for p in presets]
    return format_table(["NAME", "SERVERS", "LEVEL"], rows, style)


def _preset_params(args: Args) -> dict[str, Any]:
    preset: dict[str, Any] = {"mcpServers": args.servers or []}
    if args.level:
        preset["approvalLevel"] = args.level
    return {"name": args.name, "preset": preset}


def _run_set(cmd: Command, ctx: Ctx) -> int:
    """Saves the preset, then warns about servers not registered (yet): meworkd keeps them, but
    a conversation created from the preset is refused until they are."""
    status = call_method(cmd, ctx)
    if status == EXIT_OK and not ctx.json and ctx.args.servers:
        known = {s.get("name") for s in items(ctx.call("servers.list"), "servers")}
        unknown = [name for name in ctx.args.servers if name not in known]
        if unknown:
            ctx.note(f"warning: no server named {', '.join(unknown)} is registered (yet)")
    return status


COMMANDS: tuple[Command, ...] = (
    Command(
        "presets list",
        "list presets",
        "meworkctl presets list",
        method="presets.list",
        render=show(format_presets),
    ),
    Command(
        "presets set",
        "create or replace a preset",
        "meworkctl presets set research --server docs --level request_approval",
        method="presets.set",
        args=(
            PRESET,
            arg(
                "--server",
                dest="servers",
                action="append",
                metavar="NAME",
                help="a server it selects (repeatable)",
                complete="servers",
            ),
            arg("--level", help=LEVEL_HELP, **LEVEL_CHOICES),
        ),
        params=_preset_params,
        render=say("preset {name} saved"),
        run=_run_set,
    ),
    Command(
        "presets rm",
        "remove a preset",
        "meworkctl presets rm research",
        method="presets.remove",
        args=(PRESET,),
        params=pick(name="name"),
        render=say("removed preset {name}"),
    ),
)
