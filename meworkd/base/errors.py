"""The exception family of meworkd: one root, a stable wire ``kind`` and code on each class.

Every layer raises these; the RPC boundary (``meworkd.rpc.dispatch.to_rpc_error``) is the only
place that turns them, or anything else, into JSON-RPC errors. Codes come from
:mod:`mework_protocol.codes`, the one table clients read too.
"""

from typing import ClassVar

from mework_protocol import codes

__all__ = [
    "ApprovalNotFound",
    "AuditUnavailable",
    "CallNotFound",
    "ConflictError",
    "ConversationNotFound",
    "DuplicateCallId",
    "InvalidParams",
    "InvalidSettings",
    "MeworkError",
    "NotFound",
    "PresetNotFound",
    "RegistryServerNotFound",
    "RegistryUnavailable",
    "ServerNotFound",
    "ServerUnavailable",
    "SettingsUnreadable",
    "ShuttingDown",
    "TaskNotFound",
    "TurnNotFound",
    "UnusableServerJson",
]


class MeworkError(Exception):
    """Root of every error meworkd reports to a client.

    ``message`` is written for a person and must never contain secrets or Python internals.
    """

    kind: ClassVar[str] = "internal"
    code: ClassVar[int] = codes.INTERNAL_ERROR

    def __init__(self, message: str, **data: object) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class InvalidParams(MeworkError):
    kind = "invalid_params"
    code = codes.INVALID_PARAMS


class NotFound(MeworkError, LookupError):
    kind = "not_found"
    code = codes.NOT_FOUND


class ServerNotFound(NotFound):
    kind = "server_not_found"

    def __init__(self, name: str) -> None:
        super().__init__(f"no MCP server named {name!r}", server=name)


class ConversationNotFound(NotFound):
    kind = "conversation_not_found"

    def __init__(self, conversation_id: str) -> None:
        super().__init__(f"no conversation {conversation_id!r}", conversationId=conversation_id)


class PresetNotFound(NotFound):
    kind = "preset_not_found"

    def __init__(self, name: str) -> None:
        super().__init__(f"no preset named {name!r}", preset=name)


class TurnNotFound(NotFound):
    kind = "turn_not_found"

    def __init__(self, turn_id: str) -> None:
        super().__init__(f"no active turn {turn_id!r} (it ended or never began)", turnId=turn_id)


class TaskNotFound(NotFound):
    kind = "task_not_found"

    def __init__(self, call_id: str) -> None:
        super().__init__(
            f"no MCP task of a call {call_id!r} (the call's server never answered it with a "
            "task, or the task was dropped with its conversation)",
            callId=call_id,
        )


class CallNotFound(NotFound):
    kind = "call_not_found"

    def __init__(self, call_id: str) -> None:
        super().__init__(
            f"no background call {call_id!r} (it never moved to the background, or its result "
            "was dropped with its conversation)",
            callId=call_id,
        )


class ApprovalNotFound(NotFound):
    kind = "approval_not_found"

    def __init__(self, approval_id: str) -> None:
        super().__init__(
            f"no pending approval {approval_id!r} (already answered, expired or unknown)",
            approvalId=approval_id,
        )


class ConflictError(MeworkError):
    kind = "conflict"
    code = codes.CONFLICT


class InvalidSettings(MeworkError):
    """A settings value (from an RPC or the file) failed validation; ``errors`` name the fields."""

    kind = "invalid_settings"
    code = codes.INVALID_SETTINGS

    def __init__(self, message: str, errors: list[str] | None = None) -> None:
        super().__init__(message, errors=errors or [message])
        self.errors = errors or [message]


class SettingsUnreadable(MeworkError):
    """The settings file on disk is not valid JSON; meworkd will not overwrite it."""

    kind = "settings_unreadable"
    code = codes.SETTINGS_UNREADABLE


class ServerUnavailable(MeworkError):
    """Connecting to, or talking to, an MCP server failed."""

    kind = "server_unavailable"
    code = codes.SERVER_UNAVAILABLE


class ShuttingDown(MeworkError):
    kind = "shutting_down"
    code = codes.SHUTTING_DOWN


class AuditUnavailable(MeworkError):
    """The audit log cannot be written: tool calls are refused until it can (fail closed)."""

    kind = "audit_unavailable"
    code = codes.AUDIT_UNAVAILABLE


class DuplicateCallId(ConflictError):
    """A ``callId`` already in flight in the same turn: cancelling by it would be ambiguous."""

    kind = "duplicate_call_id"

    def __init__(self, turn_id: str, call_id: str) -> None:
        super().__init__(
            f"the call {call_id!r} is already running in turn {turn_id!r}; "
            "give each call of a turn its own callId",
            turnId=turn_id,
            callId=call_id,
        )


class RegistryUnavailable(MeworkError):
    """No registry answered usably (down, slow, not JSON, too large, endless pages)."""

    kind = "registry_unavailable"
    code = codes.REGISTRY_UNAVAILABLE


class RegistryServerNotFound(NotFound):
    kind = "registry_server_not_found"

    def __init__(self, name: str, version: str | None = None) -> None:
        what = name if version is None else f"{name} version {version}"
        super().__init__(f"no registry knows the server {what}", server=name)


class UnusableServerJson(MeworkError):
    """A registry's server.json (or a bundle's manifest) cannot become a settings entry."""

    kind = "unusable_server_json"
    code = codes.UNUSABLE_SERVER_JSON
