"""The params of every RPC method as msgspec Structs: camelCase objects, unknown keys refused.

Unknown params are refused so that a typo is an error rather than a silent no-op (docs/api.md).
Decoded by the daemon only for now: this module needs msgspec, so the standard-library clients
(``mework_client``, ``meworkctl``) must not import it.
"""

from typing import Annotated, Any, Literal

import msgspec

from mework_protocol.levels import ApprovalLevel

__all__ = [
    "AddServerParams",
    "AuditParams",
    "BeginParams",
    "CallParams",
    "CallToolParams",
    "CancelParams",
    "CompleteParams",
    "CreateConversationParams",
    "ElicitationRespondParams",
    "ExportParams",
    "GetPromptParams",
    "GetServerParams",
    "IdParams",
    "ImportParams",
    "InstallParams",
    "ListTurnsParams",
    "LogsParams",
    "McpOptionsParams",
    "NameParams",
    "NoParams",
    "PrepareParams",
    "PresetParams",
    "ReadResourceParams",
    "RegistryGetParams",
    "RenameParams",
    "ReplaceServerParams",
    "RespondParams",
    "SamplingRespondParams",
    "SearchParams",
    "SearchToolsParams",
    "SubscribeParams",
    "ToolAutoApproveParams",
    "ToolEnabledParams",
    "TurnParams",
    "UpdateConversationParams",
    "UpdateServerParams",
    "UpgradeParams",
]


class NoParams(msgspec.Struct, forbid_unknown_fields=True):
    """For methods that take none (an empty object or no ``params`` at all)."""


