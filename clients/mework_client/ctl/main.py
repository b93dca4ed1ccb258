"""meworkctl's entry point: parse argv, run the command, turn every failure into an exit code.

A plain line (a command without arguments, see :mod:`.plain`) is read without argparse;
argparse and the command tree are imported for every other line (start-up time, bench B6).
"""

from __future__ import annotations

import os
import sys

from mework_client import DaemonNotRunning, RpcError, UntrustedSocket
from mework_client.ctl.command import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_NOT_RUNNING,
    EXIT_OK,
    EXIT_USAGE,
    Args,
    Command,
    CtlError,
    Ctx,
    StdoutClosed,
    UsageError,
    describe_rpc_error,
    not_running_message,
)
from mework_client.ctl.plain import read_plain

__all__ = ["main", "run"]


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _execute(cmd: Command, ctx: Ctx) -> int:
    """Run ``cmd``; SIGTERM (``timeout``, ``kill``) and SIGHUP (a closed terminal) stop one that
    waits as Ctrl-C does: a call is cancelled with its approval, not left for nobody."""
    if not (cmd.wait or cmd.streams):
        return cmd.execute(ctx)
    import signal  # here, not at the top: only commands that wait need it (bench B6)

    stops = (signal.SIGTERM, signal.SIGHUP)
    before = {number: signal.signal(number, _interrupt) for number in stops}
    try:
        return cmd.execute(ctx)
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)


def run(args: Args, ctx: Ctx) -> int:
    """Run the parsed command; every failure becomes a message and an exit code."""
    cmd: Command = args.spec
    try:
        return _execute(cmd, ctx)
    except UsageError as exc:
        args.leaf.print_usage(ctx.err)
        ctx.note(f"{args.leaf.prog}: error: {exc}")
        return EXIT_USAGE
    except UntrustedSocket as exc:  # not "start it": starting a daemon cannot fix this
        ctx.fail(str(exc))
        return EXIT_ERROR
    except DaemonNotRunning as exc:
        ctx.fail(not_running_message(exc.path))
        return EXIT_NOT_RUNNING
    except RpcError as exc:
        ctx.fail(describe_rpc_error(exc, cmd.method, wire=ctx.json))
        return EXIT_ERROR
    except TimeoutError:
        ctx.fail(f"no reply from meworkd within {ctx.timeout():g} s (wait longer with --timeout)")
        return EXIT_ERROR
    except CtlError as exc:
        ctx.fail(str(exc))
        return EXIT_ERROR
    except StdoutClosed:
        _silence_stdout()
        return EXIT_OK
    except KeyboardInterrupt:
        return EXIT_OK if cmd.streams else EXIT_INTERRUPTED
    except ConnectionError as exc:
        ctx.fail(f"lost the connection to meworkd: {exc}")
        return EXIT_ERROR
    except OSError as exc:
        ctx.fail(f"cannot talk to meworkd on {args.socket}: {exc.strerror or exc}")
        return EXIT_ERROR


def _silence_stdout() -> None:
    """After EPIPE, make the interpreter's final flush of stdout a no-op."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    line = sys.argv[1:] if argv is None else argv
    args = read_plain(line)
    if args is None:
        from mework_client.ctl.parser import parse_args

        try:
            args = parse_args(line)
        except SystemExit as exc:  # --help, --version, usage errors
            return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    return run(args, Ctx(args))
