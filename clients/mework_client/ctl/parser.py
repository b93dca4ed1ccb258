"""meworkctl's argparse tree, built from the command index with only the groups a line names.

The top level always lists every command (from :mod:`.index`, without loading its module);
only the commands under the first words that occur in argv are built in full, so a command
line loads the modules of its own group and no other (start-up time, bench B6).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from mework_protocol.address import default_socket_path

from mework_client import __version__
from mework_client.ctl.command import (
    DEFAULT_TIMEOUT,
    EXIT_ERROR,
    EXIT_NOT_RUNNING,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    Args,
    Command,
)
from mework_client.ctl.index import GROUPS, INDEX, TOP_WORDS, rows

__all__ = ["GROUPS", "all_commands", "build_parser", "parse_args"]

HELP_WIDTH = 79
EPILOG = f"""\
exit codes: {EXIT_OK} ok, {EXIT_ERROR} error reply (or a failed test, a tool error, a rejected
import entry), {EXIT_USAGE} usage error, {EXIT_NOT_RUNNING} meworkd is not running.
Run 'meworkctl COMMAND --help' for a command's options and an example."""


def all_commands() -> tuple[Command, ...]:
    """Every command's row, in the order of ``meworkctl --help`` (loads every command module)."""
    return tuple(rows())


def _description(help_text: str, example: str, details: str = "") -> str:
    text = help_text[0].upper() + help_text[1:] + "."
    if details:
        import textwrap  # here, not at the top: start-up time (bench B6)

        text += "\n\n" + textwrap.fill(details, HELP_WIDTH)
    return f"{text}\n\nexample:\n  {example}"


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _add_global_options(
    parser: argparse.ArgumentParser, *, top: bool, skip: Sequence[str] = ()
) -> None:
    """The global options; leaves accept them too (``servers list --json``), without defaults."""
    group = parser.add_argument_group("global options")

    def default(value: object) -> object:
        return value if top else argparse.SUPPRESS

    group.add_argument(
        "--socket",
        type=Path,
        metavar="PATH",
        default=default(None),
        help=f"the daemon's control socket (default: {default_socket_path()})",
    )
    group.add_argument(
        "--json",
        action="store_true",
        default=default(False),
        help="print the raw JSON result (for scripts)",
    )
    if "--timeout" not in skip:
        group.add_argument(
            "--timeout",
            type=_positive,
            metavar="SECONDS",
            default=default(None),
            help=f"how long to wait for a reply (default: {DEFAULT_TIMEOUT:g}; no limit for "
            "commands that dial servers or wait for approvals)",
        )


class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        # The width argparse would compute itself, without its `import shutil` (~1.5 ms of
        # start-up: argparse builds a formatter for every add_argument; bench B6).
        super().__init__(prog, max_help_position=30, width=_terminal_columns() - 2)


def _terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``, the same way, without importing shutil."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Retry(Exception):
    """A partial parser (see :func:`parse_args`) met something it cannot judge alone."""


class _PartialParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Retry(message)


# The one-line help of each first word, for the top level and its stubs.
_TOP_HELP = {path: text for path, text, _ in INDEX if " " not in path} | {
    group: text for group, (text, _) in GROUPS.items()
}


