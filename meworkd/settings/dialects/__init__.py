"""Server definitions pasted from other MCP hosts, read as meworkd entries (servers.import),
and a registry's server.json made into one (servers.install)."""

from meworkd.settings.dialects.document import ImportDocument, parse_import
from meworkd.settings.dialects.permissions import ToolRule, resolve_rules
from meworkd.settings.dialects.serverjson import (
    RUNTIMES,
    Planned,
    choices_of,
    entry_name,
    plan_install,
)

__all__ = [
    "RUNTIMES",
    "ImportDocument",
    "Planned",
    "ToolRule",
    "choices_of",
    "entry_name",
    "parse_import",
    "plan_install",
    "resolve_rules",
]
