"""The whole control API: every method group of :mod:`meworkd.rpc.methods` bound to the services.

Here rather than in ``methods/__init__``: a package ``__init__`` holds imports only, and the
groups, which import :mod:`meworkd.rpc.services`, must not import their aggregate back.
"""

from meworkd.rpc.connection import Connection
from meworkd.rpc.methods import (
    approvals,
    apps,
    auth,
    calls,
    conversations,
    daemon,
    elicitations,
    events,
    presets,
    probe,
    registry,
    sampling,
    servers,
    settings,
    tasks,
    turns,
)
from meworkd.rpc.services import Services
from meworkd.rpc.table import MethodTable

__all__ = ["Services", "build_table"]

_GROUPS = (
    daemon,
    settings,
    servers,
    registry,
    probe,
    auth,
    presets,
    conversations,
    turns,
    calls,
    tasks,
    approvals,
    elicitations,
    sampling,
    apps,
    events,
)


def build_table(services: Services) -> MethodTable[Connection]:
    """The method table of every group, each handler bound to ``services``."""
    table: MethodTable[Connection] = MethodTable()
    for module in _GROUPS:
        module.group.bind(table, services)
    return table
