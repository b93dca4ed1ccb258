"""A tool call's reply as the client gets it: error results, the size limit, redacted bytes.

Pure and synchronous: :mod:`meworkd.core.turns` decides and calls, this shapes what goes back.
The size limit is checked on the bytes encoded once; those same bytes go out unless secrets
are configured, when a redacted copy is encoded instead.
"""

import hashlib
from collections.abc import Callable
from typing import Any

import msgspec

__all__ = ["Redact", "arguments_digest", "error_result", "refuse_oversized", "to_wire"]

# Secrets out of a value (the Redactor's redact_value): the same object when none are known.
Redact = Callable[[object], object]


def error_result(text: str) -> dict[str, Any]:
    """A tool result the model reads as a failure."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


def arguments_digest(arguments: dict[str, Any]) -> str:
    """The audit's digest of a call's arguments (never the arguments themselves)."""
    return hashlib.sha256(msgspec.json.encode(arguments, order="sorted")).hexdigest()[:16]


def refuse_oversized(
    result: dict[str, Any], limit: int
) -> tuple[dict[str, Any], bytes | None, int]:
    """(the result to send, its bytes if already encoded, the reply's size in bytes)."""
    encoded = msgspec.json.encode(result)
    size = len(encoded)
    if size <= limit:
        return result, encoded, size
    refusal = error_result(
        f"The tool's reply was {size} bytes, over the limit of {limit} bytes, so "
        "it was refused (not truncated). Ask for less: use the tool's pagination, "
        "filtering or limit parameters if it has them."
    )
    return refusal, None, size


def to_wire(redact: Redact, result: dict[str, Any], encoded: bytes | None = None) -> msgspec.Raw:
    """``result`` as JSON for the client, secrets redacted (``encoded``: its bytes, if known).

    With no secrets configured the redactor hands the same object back and the bytes already
    made are used; otherwise the redacted copy is encoded.
    """
    redacted = redact(result)
    if encoded is None or redacted is not result:
        encoded = msgspec.json.encode(redacted)
    return msgspec.Raw(encoded)
