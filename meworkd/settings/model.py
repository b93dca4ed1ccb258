"""The settings document: typed views of the parts meworkd owns, validation, diffing, expansion.

The document itself stays a plain ``dict`` (so unknown keys survive rewrites, in order); this
module turns it into an immutable :class:`Settings` snapshot, entry by entry, keeping the last good
definition of any server whose entry became invalid.
"""

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
from mework_protocol.levels import ApprovalLevel
from msgspec import Struct

from meworkd.base.errors import InvalidSettings

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

DEFAULT_TIMEOUT_SECONDS = 60

_TYPE_SPELLINGS = {
    "stdio": "stdio",
    "streamable_http": "streamable_http",
    "http": "streamable_http",
    "streamable-http": "streamable_http",
    "streamableHttp": "streamable_http",
}
# Fields whose change needs a new connection; every other field applies to live sessions.
CONNECTION_FIELDS = ("type", "command", "args", "env", "cwd", "url", "headers")


class ServerInfo(Struct, rename="camel", omit_defaults=True, frozen=True):
    name: str | None = None
    version: str | None = None
    tested_at: str | None = None


class ServerConfig(Struct, rename="camel", omit_defaults=True, frozen=True):
    """One validated ``assets.mcpServers`` entry; ``type`` is always canonical here."""

    type: str = "stdio"
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = {}
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = {}
    enabled: bool = True
    description: str | None = None
    timeout_seconds: int | None = None
    long_running: bool = False
    disabled_tools: tuple[str, ...] = ()
    disabled_auto_approve_tools: tuple[str, ...] = ()
    server_info: ServerInfo | None = None

    @property
    def timeout(self) -> float:
        return float(self.timeout_seconds or DEFAULT_TIMEOUT_SECONDS)

    def connection_key(self) -> tuple[object, ...]:
        return (
            self.type,
            self.command,
            self.args,
            tuple(sorted(self.env.items())),
            self.cwd,
            self.url,
            tuple(sorted(self.headers.items())),
        )


class McpOptions(Struct, frozen=True):
    """The ``mcp`` section (snake_case keys, as DESIGN.md writes them)."""

    mandatory_description_prefix: str = "[asks the user every time] "
    session_idle_minutes: float = 30.0
    max_reply_bytes: int = 65536
    approval_timeout_seconds: float = 600.0


class Preset(Struct, rename="camel", omit_defaults=True, frozen=True):
    mcp_servers: tuple[str, ...] = ()
    approval_level: ApprovalLevel | None = None


DEFAULT_DOCUMENT: dict[str, Any] = {
    "assets": {"mcpServers": {}},
    "mcp": {
        "mandatory_description_prefix": "[asks the user every time] ",
        "session_idle_minutes": 30,
        "max_reply_bytes": 65536,
        "approval_timeout_seconds": 600,
    },
    "presets": {},
    "hooks": {"PermissionRequest": []},
}


@dataclass(frozen=True, slots=True)
class Settings:
    """An immutable snapshot of everything meworkd reads from the document."""

    servers: Mapping[str, ServerConfig] = field(default_factory=dict)
    server_errors: Mapping[str, str] = field(default_factory=dict)
    mcp: McpOptions = field(default_factory=McpOptions)
    presets: Mapping[str, Preset] = field(default_factory=dict)
    permission_hooks: object = None
    errors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SettingsDiff:
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    connection_changed: tuple[str, ...] = ()
    policy_changed: tuple[str, ...] = ()
    invalid: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(
            self.added
            or self.removed
            or self.connection_changed
            or self.policy_changed
            or self.invalid
        )

    def as_event(self) -> dict[str, list[str]]:
        return {
            "added": list(self.added),
            "removed": list(self.removed),
            "connectionChanged": list(self.connection_changed),
            "policyChanged": list(self.policy_changed),
            "invalid": list(self.invalid),
        }


# --- decoding -------------------------------------------------------------------------------


