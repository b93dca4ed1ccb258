"""``meworkd``: parse the command line, set up logging, run the daemon."""

import argparse
import os
import sys
from pathlib import Path
from typing import NoReturn

import anyio

from meworkd import __version__
from meworkd.app.daemon import Daemon
from meworkd.app.instance import AlreadyRunning, UnsafePath
from meworkd.app.paths import Paths
from meworkd.base import telemetry
from meworkd.base.log import Redactor, configure_logging, get_logger
from meworkd.base.procgroup import become_subreaper

__all__ = ["main"]

EXIT_ALREADY_RUNNING = 75  # EX_TEMPFAIL: systemd's Restart=on-failure will not loop on it fast
EXIT_UNSAFE_PATH = 77  # EX_NOPERM: a directory or lock file others control; a restart cannot help


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="meworkd",
        description="The MCP host daemon of Mework: serves JSON-RPC on a local Unix socket.",
    )
    parser.add_argument(
        "--settings",
        type=Path,
        help="settings document "
        "(default: $MEWORK_SETTINGS or $XDG_CONFIG_HOME/mework/settings.json)",
    )
    parser.add_argument(
        "--socket",
        type=Path,
        help="control socket (default: $MEWORK_SOCKET or $XDG_RUNTIME_DIR/mework/meworkd.sock)",
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        help="conversations, audit log and pid ledger (default: $XDG_STATE_HOME/mework)",
    )
    parser.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"]
    )
    parser.add_argument(
        "--log-format",
        default="json",
        choices=["json", "console"],
        help="json lines for journald (default) or a readable console format",
    )
    parser.add_argument("--version", action="version", version=f"meworkd {__version__}")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    redactor = Redactor()
    configure_logging(args.log_level, args.log_format, redactor)
    paths = Paths.resolve(args.settings, args.socket, args.state_dir)
    # What a server's helper leaves behind (setsid, double forks) becomes ours, not init's, so
    # its session can still stop it. Here, not in Daemon.run: a process that embeds a Daemon
    # (the tests) keeps its own children to itself.
    become_subreaper()
    _trace(telemetry.configure(os.environ))

    async def run() -> None:
        # anyio primitives need a running loop, so the daemon is built inside it.
        await Daemon(paths, redactor=redactor).run()

    try:
        anyio.run(run)
    except AlreadyRunning as exc:
        print(f"meworkd: {exc}", file=sys.stderr)  # noqa: T201 - the one message a person reads
        return EXIT_ALREADY_RUNNING
    except UnsafePath as exc:
        print(f"meworkd: {exc}", file=sys.stderr)  # noqa: T201 - as above
        get_logger().error("daemon.unsafe_path", error=str(exc))
        return EXIT_UNSAFE_PATH
    except KeyboardInterrupt:
        return 0
    except PermissionError as exc:
        get_logger().error("daemon.permission_denied", error=str(exc))
        return 1
    finally:
        telemetry.shutdown()  # the last spans leave, within a bound
    _exit_at_once(0)


def _trace(setup: telemetry.Setup) -> None:
    """Say once whether traces are exported (OpenTelemetry, from the ``OTEL_*`` variables)."""
    if setup.problem is not None:
        get_logger().warning("telemetry.unavailable", problem=setup.problem)
    if setup.exporter is not None:
        get_logger().info("telemetry.traces", exporter=setup.exporter)


def _exit_at_once(code: int) -> NoReturn:
    """Leave without the interpreter's teardown, once the daemon has stopped cleanly.

    By then the daemon has closed everything it owns (sockets, the database, the ledger, its
    children). What is left is freeing the heap object by object (the SDK, pydantic, httpx2):
    0.3-0.5 s of CPU, which on a busy machine was seconds between SIGTERM and exit (issue 14.4
    promises under 5 s in every state). ``tests/test_daemon_stop_cost.py`` measures it.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
