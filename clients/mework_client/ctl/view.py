"""``meworkctl view CALL_ID``: open a tool call's MCP Apps view in the browser.

A small web host on 127.0.0.1 (:mod:`mework_client.viewhost`) renders the view in a sandboxed
frame behind a sandbox proxy on an origin of its own and relays what the view asks to meworkd
(``apps.*``), so the view's tool calls go through the conversation's approvals. It serves until
interrupted; ``--no-browser`` prints the address instead of opening it.
"""

from __future__ import annotations

from mework_client.ctl.command import EXIT_OK, Command, Ctx, arg

__all__ = ["COMMANDS"]


def _run_view(_cmd: Command, ctx: Ctx) -> int:
    import threading  # here: only this command serves pages (start-up, bench B6)
    import webbrowser

    from mework_client.viewhost.server import ViewHost

    host = ViewHost(ctx.args.socket, ctx.args.call_id, ctx.args.turn)
    host.start()
    try:
        ctx.print(host.url)
        if not ctx.args.no_browser and not webbrowser.open(host.url):
            ctx.note("no browser could be opened: open the address above")
        ctx.note("serving the view; press Ctrl-C to stop")
        threading.Event().wait()  # until interrupted (KeyboardInterrupt: exit code 130)
    finally:
        host.close()
    return EXIT_OK


COMMANDS: tuple[Command, ...] = (
    Command(
        "view",
        "open a tool call's MCP Apps view in the browser (served on 127.0.0.1)",
        "meworkctl view 4d5e6f7a8b9c",
        args=(
            arg("call_id", metavar="CALL_ID", help="the call whose view to open"),
            arg("--turn", metavar="TURN", help="the call's turn (default: its latest call)"),
            arg(
                "--no-browser",
                action="store_true",
                help="print the address and keep serving, without opening a browser",
            ),
        ),
        run=_run_view,
    ),
)