class _Params(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    pass


class NameParams(_Params):
    name: str


class GetServerParams(_Params):
    name: str
    reveal: bool = False


class AddServerParams(_Params):
    name: str
    server: dict[str, Any]


class UpdateServerParams(_Params):
    name: str
    patch: dict[str, Any]


class ReplaceServerParams(_Params):
    name: str
    text: str


class RenameParams(_Params):
    name: str
    new_name: str


class ImportParams(_Params):
    text: str
    on_conflict: Literal["error", "replace", "skip"] = "error"
    # VS Code's ``${input:ID}`` values, by id; a value may itself be a ``${VAR}`` reference.
    inputs: dict[str, str] = {}
    dry_run: bool = False


class SearchParams(_Params):
    query: str = ""
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 20
    cursor: str | None = None
    refresh: bool = False  # ask the registries now, even if the local copy is fresh


class RegistryGetParams(_Params):
    name: str
    version: str | None = None


class InstallParams(_Params):
    # A registry server's name, or a bundle: the path of a .mcpb file.
    name: str | None = None
    bundle: str | None = None
    version: str | None = None
    choice: int | None = None  # which package or remote (servers.install's ``choices``)
    inputs: dict[str, str] = {}
    dry_run: bool = False
    entry_name: str | None = None  # the settings entry's name (default: from the server's)


class UpgradeParams(_Params):
    name: str  # the settings entry
    version: str | None = None
    inputs: dict[str, str] = {}
    dry_run: bool = False


class ExportParams(_Params):
    reveal: bool = False


class ToolEnabledParams(_Params):
    name: str
    tool: str
    enabled: bool


class ToolAutoApproveParams(_Params):
    name: str
    tool: str
    auto_approve: bool


# The settings file's own spelling (snake_case), not camelCase: these are its mcp.* keys.
class McpOptionsParams(msgspec.Struct, forbid_unknown_fields=True):
    mandatory_description_prefix: str | None = None
    session_idle_minutes: float | None = None
    max_reply_bytes: int | None = None
    approval_timeout_seconds: float | None = None
    question_timeout_seconds: float | None = None
    sampling: bool | None = None
    apps: bool | None = None
    # Live sessions kept before the least recently used idle ones close (as in the file: > 0).
    max_live_sessions: Annotated[int, msgspec.Meta(gt=0)] | None = None
    # Whether stdio entries added from now on start sandboxed.
    sandbox_default: bool | None = None
    registries: list[str] | None = None  # registry base URLs, searched in order
    tool_search: Literal["auto", "on", "off"] | None = None
    tool_search_threshold: dict[str, int] | None = None  # {tools?, bytes?}, each > 0
    task_max_seconds: float | None = None  # the longest an MCP task may run (> 0, a week)


class PresetParams(_Params):
    name: str
    preset: dict[str, Any]


class GetPromptParams(_Params):
    name: str
    prompt: str
    arguments: dict[str, str] = {}


class ReadResourceParams(_Params):
    name: str
    uri: str


class CompleteParams(_Params):
    name: str
    ref: dict[str, Any]  # {"type": "ref/prompt", "name"} or {"type": "ref/resource", "uri"}
    argument: dict[str, Any]  # {name, value}
    # Earlier arguments' values (MCP's context.arguments; "context" is the RPC layer's own).
    context_arguments: dict[str, str] | None = None


class LogsParams(_Params):
    name: str
    tail: int | None = None


class IdParams(_Params):
    id: str


class CreateConversationParams(_Params):
    id: str | None = None
    preset: str | None = None
    mcp_servers: list[str] | None = None
    approval_level: ApprovalLevel | None = None
    roots: list[str] | None = None  # file:// URIs of directories


class UpdateConversationParams(_Params):
    id: str
    mcp_servers: list[str] | None = None
    approval_level: ApprovalLevel | None = None
    roots: list[str] | None = None
    preset: str | msgspec.UnsetType | None = msgspec.UNSET  # null: detach the preset


class PrepareParams(_Params):
    conversation_id: str


class BeginParams(_Params):
    conversation_id: str
    parent_turn_id: str | None = None


class CallToolParams(_Params):
    turn_id: str
    name: str
    arguments: dict[str, Any] = {}
    call_id: str | None = None


class SearchToolsParams(_Params):
    turn_id: str
    query: str
    limit: int | None = None


class ViewParams(_Params):
    """apps.view: the call whose view (``turnId`` optional: the latest call with that id)."""

    call_id: str
    turn_id: str | None = None


class ViewOpenParams(_Params):
    """apps.view: by the call (``callId``, ``turnId?``) or by ``conversationId``, ``server``
    and ``resourceUri`` (a view read ahead of any call)."""

    call_id: str | None = None
    turn_id: str | None = None
    conversation_id: str | None = None
    server: str | None = None
    resource_uri: str | None = None


class ViewCallToolParams(ViewParams):
    server: str = ""
    name: str = ""
    arguments: dict[str, Any] = {}


class ViewReadParams(ViewParams):
    uri: str = ""


class ViewMessageParams(ViewParams):
    role: str = "user"
    content: Any = None


class ViewContextParams(ViewParams):
    content: Any = None
    structured_content: Any = None


class ViewLinkParams(ViewParams):
    url: str = ""


class CancelParams(_Params):
    turn_id: str
    call_id: str | None = None


class TurnParams(_Params):
    turn_id: str


class CallParams(_Params):
    """calls.result, calls.cancel: a call that moved to the background."""

    call_id: str


class ListTurnsParams(_Params):
    conversation_id: str | None = None


class ListTasksParams(_Params):
    """tasks.list: the MCP tasks of calls (of one conversation), newest first."""

    conversation_id: str | None = None
    open_only: bool = False


class TaskParams(_Params):
    """tasks.get, tasks.cancel: a task, known by the call that started it."""

    call_id: str


class RespondParams(_Params):
    approval_id: str
    decision: Literal["allow", "deny"]
    reason: str | None = None
    scope: Literal["once", "conversation", "always"] = "once"


class ElicitationRespondParams(_Params):
    elicitation_id: str
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


class SamplingRespondParams(_Params):
    request_id: str
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class AuditParams(_Params):
    conversation_id: str | None = None
    limit: int = 100


class SubscribeParams(_Params):
    topics: list[str] | None = None
    servers: list[str] | None = None
