"""Server definitions pasted from other MCP hosts, read as meworkd entries (servers.import)."""

from meworkd.settings.dialects.document import ImportDocument, parse_import

__all__ = ["ImportDocument", "parse_import"]
