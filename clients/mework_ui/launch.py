"""``mework-ui`` / ``meworkctl ui``: refuse without a terminal, else run the app."""

import argparse
import sys
from collections.abc import Sequence

__all__ = ["NO_TERMINAL", "main"]

NO_TERMINAL = (
    "mework-ui needs a terminal (stdin and stderr must be a TTY); "
    "without one use 'meworkctl servers list' or 'meworkctl approvals watch'"
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
    if not has_terminal():
        print(NO_TERMINAL, file=sys.stderr)  # noqa: T201 - the one message, before any UI
        return 2
    from mework_ui.app import MeworkApp  # Textual loads only when there is a terminal

    MeworkApp(socket_path).run()
    return 0
