"""``meworkctl``: the command line of meworkd, a thin frontend over its JSON-RPC control socket.

Every subcommand maps to one control-API method (docs/api.md, "Methods"); the simple ones are
rows of a :class:`Command` table (path, method, params, human rendering), the few that stream
events or prompt have their own ``run`` function. Each command group has its module (its rows,
formatters and runners); :mod:`.index` lists every command without loading its module, and
:mod:`.parser` builds argparse's tree from it. Output is a plain-text table or ``key: value``
lines by default (coloured only on a terminal without ``NO_COLOR``) and the raw result with
``--json``. Errors go to stderr as ``meworkctl: <message>`` in meworkctl's words
(:mod:`.words`); with ``--json`` as the daemon said it, followed by `` (<kind>)``.

Exit codes: 0 ok, 1 the daemon (or the tool, or an import entry) reported an error, 2 usage
error, 3 meworkd is not running, 130 interrupted.

Start-up must stay fast (bench B6), so importing this package loads only what every command
needs: the standard library (not ``typing``), ``mework_client`` and the standard-library modules
of ``mework_protocol`` (never ``mcp``, ``meworkd``, ``anyio`` or ``msgspec``). A command line
loads the module of its own command group and no other; argparse only when the line is more
than a command's path (``mework_client.ctl.plain``); ``mework_client.service`` only for the
commands that need it. The formatters live in their groups' modules
(``mework_client.ctl.servers.format_servers``, ...).
"""

from mework_client.ctl.command import (
    EXIT_ERROR,
    EXIT_NOT_RUNNING,
    EXIT_OK,
    EXIT_USAGE,
    Command,
    Ctx,
    describe_rpc_error,
    not_running_message,
)
from mework_client.ctl.layout import Style, format_table
from mework_client.ctl.main import main, run

__all__ = [
    "EXIT_ERROR",
    "EXIT_NOT_RUNNING",
    "EXIT_OK",
    "EXIT_USAGE",
    "Command",
    "Ctx",
    "Style",
    "describe_rpc_error",
    "format_table",
    "main",
    "not_running_message",
    "run",
]
