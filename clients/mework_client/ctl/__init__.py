"""``meworkctl``: the command line of meworkd, a thin frontend over its JSON-RPC control socket.

Every subcommand maps to one control-API method (docs/api.md, "Methods"); the simple ones are
rows of the :data:`COMMANDS` table (path, method, params, human rendering), the few that stream
events or prompt have their own ``run`` function. Each command group has its module (its rows,
formatters and runners); :mod:`.parser` puts them in order and builds argparse's tree. Output is
a plain-text table or ``key: value`` lines by default (coloured only on a terminal without
``NO_COLOR``) and the raw result with ``--json``. Errors go to stderr as
``meworkctl: <message> (<kind>)``.

Exit codes: 0 ok, 1 the daemon (or the tool, or an import entry) reported an error, 2 usage
error, 3 meworkd is not running, 130 interrupted.

Start-up must stay fast, so this package imports only the standard library, ``mework_client``
and the standard-library modules of ``mework_protocol`` (never ``mcp``, ``meworkd``, ``anyio`` or
``msgspec``); ``mework_client.service`` is imported only by the commands that need it.
"""

from mework_client.ctl.approvals import (
    ApprovalWatcher,
    format_approval_request,
    format_approvals,
    format_audit,
)
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
from mework_client.ctl.completion import bash_completion
from mework_client.ctl.conv import format_conversation, format_conversations
from mework_client.ctl.daemon import format_status
from mework_client.ctl.layout import Style, format_table
from mework_client.ctl.main import main, run
from mework_client.ctl.parser import COMMANDS, GROUPS, build_parser, parse_args
from mework_client.ctl.presets import format_presets
from mework_client.ctl.servers import format_import, format_server, format_servers
from mework_client.ctl.servers_import import import_failed as _import_failed
from mework_client.ctl.servers_probe import _test_failed, format_logs, format_test
from mework_client.ctl.settings import format_mcp_options, format_reload
from mework_client.ctl.turn import _call_failed, format_call, format_turn

__all__ = [
    "COMMANDS",
    "EXIT_ERROR",
    "EXIT_NOT_RUNNING",
    "EXIT_OK",
    "EXIT_USAGE",
    "GROUPS",
    "ApprovalWatcher",
    "Command",
    "Ctx",
    "Style",
    # The "failed" checks of three commands, which tests call directly.
    "_call_failed",
    "_import_failed",
    "_test_failed",
    "bash_completion",
    "build_parser",
    "describe_rpc_error",
    "format_approval_request",
    "format_approvals",
    "format_audit",
    "format_call",
    "format_conversation",
    "format_conversations",
    "format_import",
    "format_logs",
    "format_mcp_options",
    "format_presets",
    "format_reload",
    "format_server",
    "format_servers",
    "format_status",
    "format_table",
    "format_test",
    "format_turn",
    "main",
    "not_running_message",
    "parse_args",
    "run",
]
