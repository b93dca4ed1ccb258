"""The RPC methods, one module per group, each a thin adapter from params to core calls.

Handlers are module functions taking ``(services, connection, params)``; :func:`build_table`
binds every group to the daemon's :class:`~meworkd.rpc.services.Services`. Groups do not import
each other. Method names, params and results are the contract of docs/api.md.
"""

from meworkd.rpc.connection import Connection
from meworkd.rpc.methods import (
    approvals,
    conversations,
    daemon,
    events,
    presets,
    probe,
    servers,
    settings,
    turns,
)
from meworkd.rpc.services import Live, Services
from meworkd.rpc.table import MethodTable

__all__ = ["Live", "Services", "build_table"]

_GROUPS = (daemon, settings, servers, probe, presets, conversations, turns, approvals, events)


def build_table(services: Services) -> MethodTable[Connection]:
    """The method table of every group, each handler bound to ``services``."""
    table: MethodTable[Connection] = MethodTable()
    for module in _GROUPS:
        module.group.bind(table, services)
    return table
