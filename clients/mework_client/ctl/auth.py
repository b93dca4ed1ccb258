"""meworkctl's ``servers login`` and ``servers logout``: OAuth for a hosted server.

``login`` asks the daemon to start the login, prints the authorization URL, opens the browser
when there is one (``--no-browser`` skips it; over SSH forward ``--redirect-port``), and waits
for the daemon's ``server.auth`` event saying how it ended.
"""

from __future__ import annotations

from typing import Any

from mework_client.ctl.command import EXIT_ERROR, EXIT_OK, Command, Ctx, arg, pick
from mework_client.ctl.layout import dumps, obj
from mework_client.ctl.servers import DIALING, NAME

__all__ = ["COMMANDS"]

_ENDED = ("authorized", "failed", "none", "required")


def _remember_port(ctx: Ctx, port: int) -> None:
    """Store ``--redirect-port`` in the entry's ``oauth`` (secrets go back masked: kept)."""
    shown = obj(ctx.call("servers.get", {"name": ctx.args.name}))
    oauth = obj(obj(shown.get("server")).get("oauth"))
    if oauth.get("redirectPort") == port:
        return
    patch = {"oauth": {**oauth, "redirectPort": port}}
    ctx.call("servers.update", {"name": ctx.args.name, "patch": patch})


def _open_browser(ctx: Ctx, url: str) -> None:
    import webbrowser  # only here: it is slow to import, and most commands never need it

    if not webbrowser.open(url):
        ctx.note("No browser here: open the URL above on a machine that has one.")


def _run_login(cmd: Command, ctx: Ctx) -> int:
    if ctx.args.redirect_port is not None:
        _remember_port(ctx, ctx.args.redirect_port)
    with ctx.connect(stream=True) as client:
        # Subscribe first so that the outcome cannot fall between the reply and the stream.
        client.call("events.subscribe", {"topics": ["server.auth"]})
        from mework_client.ctl.progress import Progress

        # Discovery and client registration dial the server and its authorization server.
        with Progress(ctx.err, cmd.progress.format_map(vars(ctx.args))):
            started = obj(client.call("servers.login", {"name": ctx.args.name}))
        if started.get("state") == "authorized":
            ctx.emit(started, lambda: f"{ctx.args.name}: logged in")
            return EXIT_OK
        url = str(started.get("authorizationUrl"))
        ctx.note(f"Open this URL to log in to {ctx.args.name}:\n\n  {url}\n")
        if not ctx.args.no_browser:
            _open_browser(ctx, url)
        ctx.note("Waiting for the login to finish in the browser (Ctrl-C to stop waiting)…")
        for _topic, data in client.events(["server.auth"]):
            event = obj(data)
            if event.get("name") == ctx.args.name and event.get("state") in _ENDED:
                return _ended(ctx, event)
    return EXIT_ERROR


def _ended(ctx: Ctx, event: dict[str, Any]) -> int:
    if event.get("state") == "authorized":
        ctx.emit(event, lambda: f"{ctx.args.name}: logged in")
        return EXIT_OK
    if ctx.json:
        ctx.print(dumps(event))
    ctx.fail(f"{ctx.args.name}: the login did not complete: {event.get('error') or event['state']}")
    return EXIT_ERROR


COMMANDS: tuple[Command, ...] = (
    Command(
        "servers login",
        "log in to a server that uses OAuth (opens the browser)",
        "meworkctl servers login tracker --no-browser --redirect-port 8765",
        method="servers.login",
        args=(
            NAME,
            arg("--no-browser", action="store_true", help="print the URL only"),
            arg(
                "--redirect-port",
                type=int,
                metavar="PORT",
                help="loopback port of the redirect (forward it over SSH); kept in the entry",
            ),
        ),
        run=_run_login,
        wait=True,
        progress=DIALING,
        details="Prints the authorization URL and waits until the browser comes back to "
        "http://127.0.0.1:PORT/callback on the daemon's machine. Over SSH: "
        "ssh -L PORT:127.0.0.1:PORT host, then --redirect-port PORT.",
    ),
    Command(
        "servers logout",
        "forget (and revoke) a server's OAuth tokens; its sessions close",
        "meworkctl servers logout tracker",
        method="servers.logout",
        args=(NAME,),
        params=pick(name="name"),
        progress="logging out of {name}",  # revoking the tokens asks the authorization server
        render=lambda r, a, _style: (
            f"{a.name}: logged out" + (" (tokens revoked)" if obj(r).get("revoked") else "")
        ),
    ),
)
