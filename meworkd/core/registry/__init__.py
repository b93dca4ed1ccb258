"""MCP registries: local copies of their servers, search, and installing from them."""

from meworkd.core.registry.facade import Registries

__all__ = ["Registries"]