def decode_document(data: bytes) -> dict[str, Any]:
    """Parse the settings file; raise :class:`InvalidSettings` saying where the JSON broke."""
    try:
        doc = msgspec.json.decode(data)
    except RecursionError:
        raise InvalidSettings(too_deep_message()) from None
    except msgspec.DecodeError:
        doc = None
        try:
            json.loads(data)
        except json.JSONDecodeError as exc:
            raise InvalidSettings(
                f"the settings file is not valid JSON: {exc.msg} at line {exc.lineno}, "
                f"column {exc.colno}"
            ) from None
        except UnicodeDecodeError:
            raise InvalidSettings("the settings file is not UTF-8 text") from None
        raise InvalidSettings("the settings file is not valid JSON") from None
    if not isinstance(doc, dict):
        raise InvalidSettings("the settings file must hold a JSON object at the top level")
    check_depth(doc)
    return doc


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

    walk(json.loads(data, object_pairs_hook=keep_duplicates), "")
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


MAX_ENTRY_DEPTH = 32  # no server entry needs more; far deeper ones break deep copies and JSON
MAX_DOCUMENT_DEPTH = 64  # the whole document (other apps' keys too) may nest a little deeper


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
    try:
        config = msgspec.convert({**raw, "type": kind}, ServerConfig)
    except msgspec.ValidationError as exc:
        raise InvalidSettings(_field_error(name, exc)) from None
    problems: list[str] = []
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
    if problems:
        raise InvalidSettings("; ".join(problems), problems)
    return config


def parse_mcp_options(raw: object) -> McpOptions:
    if raw is None:
        return McpOptions()
    if not isinstance(raw, dict):
        raise InvalidSettings("mcp: expected an object")
    try:
        options = msgspec.convert(raw, McpOptions, strict=False)
    except msgspec.ValidationError as exc:
        raise InvalidSettings(_field_error("mcp", exc)) from None
    for key in ("session_idle_minutes", "max_reply_bytes", "approval_timeout_seconds"):
        if getattr(options, key) <= 0:
            raise InvalidSettings(f"mcp.{key}: expected a number > 0")
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


def parse_settings(doc: Mapping[str, Any], previous: Settings | None = None) -> Settings:
    """Build a snapshot from a decoded document, entry by entry.

    An invalid server entry keeps ``previous``'s definition (if it had one) and is reported in
    ``server_errors``; an invalid ``mcp``/``presets`` section keeps the previous one.
    """
    previous = previous or Settings()
    errors: list[str] = []
    servers: dict[str, ServerConfig] = {}
    server_errors: dict[str, str] = {}
    raw_servers = _section(doc, "assets", "mcpServers")
    if raw_servers is None:
        raw_servers = {}
    if not isinstance(raw_servers, dict):
        errors.append("assets.mcpServers: expected an object")
        servers = dict(previous.servers)
    else:
        for name, raw in raw_servers.items():
            try:
                servers[name] = parse_server(name, raw)
            except InvalidSettings as exc:
                server_errors[name] = exc.message
                if name in previous.servers:
                    servers[name] = previous.servers[name]
    try:
        mcp = parse_mcp_options(_section(doc, "mcp"))
    except InvalidSettings as exc:
        errors.append(exc.message)
        mcp = previous.mcp
    presets: dict[str, Preset] = {}
    raw_presets = _section(doc, "presets") or {}
    if isinstance(raw_presets, dict):
        for name, raw in raw_presets.items():
            try:
                presets[name] = parse_preset(name, raw)
            except InvalidSettings as exc:
                errors.append(exc.message)
                if name in previous.presets:
                    presets[name] = previous.presets[name]
    else:
        errors.append("presets: expected an object")
        presets = dict(previous.presets)
    return Settings(
        servers=servers,
        server_errors=server_errors,
        mcp=mcp,
        presets=presets,
        permission_hooks=_section(doc, "hooks", "PermissionRequest"),
        errors=tuple(errors),
    )


