"""tools/call written and answered on a stdio session's own pipes, past the SDK's client.

The call path's floor (bench B1) was the SDK's ``ClientSession.send_request``: a pydantic model
built and dumped per request, a memory stream and a request clock per call, the reply validated
as a message union and again as a result. On a handshake-era stdio session meworkd writes the
``tools/call`` line itself and the pipe reader hands the reply straight back: one decode, the
size counted while it is read (:class:`~meworkd.mcp.budget.Outstanding`), the result checked by
the caller (:func:`meworkd.mcp.tools.call_tool`) and ``_meta`` stripped once.

Ids are strings (``"mw-1"``, ...): the SDK numbers its own requests with ints, so the two never
collide and the reader tells ours apart by the id alone. Everything else the server sends during
such a call (its requests for elicitation, sampling or roots, log lines, list changes) still goes
to the SDK session; progress for our token comes here. Both paths write whole lines through the
same stdin stream, so messages never interleave. A caller that is cancelled (its timeout, the
turn ended) sends ``notifications/cancelled`` for its id, as the SDK does.
"""

import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
import msgspec
from mcp import ClientSession, MCPError

from meworkd.base.log import get_logger
from meworkd.mcp.budget import REPLY_BUDGET, Outstanding
from meworkd.mcp.listcache import ListingCache

__all__ = [
    "PASS_THROUGH",
    "DirectCalls",
    "DirectClientSession",
    "ProgressSink",
    "plainly_valid",
]

log = get_logger("meworkd.direct")

# Off only to run the same call tests against the SDK path (tests/test_call_paths.py).
PASS_THROUGH = True
ABANDON_WRITE_SECONDS = 2.0  # the SDK's bound on a courtesy cancel's write, too
ProgressSink = Callable[[float, float | None, str | None], None]
_CLOSED = types.ErrorData(code=types.CONNECTION_CLOSED, message="Connection closed")


class DirectClientSession(ClientSession):
    """The SDK session plus, when meworkd answers tools/call itself, the pipes' calls, and the
    lists the server said may be reused (:class:`ListingCache`)."""

    direct: "DirectCalls | None" = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.listings = ListingCache()


class _Waiter:
    __slots__ = ("done", "on_progress", "outcome")

    def __init__(self, on_progress: ProgressSink | None) -> None:
        self.done = anyio.Event()
        self.on_progress = on_progress
        self.outcome: dict[str, Any] | types.ErrorData = _CLOSED


class DirectCalls:
    """The tools/call requests of one stdio session that meworkd sends and settles itself."""

    def __init__(self, send_line: Callable[[bytes], Awaitable[None]], outstanding: Outstanding):
        self._send_line = send_line
        self._outstanding = outstanding
        self._ids = itertools.count(1)
        self._waiting: dict[str, _Waiter] = {}
        self._closed = False

    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, Any],
        on_progress: ProgressSink | None,
        meta: dict[str, str] | None = None,
        *,
        task: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The raw result of ``tools/call tool``, as the server sent it (not yet checked);
        ``meta``: the request's ``_meta`` (trace context), progress token aside; ``task``: the
        2025-11-25 ``params.task`` asking for a task.

        Raises:
            MCPError: the server's error reply, or ``CONNECTION_CLOSED`` (the server went away).
        """
        if self._closed:
            raise MCPError.from_error_data(_CLOSED)
        request_id = f"mw-{next(self._ids)}"
        params: dict[str, Any] = {"name": tool, "arguments": arguments}
        if task is not None:
            params["task"] = task
        if on_progress is not None or meta:
            params["_meta"] = {**(meta or {})}
            if on_progress is not None:
                params["_meta"]["progressToken"] = request_id
        line = msgspec.json.encode(
            {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        )
        waiter = _Waiter(on_progress)
        self._waiting[request_id] = waiter
        self._outstanding.expect(request_id, REPLY_BUDGET.get())
        try:
            await self._send_line(line + b"\n")
            await waiter.done.wait()
        except anyio.get_cancelled_exc_class():
            # Even when cut short the write may have reached the pipe; a server ignores a
            # cancel for an id it never saw.
            if not self._closed:
                await self._cancel(request_id)
            raise
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            raise MCPError.from_error_data(_CLOSED) from None
        finally:
            del self._waiting[request_id]
            self._outstanding.answered(request_id)
        if isinstance(waiter.outcome, types.ErrorData):
            raise MCPError.from_error_data(waiter.outcome)
        return waiter.outcome

    async def _cancel(self, request_id: str) -> None:
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": "caller cancelled"},
        }
        with anyio.move_on_after(ABANDON_WRITE_SECONDS, shield=True):
            try:
                await self._send_line(msgspec.json.encode(cancel) + b"\n")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass

    def owns(self, request_id: object) -> bool:
        return type(request_id) is str and request_id in self._waiting

    def settle(self, request_id: object, outcome: dict[str, Any] | types.ErrorData) -> bool:
        """Hand ``outcome`` to the call ``request_id``; False when that is not one of ours."""
        if type(request_id) is not str:
            return False
        waiter = self._waiting.get(request_id)
        if waiter is None:
            return False
        waiter.outcome = outcome
        waiter.done.set()
        return True

    def progress(self, params: dict[str, Any]) -> bool:
        """A ``notifications/progress`` for one of our calls; False when it is not ours."""
        token = params.get("progressToken")
        waiter = self._waiting.get(token) if type(token) is str else None
        if waiter is None:
            return False
        progress, total = params.get("progress"), params.get("total")
        message = params.get("message")
        if (
            waiter.on_progress is None
            or isinstance(progress, bool)
            or not isinstance(progress, int | float)
        ):
            return True  # ours, but nothing to report (the SDK drops such a one too)
        try:
            waiter.on_progress(
                float(progress),
                None if isinstance(total, bool) or not isinstance(total, int | float) else total,
                message if isinstance(message, str) else None,
            )
        except Exception:  # a sink's failure must not end the session's reader
            log.exception("direct.progress_failed")
        return True

    def close(self) -> None:
        """The session ended: every waiting call fails with ``CONNECTION_CLOSED``."""
        self._closed = True
        for waiter in self._waiting.values():
            waiter.outcome = _CLOSED
            waiter.done.set()


def plainly_valid(raw: dict[str, Any]) -> bool:
    """True for what every revision's CallToolResult accepts: text blocks only (``_meta`` an
    object), structuredContent an object, isError a boolean, ``_meta`` an object. Anything
    else is left to the SDK's schema check (the common echo costs a few dict lookups)."""
    for key, value in raw.items():
        if key == "content":
            if type(value) is not list or not all(map(_plain_text_block, value)):
                return False
        elif key in ("structuredContent", "_meta"):
            if type(value) is not dict:
                return False
        elif key != "isError" or type(value) is not bool:
            return False
    return "content" in raw


def _plain_text_block(block: object) -> bool:
    if type(block) is not dict or block.get("type") != "text" or type(block.get("text")) is not str:
        return False
    return len(block) == 2 or (len(block) == 3 and type(block.get("_meta")) is dict)
