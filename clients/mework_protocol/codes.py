"""JSON-RPC error codes and the ``data.kind`` of each: the one table of docs/api.md "Errors"."""

__all__ = [
    "AUDIT_UNAVAILABLE",
    "CONFLICT",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "INVALID_SETTINGS",
    "METHOD_NOT_FOUND",
    "NOT_FOUND",
    "PARSE_ERROR",
    "PERMISSION_DENIED",
    "REGISTRY_UNAVAILABLE",
    "RESOURCE_EXHAUSTED",
    "SERVER_UNAVAILABLE",
    "SETTINGS_UNREADABLE",
    "SHUTTING_DOWN",
    "STANDARD_KINDS",
    "UNUSABLE_SERVER_JSON",
]

# JSON-RPC 2.0's own.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

# meworkd's, in the implementation-defined range; ``data.kind`` refines each.
NOT_FOUND = -32060
CONFLICT = -32061
INVALID_SETTINGS = -32062
SETTINGS_UNREADABLE = -32063
SERVER_UNAVAILABLE = -32064
SHUTTING_DOWN = -32065
PERMISSION_DENIED = -32066
RESOURCE_EXHAUSTED = -32067
AUDIT_UNAVAILABLE = -32068
REGISTRY_UNAVAILABLE = -32069
UNUSABLE_SERVER_JSON = -32070

# The kind a client may assume when an error carries none (errors of the JSON-RPC layer itself).
STANDARD_KINDS: dict[int, str] = {
    PARSE_ERROR: "parse_error",
    INVALID_REQUEST: "invalid_request",
    METHOD_NOT_FOUND: "method_not_found",
    INVALID_PARAMS: "invalid_params",
    INTERNAL_ERROR: "internal",
}
