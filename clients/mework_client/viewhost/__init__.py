"""The local web host of ``meworkctl view``: one MCP Apps view, served on 127.0.0.1."""

from mework_client.viewhost.csp import view_csp
from mework_client.viewhost.server import ViewHost

__all__ = ["ViewHost", "view_csp"]
