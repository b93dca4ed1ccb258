"""The control API: JSON-RPC 2.0, one message per line, over a local Unix socket."""

from meworkd.rpc.connection import Connection
from meworkd.rpc.server import RpcServer

__all__ = ["Connection", "RpcServer"]