def build_parser(
    words: Iterable[str] | None = None,
    *,
    stubs: bool = True,
    parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser,
) -> argparse.ArgumentParser:
    """The command tree: in full, or with only the commands under ``words`` (first words).

    With ``stubs``, the other first words are there too with their one-line help and nothing
    under them: the top-level help and argparse's messages are those of the whole tree, and
    none of those words' modules is loaded.
    """
    parser = parser_class(
        prog=PROG,
        description="Control meworkd, the MCP host daemon of Mework.",
        epilog=EPILOG,
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    _add_global_options(parser, top=True)
    top = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    under: dict[str, list[Command]] = {}
    for cmd in rows(words):
        under.setdefault(cmd.path.split()[0], []).append(cmd)
    for word in TOP_WORDS:
        if word in under:
            commands = {"": top}
            for cmd in under[word]:
                _add_command(commands, cmd)
        elif stubs:
            top.add_parser(word, help=_TOP_HELP[word])
    return parser


def _add_command(commands: dict[str, argparse._SubParsersAction[Any]], cmd: Command) -> None:
    """Add one leaf and the groups on its path not there yet (``commands``: path -> parsers)."""
    *groups, leaf = cmd.path.split()
    parent = ""
    for group in groups:
        path = f"{parent} {group}".strip()
        if path not in commands:
            help_text, example = GROUPS[path]
            sub = commands[parent].add_parser(
                group,
                help=help_text,
                description=_description(help_text, example),
                formatter_class=_Formatter,
            )
            commands[path] = sub.add_subparsers(title="commands", metavar="COMMAND", required=True)
        parent = path
    sub = commands[parent].add_parser(
        leaf,
        help=cmd.help,
        usage=cmd.usage,
        description=_description(cmd.help, cmd.example, cmd.details),
        formatter_class=_Formatter,
    )
    for a in cmd.args:
        sub.add_argument(*a.names, **a.options)
    _add_global_options(sub, top=False, skip=cmd.local)
    sub.set_defaults(spec=cmd, leaf=sub)
    if cmd.path in GROUPS:  # a command that is a group too (``tasks``, ``tasks show``)
        # Not required: without one of its commands the line is the command itself. A
        # command under it sets its own spec and leaf, which replace these.
        commands[cmd.path] = sub.add_subparsers(title="commands", metavar="COMMAND", prog=sub.prog)


_TOP_SET = frozenset(TOP_WORDS)


def _split_trailing_command(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """``servers add NAME [options] -- CMD ARGS...``: everything after ``--`` is the command.

    argparse cannot take options between a positional and a ``--`` list (nor keep a second
    ``--`` inside the command), so the command is cut off before parsing.
    """
    if "--" not in argv:
        return argv, None
    cut = argv.index("--")
    head = argv[:cut]
    if any(head[i : i + 2] == ["servers", "add"] for i in range(len(head) - 1)):
        return head, argv[cut + 1 :]
    return argv, None


ADD_HINT = (
    "hint: a server's command and its arguments go after --, so options like -y reach it: "
    "meworkctl servers add NAME [options] -- npx -y PACKAGE"
)


def _parse_full(head: list[str], words: set[str]) -> Args:
    """The tree with stubs; ``servers add x npx -y pkg`` gets a hint about ``--`` (-y was taken)."""
    parser = build_parser(words)
    args, extras = parser.parse_known_args(head, namespace=Args())
    if extras:
        message = f"unrecognized arguments: {' '.join(extras)}"
        spec: Command | None = getattr(args, "spec", None)
        if spec is not None and spec.path == "servers add":
            args.leaf.print_usage(sys.stderr)
            args.leaf.exit(EXIT_USAGE, f"{args.leaf.prog}: error: {message}\n{ADD_HINT}\n")
        parser.error(message)
    return args


def parse_args(argv: Sequence[str]) -> Args:
    """Parse (``SystemExit`` for ``--help``, ``--version`` and usage errors, as argparse does)."""
    head, command = _split_trailing_command(list(argv))
    # Start-up speed (bench B6): only the commands under the first words that occur in argv are
    # built (and their modules loaded), first without the other words at all; help requests,
    # and anything that partial parser would reject, go to the tree with stubs for the other
    # words, whose messages are those of the whole tree.
    words = {w for w in head if w in _TOP_SET}
    args: Args | None = None
    if words and not {"-h", "--help"} & set(head):
        try:
            partial = build_parser(words, stubs=False, parser_class=_PartialParser)
            args = partial.parse_args(head, namespace=Args())
        except _Retry:
            args = None
    if args is None:
        args = _parse_full(head, words)
    if command is not None:
        args.command = [*args.command, *command]
    if args.socket is None:
        args.socket = default_socket_path()
    return args