def diff_settings(old: Settings, new: Settings) -> SettingsDiff:
    added = tuple(n for n in new.servers if n not in old.servers)
    removed = tuple(n for n in old.servers if n not in new.servers)
    connection: list[str] = []
    policy: list[str] = []
    for name, config in new.servers.items():
        before = old.servers.get(name)
        # serverInfo is what Test connection recorded: neither connection nor policy.
        if (
            before is None
            or msgspec.structs.replace(before, server_info=config.server_info) == config
        ):
            continue
        if before.connection_key() != config.connection_key():
            connection.append(name)
        else:
            policy.append(name)
    invalid = tuple(n for n, e in new.server_errors.items() if old.server_errors.get(n) != e)
    return SettingsDiff(added, removed, tuple(connection), tuple(policy), invalid)


# --- ${VAR} expansion (connect time only; never written back) -------------------------------

_VAR = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class UnsetVariable(InvalidSettings):
    """A ``${VAR}`` without a default names a variable that is not set."""

    kind = "unset_variable"

    def __init__(self, variable: str, where: str) -> None:
        super().__init__(f"{where}: environment variable ${{{variable}}} is not set")
        self.variable = variable


def expand(value: str, environ: Mapping[str, str], where: str = "value") -> str:
    """Expand ``${VAR}``, ``${VAR:-default}`` (and Cline's ``${env:VAR}``) from ``environ``."""

    def substitute(match: re.Match[str]) -> str:
        name, default = match[1], match[2]
        found = environ.get(name)
        if found is None or (found == "" and default is not None):
            if default is None:
                raise UnsetVariable(name, where)
            return default
        return found

    return _VAR.sub(substitute, value)


def expand_server(name: str, config: ServerConfig, environ: Mapping[str, str]) -> ServerConfig:
    """A copy of ``config`` with every connection field expanded."""

    def one(value: str | None, key: str) -> str | None:
        return None if value is None else expand(value, environ, f"{name}.{key}")

    return msgspec.structs.replace(
        config,
        command=one(config.command, "command"),
        args=tuple(expand(a, environ, f"{name}.args") for a in config.args),
        env={k: expand(v, environ, f"{name}.env.{k}") for k, v in config.env.items()},
        cwd=one(config.cwd, "cwd"),
        url=one(config.url, "url"),
        headers={k: expand(v, environ, f"{name}.headers.{k}") for k, v in config.headers.items()},
    )


# --- secrets ---------------------------------------------------------------------------------

_MASK = "********"
_HARMLESS = re.compile(r"^\s*(?:(?:Bearer|Basic|Token)\s*)?$", re.IGNORECASE)
_MIN_SECRET_LENGTH = 4  # shorter values would redact ordinary words in logs


def _is_reference_only(value: str) -> bool:
    """``${TOKEN}`` or ``Bearer ${TOKEN}``: shows where a secret comes from, not the secret."""
    return bool(_VAR.search(value)) and bool(_HARMLESS.match(_VAR.sub("", value)))


def masked_entry(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a raw entry with ``env`` and ``headers`` values masked."""
    out = dict(raw)
    for key in ("env", "headers"):
        values = raw.get(key)
        if isinstance(values, dict):
            out[key] = {
                k: v if isinstance(v, str) and _is_reference_only(v) else _MASK
                for k, v in values.items()
            }
    return out


def secret_values(config: ServerConfig, environ: Mapping[str, str]) -> list[str]:
    """Every value that must never reach a log, event or reply: raw and expanded."""
    found: set[str] = set()
    for values in (config.env, config.headers):
        for value in values.values():
            forms = {value}
            try:
                forms.add(expand(value, environ))
            except UnsetVariable:
                pass
            for form in forms:
                found.add(form)
                # A header like "Bearer abc" is a secret in its token part too.
                found.update(part for part in form.split() if not _HARMLESS.match(part))
    return sorted(
        (s for s in found if len(s) >= _MIN_SECRET_LENGTH and not _is_reference_only(s)),
        key=len,
        reverse=True,
    )
