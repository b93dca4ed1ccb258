"""``mework-ui`` / ``meworkctl ui``: refuse without Textual or a terminal, else run the app."""

import argparse
import sys
from collections.abc import Sequence

__all__ = ["NO_TERMINAL", "NO_TEXTUAL", "main"]

NO_TERMINAL = (
    "mework-ui needs a terminal (stdin and stderr must be a TTY); "
    "without one use 'meworkctl servers list' or 'meworkctl approvals watch'"
)

NO_TEXTUAL = (
    "mework-ui needs Textual, which is not installed beside it; install it with: "
    "{python} -m pip install 'textual>=8.2.8,<9'"
)


def has_terminal() -> bool:
    # Textual draws on stderr and reads stdin; without both it would write escape codes forever.
    return sys.stdin.isatty() and sys.stderr.isatty()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="mework-ui", description="Settings → MCP of meworkd, in the terminal."
    )
    parser.add_argument("--socket", help="meworkd's socket (default: the per-user one)")
    args = parser.parse_args(argv)
    return run(args.socket)


def run(socket_path: str | None) -> int:
    # Textual loads only when the UI runs (meworkctl's other commands start without it); an
    # install without it (Textual is a dependency, but a hand-made environment may lack it)
    # gets one line saying what to install, not a traceback.
    try:
        from mework_ui.app import MeworkApp
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "textual":
            raise
        print(NO_TEXTUAL.format(python=sys.executable), file=sys.stderr)  # noqa: T201
        return 1
    if not has_terminal():
        print(NO_TERMINAL, file=sys.stderr)  # noqa: T201 - the one message, before any UI
        return 2
    MeworkApp(socket_path).run()
    return 0
