"""``meworkctl ui``: the terminal UI (mework_ui), imported only when this command runs."""

from __future__ import annotations

from mework_client.ctl.command import Command, Ctx

__all__ = ["COMMANDS"]


def _run_ui(_cmd: Command, ctx: Ctx) -> int:
    # Imported here: Textual and anyio would slow every other meworkctl command's start-up.
    from mework_ui.launch import run

    socket = ctx.args.socket
    return run(None if socket is None else str(socket))


COMMANDS: tuple[Command, ...] = (
    Command(
        "ui",
        "open Settings → MCP in the terminal",
        "meworkctl ui",
        run=_run_ui,
    ),
)
