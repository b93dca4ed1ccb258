"""The settings snapshot: typed, immutable views of the parts of the document meworkd owns.

The document itself stays a plain ``dict`` (so unknown keys survive rewrites, in order);
:mod:`meworkd.settings.parse` turns it into a :class:`Settings`, entry by entry.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mework_protocol.levels import ApprovalLevel
from msgspec import Struct
from msgspec import field as struct_field

from meworkd.settings.hooks import HookSet
from meworkd.settings.toolrules import first_match

__all__ = [
    "CONNECTION_FIELDS",
    "DEFAULT_DOCUMENT",
    "DEFAULT_MAX_LIVE_SESSIONS",
    "DEFAULT_TIMEOUT_SECONDS",
    "LIMIT_RANGES",
    "LOG_LEVELS",
    "MACHINE_GRANTS",
    "OAUTH_GRANTS",
    "OFFICIAL_REGISTRY",
    "TOKEN_AUTH_METHODS",
    "TOOL_SEARCH_MODES",
    "InstalledFrom",
    "Limits",
    "McpOptions",
    "OAuthConfig",
    "Preset",
    "Sandbox",
    "SandboxFilesystem",
    "ServerConfig",
    "ServerInfo",
    "Settings",
    "ToolSearchThreshold",
]

DEFAULT_TIMEOUT_SECONDS = 60
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

# Fields whose change needs a new connection; every other field applies to live sessions.
CONNECTION_FIELDS = (
    "type",
    "command",
    "args",
    "env",
    "envFile",
    "cwd",
    "url",
    "headers",
    "oauth",
    "limits",
    "sandbox",
)
# The ``grant`` values an ``oauth`` object may name.
# The grants with no person at a browser: a token is simply asked for when needed.
MACHINE_GRANTS = ("client_credentials", "jwt_bearer", "identity_assertion")
OAUTH_GRANTS = ("authorization_code", *MACHINE_GRANTS)
# How a pre-registered client authenticates at the token endpoint (RFC 7591 names).
TOKEN_AUTH_METHODS = ("client_secret_basic", "client_secret_post", "none")
TOOL_SEARCH_MODES = ("auto", "on", "off")
DEFAULT_MAX_LIVE_SESSIONS = 64  # bench/README.md "Fifty conversations": ~40 MB per Node server
# The official MCP registry (read API v0.1); mcp.registries may name subregistries instead.
OFFICIAL_REGISTRY = "https://registry.modelcontextprotocol.io"


class ServerInfo(Struct, rename="camel", omit_defaults=True, frozen=True):
    name: str | None = None
    version: str | None = None
    tested_at: str | None = None


# Each key of a stdio entry's ``limits``: the whole numbers it may be (docs/api.md "Limits of
# a server's process" says what each becomes).
LIMIT_RANGES = {
    "memoryMiB": (16, 4 * 1024 * 1024),
    "processes": (1, 4 * 1024 * 1024),
    "openFiles": (16, 1024 * 1024),
    "cpuSeconds": (1, 365 * 24 * 3600),
}


class Limits(Struct, omit_defaults=True, frozen=True, forbid_unknown_fields=True):
    """A stdio entry's ``limits``: what its server's process may use (each optional)."""

    memory_mib: int | None = struct_field(default=None, name="memoryMiB")
    processes: int | None = None
    open_files: int | None = struct_field(default=None, name="openFiles")
    cpu_seconds: int | None = struct_field(default=None, name="cpuSeconds")

    def items(self) -> list[tuple[str, int]]:
        """``(key as the file spells it, value)`` of each limit that is set."""
        values = (self.memory_mib, self.processes, self.open_files, self.cpu_seconds)
        return [(k, v) for k, v in zip(LIMIT_RANGES, values, strict=True) if v is not None]


class SandboxFilesystem(Struct, omit_defaults=True, frozen=True, forbid_unknown_fields=True):
    """What a sandboxed server sees of the files: paths (``~`` and ``${VAR}`` allowed)."""

    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()


class Sandbox(Struct, omit_defaults=True, frozen=True, forbid_unknown_fields=True):
    """A stdio entry's ``sandbox``: the server runs in bubblewrap (meworkd.mcp.sandbox)."""

    enabled: bool = True
    filesystem: SandboxFilesystem = SandboxFilesystem()
    network: bool = False


class InstalledFrom(Struct, rename="camel", omit_defaults=True, frozen=True):
    """Where servers.install took an entry from: a registry's server (name and version) or a
    bundle (its unpacked folder in the state directory, removed with the entry)."""

    registry: str | None = None
    name: str | None = None
    version: str | None = None
    bundle: str | None = None


