"""A small client for meworkd's control socket (stdlib only, so frontends start fast).

``Client`` is synchronous; ``mework_client.aio.AsyncClient`` is the anyio flavour with concurrent
calls on one connection.
"""

from mework_client.sync import Client, DaemonNotRunning, RpcError, UntrustedSocket

__all__ = ["Client", "DaemonNotRunning", "RpcError", "UntrustedSocket", "__version__"]

__version__ = "0.1.0"
