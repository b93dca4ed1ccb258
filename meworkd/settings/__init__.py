"""The settings document: parsed once into a typed snapshot, edited, stored and watched."""

from meworkd.settings.diff import SettingsDiff, diff_settings
from meworkd.settings.expand import UnsetVariable, expand, expand_server
from meworkd.settings.model import (
    CONNECTION_FIELDS,
    DEFAULT_DOCUMENT,
    DEFAULT_TIMEOUT_SECONDS,
    McpOptions,
    Preset,
    ServerConfig,
    ServerInfo,
    Settings,
)
from meworkd.settings.parse import (
    KeyedObject,
    canonical_type,
    check_depth,
    decode_document,
    duplicate_keys,
    keep_duplicates,
    parse_mcp_options,
    parse_preset,
    parse_server,
    parse_settings,
    too_deep_message,
)
from meworkd.settings.secrets import masked_entry, secret_values

__all__ = [
    "CONNECTION_FIELDS",
    "DEFAULT_DOCUMENT",
    "DEFAULT_TIMEOUT_SECONDS",
    "KeyedObject",
    "McpOptions",
    "Preset",
    "ServerConfig",
    "ServerInfo",
    "Settings",
    "SettingsDiff",
    "UnsetVariable",
    "canonical_type",
    "check_depth",
    "decode_document",
    "diff_settings",
    "duplicate_keys",
    "expand",
    "expand_server",
    "keep_duplicates",
    "masked_entry",
    "parse_mcp_options",
    "parse_preset",
    "parse_server",
    "parse_settings",
    "secret_values",
    "too_deep_message",
]