class OAuthConfig(
    Struct, rename="camel", omit_defaults=True, frozen=True, forbid_unknown_fields=True
):
    """An HTTP entry's ``oauth`` object: how meworkd logs in to that server (every field optional).

    ``client_secret``, ``private_key``, ``assertion``, ``id_token`` and ``idp_client_secret``
    may hold ``${VAR}`` and are secrets (settings.secrets); so may the two file paths.
    """

    client_id: str | None = None
    client_secret: str | None = None
    client_metadata_url: str | None = None
    scopes: tuple[str, ...] = ()
    redirect_port: int | None = None
    grant: str = "authorization_code"
    private_key: str | None = None
    signing_algorithm: str | None = None
    # None: chosen from the authorization server's metadata (client_secret_basic by default).
    token_endpoint_auth_method: str | None = None
    # grant "jwt_bearer" (workload identity): the platform's JWT for this workload.
    assertion: str | None = None
    assertion_file: str | None = None
    # grant "identity_assertion" (enterprise-managed, SEP-990): the identity provider where
    # the user's ID token is exchanged for an ID-JAG.
    idp_token_endpoint: str | None = None
    idp_client_id: str | None = None
    idp_client_secret: str | None = None
    id_token: str | None = None
    id_token_file: str | None = None


class ServerConfig(Struct, rename="camel", omit_defaults=True, frozen=True):
    """One validated ``assets.mcpServers`` entry; ``type`` is always canonical here."""

    type: str = "stdio"
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = {}
    # A dotenv file (VS Code's envFile) read when a stdio server starts; ``env`` wins over it.
    env_file: str | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = {}
    enabled: bool = True
    description: str | None = None
    timeout_seconds: int | None = None
    long_running: bool = False
    # Tool names or globs (settings.toolrules): never offered / run without asking.
    disabled_tools: tuple[str, ...] = ()
    always_allow_tools: tuple[str, ...] = ()
    disabled_auto_approve_tools: tuple[str, ...] = ()
    server_info: ServerInfo | None = None
    # logging/setLevel sent when a session opens (a change applies to new sessions).
    log_level: str | None = None
    # None: log in when a 401 asks for it; False: never; an object: how to log in.
    oauth: OAuthConfig | bool | None = None
    # "shared": one session serves every conversation (stateless servers, by their author's word).
    session_scope: Literal["conversation", "shared"] = "conversation"
    # stdio: what the server's process may use (rlimits, meworkd.mcp.limits).
    limits: Limits | None = None
    # stdio: run the server in a bubblewrap sandbox (meworkd.mcp.sandbox).
    sandbox: Sandbox | None = None
    installed_from: InstalledFrom | None = None
    # Its tools are offered at every turn, never deferred behind tool search.
    always_load: bool = False

    @property
    def sandboxed(self) -> bool:
        return self.sandbox is not None and self.sandbox.enabled

    @property
    def timeout(self) -> float:
        return float(self.timeout_seconds or DEFAULT_TIMEOUT_SECONDS)

    def disables(self, tool: str) -> bool:
        """Whether ``disabledTools`` names ``tool`` or a pattern matching it."""
        return first_match(self.disabled_tools, tool) is not None

    def always_allows(self, tool: str) -> str | None:
        """The ``alwaysAllowTools`` rule that lets ``tool`` run without asking, if any."""
        return first_match(self.always_allow_tools, tool)

    def connection_key(self) -> tuple[object, ...]:
        return (
            self.type,
            self.command,
            self.args,
            tuple(sorted(self.env.items())),
            self.env_file,
            self.cwd,
            self.url,
            tuple(sorted(self.headers.items())),
            self.oauth,
            self.session_scope,  # a session opened for one scope must not serve the other
            self.limits,
            self.sandbox,
        )


class ToolSearchThreshold(Struct, frozen=True, forbid_unknown_fields=True):
    """``mcp.tool_search_threshold``: in ``auto`` mode, tools are deferred behind search once a
    turn has more than ``tools`` tools or more than ``bytes`` bytes of their definitions."""

    tools: int = 40
    bytes: int = 32768


class McpOptions(Struct, frozen=True):
    """The ``mcp`` section (snake_case keys, as docs/api.md writes them)."""

    mandatory_description_prefix: str = "[asks the user every time] "
    session_idle_minutes: float = 30.0
    max_reply_bytes: int = 65536
    approval_timeout_seconds: float = 600.0
    # How long a server's question (elicitation, sampling) waits for a person.
    question_timeout_seconds: float = 600.0
    sampling: bool = False  # declare sampling to servers (a frontend must run the model)
    apps: bool = True  # advertise MCP Apps (io.modelcontextprotocol/ui): servers may ship views
    max_live_sessions: int = DEFAULT_MAX_LIVE_SESSIONS
    # "auto": defer a turn's tools behind search_tools past the threshold; "on": always; "off".
    tool_search: Literal["auto", "on", "off"] = "auto"
    tool_search_threshold: ToolSearchThreshold = ToolSearchThreshold()
    # A call still running this many seconds after it was sent returns to the model at once and
    # goes on in the background (calls.result has its outcome later); None: never.
    background_after_seconds: float | None = None
    # The longest an MCP task of a call may run, from the server's answer to its end.
    task_max_seconds: float = 3600.0
    # Whether stdio entries added from now on (by hand, imported, from a registry) start
    # sandboxed; the entries already there keep what they say.
    sandbox_default: bool = False
    # Registry base URLs searched in order (servers.search, servers.install).
    registries: tuple[str, ...] = (OFFICIAL_REGISTRY,)


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
        "max_live_sessions": DEFAULT_MAX_LIVE_SESSIONS,
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
    hooks: HookSet = field(default_factory=HookSet)
    errors: tuple[str, ...] = ()
