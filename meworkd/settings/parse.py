"""From bytes to a :class:`Settings` snapshot: decoding, repeated keys, depth limits, validation.

Entry by entry: a server, preset or ``mcp`` section that became invalid is reported and keeps its
last good definition, so one typo does not take everything else down with it.
"""

import json
import re
from collections.abc import Mapping
from typing import Any

import msgspec

from meworkd.base.errors import InvalidSettings
from meworkd.settings.hooks import parse_hook_set
from meworkd.settings.jsonc import as_json
from meworkd.settings.limitscheck import limits_problems, sandbox_problems
from meworkd.settings.model import (
    LIMIT_RANGES,
    LOG_LEVELS,
    TOOL_SEARCH_MODES,
    McpOptions,
    Preset,
    ServerConfig,
    Settings,
)
from meworkd.settings.oauthcheck import oauth_problems
from meworkd.settings.spelling import misspelled_keys
from meworkd.settings.toolrules import pattern_problem

__all__ = [
    "MAX_DOCUMENT_DEPTH",
    "MAX_ENTRY_DEPTH",
    "KeyedObject",
    "canonical_type",
    "check_depth",
    "decode_document",
    "duplicate_keys",
    "keep_duplicates",
    "loads_keyed",
    "parse_mcp_options",
    "parse_preset",
    "parse_server",
    "parse_settings",
    "too_deep_message",
]

MAX_ENTRY_DEPTH = 32  # no server entry needs more; far deeper ones break deep copies and JSON
MAX_DOCUMENT_DEPTH = 64  # the whole document (other apps' keys too) may nest a little deeper
MAX_BACKGROUND_AFTER = 86400.0  # a day: beyond that "after" means never, which is null
MAX_TASK_SECONDS = 7 * 86400.0  # mcp.task_max_seconds: a week

_TYPE_SPELLINGS = {
    "stdio": "stdio",
    "streamable_http": "streamable_http",
    "http": "streamable_http",
    "streamable-http": "streamable_http",
    "streamableHttp": "streamable_http",
}


def decode_document(data: bytes) -> dict[str, Any]:
    """Parse the settings file (JSON, or JSONC: comments and trailing commas); raise
    :class:`InvalidSettings` saying where the text broke."""
    try:
        doc = msgspec.json.decode(data)  # the common case, plain JSON: fast and in C
    except RecursionError:
        raise InvalidSettings(too_deep_message()) from None
    except msgspec.DecodeError:
        doc = _decode_jsonc(data)
    if not isinstance(doc, dict):
        raise InvalidSettings("the settings file must hold a JSON object at the top level")
    check_depth(doc)
    return doc


def _decode_jsonc(data: bytes) -> Any:
    try:
        plain = as_json(data.decode("utf-8")).encode("utf-8")
        return msgspec.json.decode(plain)
    except UnicodeDecodeError:
        raise InvalidSettings("the settings file is not UTF-8 text") from None
    except RecursionError:
        raise InvalidSettings(too_deep_message()) from None
    except json.JSONDecodeError as exc:
        raise InvalidSettings(_where_it_broke(exc)) from None
    except msgspec.DecodeError:
        pass
    try:
        json.loads(plain)  # for the line and column msgspec does not give
    except json.JSONDecodeError as exc:
        raise InvalidSettings(_where_it_broke(exc)) from None
    except RecursionError:
        raise InvalidSettings(too_deep_message()) from None
    raise InvalidSettings("the settings file is not valid JSON")


def _where_it_broke(exc: json.JSONDecodeError) -> str:
    return (
        f"the settings file is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
    )


class KeyedObject(dict[str, Any]):
    """A JSON object that remembers which of its keys the text repeated."""

    duplicates: list[str]


def keep_duplicates(pairs: list[tuple[str, Any]]) -> KeyedObject:
    """``object_pairs_hook`` for ``json.loads``: a JSON parser silently keeps a repeated key's
    last value; this also notes the key."""
    obj = KeyedObject()
    obj.duplicates = []
    for key, value in pairs:
        if key in obj and key not in obj.duplicates:
            obj.duplicates.append(key)
        obj[key] = value
    return obj


