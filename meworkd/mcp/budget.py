"""Byte budgets for what servers send: a tool reply, one message, a listing; refused while read.

A reply is measured while it arrives, never after it has been held whole. ``call_tool`` sets a
:class:`ReplyBudget` in a context variable; the transports see it where the request leaves (the
SDK carries the caller's context to the HTTP request's task, and the stdio writer runs in the
caller's task) and refuse the reply once it passes the budget: the waiting request is answered
with a JSON-RPC error of code :data:`REFUSED_CODE` made here, and the budget is marked, so the
failure is told apart from anything a server could send.
"""

import json
import re
from contextvars import ContextVar
from dataclasses import dataclass

import mcp_types as types
import msgspec
from mcp.shared.message import SessionMessage

__all__ = [
    "MAX_LISTING_BYTES",
    "MAX_LISTING_ITEMS",
    "MAX_LISTING_PAGES",
    "MESSAGE_LIMIT",
    "REFUSED_CODE",
    "REPLY_ALLOWANCE",
    "REPLY_BUDGET",
    "Outstanding",
    "ReplyBudget",
    "refusal_body",
    "refusal_message",
    "request_id_of",
]

# What a tools/call message may carry beyond ``mcp.max_reply_bytes``: its JSON-RPC envelope,
# SSE framing and ``_meta``. The exact limit is checked afterwards on the reply as the model
# gets it (compact, without ``_meta``); this one bounds what is read to decide that.
REPLY_ALLOWANCE = 16 * 1024
# A listing (tools, prompts, resources) as a whole: its bytes, items and pages. A model is not
# helped by more than a thousand tools from one server, and no real server sends megabytes.
MAX_LISTING_BYTES = 4 * 1024 * 1024
MAX_LISTING_ITEMS = 1000
MAX_LISTING_PAGES = 100
# One message from a server that no tools/call budget covers (a listing page, a notification).
MESSAGE_LIMIT = MAX_LISTING_BYTES + REPLY_ALLOWANCE
# The code of the error meworkd answers a refused reply with (never trusted from a server:
# the budget's ``refused`` flag says it was meworkd's).
REFUSED_CODE = -32099


@dataclass(slots=True)
class ReplyBudget:
    """The bytes one reply may take; ``refused`` once a transport refused it for its size."""

    limit: int
    refused: bool = False


REPLY_BUDGET: ContextVar[ReplyBudget | None] = ContextVar("meworkd_reply_budget", default=None)


def refusal_message(limit: int) -> str:
    return f"the reply passed {limit} bytes while it was being read and was refused"


def refusal_body(request_id: types.RequestId, limit: int) -> bytes:
    """A JSON-RPC error answering ``request_id`` in place of a reply over ``limit``."""
    error = {"code": REFUSED_CODE, "message": refusal_message(limit)}
    return msgspec.json.encode({"jsonrpc": "2.0", "id": request_id, "error": error})


class _Request(msgspec.Struct):
    id: int | str | None = None
    method: str | None = None


def request_id_of(body: bytes) -> types.RequestId | None:
    """The id of the JSON-RPC request ``body`` (None: a notification, a response, not JSON)."""
    try:
        request = msgspec.json.decode(body, type=_Request)
    except msgspec.MsgspecError:
        return None
    return request.id if request.method is not None else None


# Where a message says its id when its middle was too long to keep: at its start, as the
# Python SDK writes it, or at its end, as the TypeScript SDK writes it (result first).
_ID = rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")'
_HEAD_ID = re.compile(rb'^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*' + _ID)
_TAIL_ID = re.compile(rb",\s*" + _ID + rb"\s*\}\s*\r?$")


class Outstanding:
    """A stdio session's requests awaiting their replies, with the budget each was sent under.

    It sets the line limit (the largest budget in flight, so nothing larger is held) and, when a
    line was too long, finds the request it answered to refuse it at once rather than let the
    call wait for its timeout.
    """

    def __init__(self) -> None:
        self._waiting: dict[types.RequestId, ReplyBudget | None] = {}
        # The reader asks for the limit per chunk; many requests in flight (a shared session
        # serving every conversation) made that a scan per chunk. Recomputed only on a change.
        self._limit: int | None = None

    def sent(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCRequest):
            self._waiting[message.id] = REPLY_BUDGET.get()
            self._limit = None
        elif (
            isinstance(message, types.JSONRPCNotification)
            and message.method == "notifications/cancelled"
            and isinstance(message.params, dict)
        ):
            # A cancelled request may never be answered: forget it, so nothing piles up.
            self.answered(message.params.get("requestId"))

    def expect(self, request_id: types.RequestId, budget: ReplyBudget | None) -> None:
        """A request written by meworkd itself (:mod:`meworkd.mcp.direct`), under ``budget``."""
        self._waiting[request_id] = budget
        self._limit = None

    def answered(self, request_id: object) -> None:
        if isinstance(request_id, int | str) and request_id in self._waiting:
            del self._waiting[request_id]
            self._limit = None

    def line_limit(self) -> int:
        if self._limit is not None:
            return self._limit
        limit = 0
        for budget in self._waiting.values():
            limit = max(limit, MESSAGE_LIMIT if budget is None else budget.limit)
        # Nothing in flight: what arrives is a notification or a request of the server's.
        self._limit = limit or MESSAGE_LIMIT
        return self._limit

    def refuse(self, head: bytes, tail: bytes, limit: int) -> SessionMessage | None:
        """The error answering the request a too-long line (``head``...``tail``) replied to."""
        request_id = self._find(head, tail)
        if request_id is None:
            return None
        budget = self._waiting.pop(request_id)
        self._limit = None
        if budget is not None:
            budget.refused = True
        error = types.ErrorData(code=REFUSED_CODE, message=refusal_message(limit))
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))

    def _find(self, head: bytes, tail: bytes) -> types.RequestId | None:
        for match in (_HEAD_ID.match(head), _TAIL_ID.search(tail)):
            if match is not None:
                found = json.loads(match.group(1))
                if found in self._waiting:
                    return found  # type: ignore[no-any-return]
        # Not named: it may be junk rather than a reply, so no request is failed for it.
        return None
