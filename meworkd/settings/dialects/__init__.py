"""Server definitions pasted from other MCP hosts, read as meworkd entries (servers.import)."""

from meworkd.settings.dialects.document import ImportDocument, parse_import
from meworkd.settings.dialects.permissions import ToolRule, resolve_rules

__all__ = ["ImportDocument", "ToolRule", "parse_import", "resolve_rules"]