def loads_keyed(text: str | bytes) -> Any:
    """Parse pasted or stored JSON or JSONC text (comments, trailing commas, see
    :mod:`meworkd.settings.jsonc`), noting repeated keys (see :func:`keep_duplicates`).

    Raises :class:`json.JSONDecodeError` (with the line and column in ``text``) when the text
    does not parse, :class:`UnicodeDecodeError` when bytes are not UTF-8.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return json.loads(as_json(text), object_pairs_hook=keep_duplicates)


def duplicate_keys(data: bytes) -> list[str]:
    """Where the JSON text repeats a key within one object, as messages naming the object.

    For a document :func:`decode_document` accepted (so it parses and is not too deep). A
    hand-edited file with a server defined twice would otherwise lose the first one silently.
    """
    found: list[str] = []

    def walk(value: object, path: str) -> None:
        if isinstance(value, KeyedObject):
            for key in value.duplicates:
                found.append(
                    f"{path or 'the top level'}: {key!r} appears more than once; only the last "
                    "is used (and kept when meworkd next writes the file)"
                )
            for key, item in value.items():
                walk(item, f"{path}.{key}" if path else key)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, f"{path}[{index}]")

    walk(loads_keyed(data), "")
    return found


def too_deep_message() -> str:
    return f"the settings document nests values more than {MAX_DOCUMENT_DEPTH} levels deep"


def check_depth(doc: object) -> None:
    """Refuse a document too deep to copy and rewrite safely (hand-edited or written by RPC)."""
    if _deeper_than(doc, MAX_DOCUMENT_DEPTH):
        raise InvalidSettings(too_deep_message())


_MSGSPEC_PATH = re.compile(r"^(?P<msg>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)


def _field_error(prefix: str, exc: msgspec.ValidationError) -> str:
    """Rewrite msgspec's message as ``prefix.field: expected …`` (no ``$`` paths, no ``null``)."""
    match = _MSGSPEC_PATH.match(str(exc))
    assert match is not None
    msg = match["msg"].replace(" | null", "").replace("`", "")
    path = match["path"] or ""
    return f"{prefix}{path}: {msg[:1].lower()}{msg[1:]}"


def canonical_type(raw: Mapping[str, Any]) -> str:
    """The transport an entry asks for, with aliases resolved; raise on ``sse`` or nonsense."""
    kind = raw.get("type")
    if kind is None:
        return "streamable_http" if raw.get("url") is not None else "stdio"
    if not isinstance(kind, str):
        raise ValueError("type: expected a string (stdio or streamable_http)")
    if kind.lower() == "sse":
        raise ValueError(
            'type: the old HTTP+SSE transport ("sse") is not supported; use "streamable_http" '
            "with the server's Streamable HTTP endpoint (often the same URL ending in /mcp)"
        )
    canonical = _TYPE_SPELLINGS.get(kind)
    if canonical is None:
        raise ValueError(f"type: unknown transport {kind!r} (expected stdio or streamable_http)")
    return canonical


