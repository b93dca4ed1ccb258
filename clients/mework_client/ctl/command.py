"""A meworkctl command: the row type of the command table, one run's context, errors, exit codes.

A simple command is a :class:`Command` row (path, method, params, human rendering) that
:func:`call_method` runs; the few that stream events or prompt bring their own ``run``. The
small builders here (:func:`pick`, :func:`plus`, :func:`show`, :func:`say`) keep the rows of
each command group declarative.

``meworkctl status`` loads this module, so it imports neither ``typing`` nor ``argparse`` (the
names for annotations only under ``TYPE_CHECKING``): start-up time, bench B6.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

from mework_client import Client, RpcError
from mework_client.ctl.layout import Style, dumps, obj

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TextIO

__all__ = [
    "DEFAULT_TIMEOUT",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_RUNNING",
    "EXIT_OK",
    "EXIT_USAGE",
    "PROG",
    "Arg",
    "Args",
    "Command",
    "CtlError",
    "Ctx",
    "Failed",
    "Params",
    "Render",
    "StdoutClosed",
    "UsageError",
    "arg",
    "call_method",
    "describe_rpc_error",
    "not_running_message",
    "pair",
    "pick",
    "plus",
    "read_text",
    "say",
    "show",
]

PROG = "meworkctl"
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_RUNNING, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
DEFAULT_TIMEOUT = 30.0  # seconds per reply, for the quick methods (see Command.wait)

# The parsed command line: argparse fills one (``parse_args(namespace=Args())``), and so does
# the reader of plain command lines (:mod:`.plain`), which does not import argparse.
Args = SimpleNamespace


# --- errors --------------------------------------------------------------------------------------


class UsageError(Exception):
    """A command line that parses but makes no sense (exit code 2, with the command's usage)."""


class CtlError(Exception):
    """A local failure worth one line on stderr (exit code 1), e.g. an unreadable file."""


class StdoutClosed(Exception):
    """stdout went away (``meworkctl ... | head``): stop quietly."""


def not_running_message(path: Path | str) -> str:
    return (
        f"meworkd is not running (no daemon on {path}). "
        "Start it with: meworkd  (or: systemctl --user start meworkd.socket)"
    )


def describe_rpc_error(error: RpcError, method: str | None = None, *, wire: bool = False) -> str:
    """One line for a person, in meworkctl's words; ``wire`` (``--json``): with the stable kind
    and the daemon's own spellings, for scripts."""
    from mework_protocol.codes import METHOD_NOT_FOUND, STANDARD_KINDS  # errors only: start-up

    from mework_client.ctl.words import in_own_words

    kind = error.kind if error.kind != "unknown" else STANDARD_KINDS.get(error.code, "unknown")
    # A server's failure keeps its classified reason (unset_variable, command_not_found, ...).
    reason = obj(error.data).get("reason")
    suffix = f" ({kind}: {reason})" if isinstance(reason, str) else f" ({kind})"
    if error.code == METHOD_NOT_FOUND:
        name = error.data if isinstance(error.data, str) else method
        text = f"this meworkd does not implement {name or 'that method'}"
    else:
        text = str(error) if wire else in_own_words(str(error))
    text += suffix if wire else ""
    details = obj(error.data).get("errors")
    if isinstance(details, list) and details != [error.message]:
        text += "".join(f"\n  {d}" for d in details)
    return text


# --- the invocation context -----------------------------------------------------------------------


class Ctx:
    """One run of a command: its arguments, the streams and how to reach the daemon."""

    __slots__ = ("args", "err", "out")

    def __init__(self, args: Args, out: TextIO | None = None, err: TextIO | None = None) -> None:
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

    def call(self, method: str, params: dict[str, Any] | None = None, *, wait: bool = False) -> Any:
        with self.connect(wait=wait) as client:
            return client.call(method, params)

    def print(self, text: str) -> None:
        try:
            print(text, file=self.out, flush=True)
        except BrokenPipeError:
            raise StdoutClosed from None

    def note(self, text: str) -> None:
        print(text, file=self.err, flush=True)

    def fail(self, message: str) -> None:
        self.note(Style.for_stream(self.err).red(f"{PROG}: {message}"))

    def emit(self, result: Any, human: Callable[[], str]) -> None:
        """The raw result with ``--json``, else the human text (if any)."""
        text = dumps(result) if self.json else human()
        if text:
            self.print(text)


# --- the command row and its builders -------------------------------------------------------------

if TYPE_CHECKING:
    Params = Callable[[Args], dict[str, Any] | None]
    Render = Callable[[Any, Args, Style], str]
    Failed = Callable[[Any], str | None]


class Arg:
    """The arguments of one ``add_argument`` call; ``complete`` names what the shell completion
    offers for its value from the daemon: ``servers``, ``conversations`` or ``presets``."""

    __slots__ = ("complete", "names", "options")

    def __init__(self, names: tuple[str, ...], options: dict[str, Any], complete: str = "") -> None:
        self.names = names
        self.options = options
        self.complete = complete


def arg(*names: str, complete: str = "", **options: Any) -> Arg:
    return Arg(names, options, complete)


def _no_params(_args: Args) -> dict[str, Any] | None:
    return None


def pick(**fields: str) -> Params:
    """Params from arguments: ``rpcName="attribute"``; unset (``None``) ones are left out."""

    def build(args: Args) -> dict[str, Any]:
        values = {key: getattr(args, attr) for key, attr in fields.items()}
        return {key: value for key, value in values.items() if value is not None}

    return build


def plus(params: Params, **constants: Any) -> Params:
    """``params`` plus fixed members."""
    return lambda args: {**(params(args) or {}), **constants}


def show(formatter: Callable[[Any, Style], str]) -> Render:
    return lambda result, _args, style: formatter(result, style)


def say(template: str) -> Render:
    """A fixed confirmation, filled in from the arguments (``{name}``)."""
    return lambda _result, args, style: style.green("ok") + "  " + template.format_map(vars(args))


def _never(_result: Any) -> str | None:
    return None


def _dump(result: Any, _args: Args, _style: Style) -> str:
    return dumps(result)


class Command:
    """One leaf of the command tree; ``run`` defaults to calling ``method`` with ``params``.

    A plain class, not a NamedTuple: ``typing`` is not imported at start-up (bench B6).
    """

    __slots__ = (
        "args",
        "details",
        "example",
        "failed",
        "help",
        "local",
        "method",
        "params",
        "path",
        "progress",
        "render",
        "run",
        "streams",
        "usage",
        "wait",
    )

    def __init__(
        self,
        path: str,
        help: str,
        example: str,
        method: str | None = None,
        args: tuple[Arg, ...] = (),
        params: Params = _no_params,
        render: Render = _dump,
        failed: Failed = _never,
        run: Callable[[Command, Ctx], int] | None = None,
        details: str = "",
        wait: bool = False,  # may take long (dials servers, waits for approvals): no timeout
        streams: bool = False,  # runs until interrupted; Ctrl-C is a normal way to stop it
        local: tuple[str, ...] = (),  # global options this command uses for itself
        usage: str | None = None,
        progress: str = "",  # on a terminal, a spinner with this label while the call runs
    ) -> None:
        self.path = path
        self.help = help
        self.example = example
        self.method = method
        self.args = args
        self.params = params
        self.render = render
        self.failed = failed
        self.run = run
        self.details = details
        self.wait = wait
        self.streams = streams
        self.local = local
        self.usage = usage
        self.progress = progress

    def __repr__(self) -> str:
        return f"Command({self.path!r})"

    def execute(self, ctx: Ctx) -> int:
        return self.run(self, ctx) if self.run is not None else call_method(self, ctx)


def call_method(cmd: Command, ctx: Ctx) -> int:
    assert cmd.method is not None
    params = cmd.params(ctx.args)
    if cmd.progress:
        from mework_client.ctl.progress import Progress

        with Progress(ctx.err, cmd.progress.format_map(vars(ctx.args))):
            result = ctx.call(cmd.method, params, wait=cmd.wait)
    else:
        result = ctx.call(cmd.method, params, wait=cmd.wait)
    ctx.emit(result, lambda: cmd.render(result, ctx.args, ctx.style))
    problem = cmd.failed(result)
    if problem:
        ctx.fail(problem)
        return EXIT_ERROR
    return EXIT_OK


# --- argument readers shared by several groups (``type=``: a ValueError is a usage error) ---------


def pair(text: str) -> tuple[str, str]:
    import argparse  # already loaded: argparse calls this while it parses

    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def read_text(source: str) -> str:
    """A file's text, or stdin's for ``-``."""
    if source == "-":
        return sys.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise CtlError(f"cannot read {source}: {reason}") from None
