"""Reading a plain command line without argparse: a command's path and ``--json``, nothing else.

``meworkctl status`` and the other commands that take no arguments (``servers list``, ``conv
list``, ...) are most of what people and scripts run, and importing argparse and building its
parsers was most of their start-up (bench B6). A line that is exactly the path of such a
command, with ``--json`` before or after it, gets here the namespace argparse would give it
(tests/test_ctl_startup.py compares the two for every such command); any other line (an option,
``--help``, a typo) is argparse's, and so are its messages.
"""

from __future__ import annotations

from mework_protocol.address import default_socket_path

from mework_client.ctl.command import Args
from mework_client.ctl.index import INDEX, load

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["read_plain"]

_MODULES = {path: module for path, _, module in INDEX}


def read_plain(argv: Sequence[str]) -> Args | None:
    """The parsed line when it is plain (see the module's doc), else None: ask argparse."""
    words = list(argv)
    json = False
    while words and words[0] == "--json":
        del words[0]
        json = True
    while words and words[-1] == "--json":
        del words[-1]
        json = True
    path = " ".join(words)
    module = _MODULES.get(path)
    if module is None or any(w.startswith("-") for w in words):
        return None
    cmd = next(c for c in load(module) if c.path == path)
    # Only rows that argparse would give nothing more than these attributes, and that cannot
    # raise a UsageError (whose message needs the leaf's parser, ``leaf`` here is None).
    if cmd.args or cmd.run is not None or cmd.local:
        return None
    return Args(spec=cmd, leaf=None, socket=default_socket_path(), json=json, timeout=None)