def _deeper_than(value: object, limit: int) -> bool:
    """Whether ``value`` nests containers more than ``limit`` deep (iterative: no recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = (
            node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        )
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


def parse_server(name: str, raw: object) -> ServerConfig:
    """Validate one server entry; the error names the server and the field."""
    if not name or not isinstance(name, str):
        raise InvalidSettings("a server name must be a non-empty string")
    if not isinstance(raw, dict):
        raise InvalidSettings(f"{name}: expected an object")
    if _deeper_than(raw, MAX_ENTRY_DEPTH):
        raise InvalidSettings(f"{name}: nested more than {MAX_ENTRY_DEPTH} levels deep")
    try:
        kind = canonical_type(raw)
    except ValueError as exc:
        raise InvalidSettings(f"{name}.{exc}") from None
    typos = misspelled_keys(name, raw)
    if isinstance(raw.get("limits"), dict):
        typos += misspelled_keys(f"{name}.limits", raw["limits"], LIMIT_RANGES)
    try:
        config = msgspec.convert({**raw, "type": kind}, ServerConfig)
    except msgspec.ValidationError as exc:
        problems = [_field_error(name, exc), *typos]
        raise InvalidSettings("; ".join(problems), problems) from None
    problems = []
    if kind == "stdio":
        if not config.command or not config.command.strip():
            problems.append(f"{name}.command: required for a stdio server")
        if config.url is not None:
            problems.append(f"{name}.url: a stdio server has a command, not a url")
    else:
        if not config.url:
            problems.append(f"{name}.url: required for a streamable_http server")
        elif not re.match(r"^(https?://|\$\{)", config.url):
            problems.append(f"{name}.url: expected an http:// or https:// URL")
        if config.command is not None:
            problems.append(f"{name}.command: a streamable_http server has a url, not a command")
    if config.timeout_seconds is not None and config.timeout_seconds <= 0:
        problems.append(f"{name}.timeoutSeconds: expected int > 0")
    if config.log_level is not None and config.log_level not in LOG_LEVELS:
        problems.append(f"{name}.logLevel: expected one of {', '.join(LOG_LEVELS)}")
    problems += oauth_problems(name, kind, config.oauth)
    problems += limits_problems(name, kind, config.limits)
    problems += sandbox_problems(name, kind, config.sandbox)
    for key, patterns in (
        ("disabledTools", config.disabled_tools),
        ("alwaysAllowTools", config.always_allow_tools),
    ):
        problems += [
            f"{name}.{key}[{i}]: {why}"
            for i, pattern in enumerate(patterns)
            if (why := pattern_problem(pattern)) is not None
        ]
    if problems:
        problems += typos  # after what failed: the typo is the likely cause
        raise InvalidSettings("; ".join(problems), problems)
    return config


def parse_mcp_options(raw: object) -> McpOptions:
    if raw is None:
        return McpOptions()
    if not isinstance(raw, dict):
        raise InvalidSettings("mcp: expected an object")
    if raw.get("tool_search", "auto") not in TOOL_SEARCH_MODES:
        raise InvalidSettings('mcp.tool_search: expected "auto", "on" or "off"')
    try:
        options = msgspec.convert(raw, McpOptions, strict=False)
    except msgspec.ValidationError as exc:
        raise InvalidSettings(_field_error("mcp", exc)) from None
    positive = ("session_idle_minutes", "max_reply_bytes", "approval_timeout_seconds")
    for key in (*positive, "question_timeout_seconds", "max_live_sessions"):
        if getattr(options, key) <= 0:
            raise InvalidSettings(f"mcp.{key}: expected a number > 0")
    threshold = options.tool_search_threshold
    for key in ("tools", "bytes"):
        if getattr(threshold, key) <= 0:
            raise InvalidSettings(f"mcp.tool_search_threshold.{key}: expected an integer > 0")
    after = options.background_after_seconds
    if after is not None and not 0 < after <= MAX_BACKGROUND_AFTER:
        raise InvalidSettings(
            f"mcp.background_after_seconds: expected a number of seconds > 0 and at most "
            f"{MAX_BACKGROUND_AFTER:g}, or null (calls never move to the background)"
        )
    if not 0 < options.task_max_seconds <= MAX_TASK_SECONDS:
        raise InvalidSettings(
            "mcp.task_max_seconds: expected a number of seconds > 0 and at most "
            f"{MAX_TASK_SECONDS:g} (a week)"
        )
    for index, url in enumerate(options.registries):
        if not re.match(r"^https?://[^/?#\s]+(/[^?#\s]*)?$", url):
            raise InvalidSettings(
                f"mcp.registries[{index}]: expected a registry's base http:// or https:// URL"
            )
    return options


def parse_preset(name: str, raw: object) -> Preset:
    if not isinstance(raw, dict):
        raise InvalidSettings(f"presets.{name}: expected an object")
    try:
        return msgspec.convert(raw, Preset)
    except msgspec.ValidationError as exc:
        raise InvalidSettings(_field_error(f"presets.{name}", exc)) from None


def _section(doc: Mapping[str, Any], *keys: str) -> object:
    node: object = doc
    for key in keys:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _parse_servers(
    raw_servers: object, previous: Settings, errors: list[str]
) -> tuple[dict[str, ServerConfig], dict[str, str]]:
    if raw_servers is None:
        return {}, {}
    if not isinstance(raw_servers, dict):
        errors.append("assets.mcpServers: expected an object")
        return dict(previous.servers), {}
    servers: dict[str, ServerConfig] = {}
    server_errors: dict[str, str] = {}
    for name, raw in raw_servers.items():
        try:
            servers[name] = parse_server(name, raw)
        except InvalidSettings as exc:
            server_errors[name] = exc.message
            if name in previous.servers:
                servers[name] = previous.servers[name]
    return servers, server_errors


def _parse_presets(raw_presets: object, previous: Settings, errors: list[str]) -> dict[str, Preset]:
    if not isinstance(raw_presets, dict):
        errors.append("presets: expected an object")
        return dict(previous.presets)
    presets: dict[str, Preset] = {}
    for name, raw in raw_presets.items():
        try:
            presets[name] = parse_preset(name, raw)
        except InvalidSettings as exc:
            errors.append(exc.message)
            if name in previous.presets:
                presets[name] = previous.presets[name]
    return presets


def parse_settings(doc: Mapping[str, Any], previous: Settings | None = None) -> Settings:
    """Build a snapshot from a decoded document, entry by entry.

    An invalid server entry keeps ``previous``'s definition (if it had one) and is reported in
    ``server_errors``; an invalid ``mcp``/``presets`` section keeps the previous one. Hooks fail
    closed instead: a malformed one is left out and reported, never replaced by an older one.
    """
    previous = previous or Settings()
    errors: list[str] = []
    servers, server_errors = _parse_servers(_section(doc, "assets", "mcpServers"), previous, errors)
    try:
        mcp = parse_mcp_options(_section(doc, "mcp"))
    except InvalidSettings as exc:
        errors.append(exc.message)
        mcp = previous.mcp
    presets = _parse_presets(_section(doc, "presets") or {}, previous, errors)
    hooks = parse_hook_set(_section(doc, "hooks"))
    return Settings(
        servers=servers,
        server_errors=server_errors,
        mcp=mcp,
        presets=presets,
        hooks=hooks,
        errors=(*errors, *hooks.errors),
    )
