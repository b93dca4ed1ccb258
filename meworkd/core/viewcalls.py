"""The recent tool calls that have an MCP Apps view: what a frontend needs to open one later.

A view is opened after its call, often by another frontend (``meworkctl view CALL_ID``), so the
daemon keeps, for each of the last :data:`MAX_VIEW_CALLS` allowed calls of a tool with a view,
the call's identity, its view reference, its arguments and its result (as the model read it,
already size-checked). Kept in memory only: a restarted daemon opens the views of new calls.
"""

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from meworkd.base.errors import NotFound
from meworkd.core.toolcall import ToolCall
from meworkd.core.viewref import ViewRef

__all__ = ["MAX_VIEW_CALLS", "ViewCall", "ViewCallNotFound", "ViewCalls"]

MAX_VIEW_CALLS = 256


class ViewCallNotFound(NotFound):
    kind = "view_not_found"

    def __init__(self, call_id: str) -> None:
        super().__init__(
            f"no tool call {call_id!r} with a view (unknown, not allowed, or older than the "
            f"last {MAX_VIEW_CALLS} calls with views since meworkd started)",
            callId=call_id,
        )


@dataclass(frozen=True, slots=True)
class ViewCall:
    call: ToolCall
    view: ViewRef
    arguments: dict[str, Any]
    result: dict[str, Any]


class ViewCalls:
    """The last :data:`MAX_VIEW_CALLS` calls with a view, by (turn, call id)."""

    def __init__(self, limit: int = MAX_VIEW_CALLS) -> None:
        self._limit = limit
        self._calls: OrderedDict[tuple[str, str], ViewCall] = OrderedDict()

    def keep(
        self,
        call: ToolCall,
        view: ViewRef | None,
        arguments: dict[str, Any],
        result: dict[str, Any],
    ) -> None:
        """Keep an allowed call for apps.view if its tool has a view (else nothing)."""
        if view is None or not view.resource_uri:
            return
        key = (call.turn_id, call.call_id)
        self._calls.pop(key, None)
        self._calls[key] = ViewCall(call, view, arguments, result)
        while len(self._calls) > self._limit:
            self._calls.popitem(last=False)

    def find(self, call_id: str, turn_id: str | None = None) -> ViewCall:
        """The call ``call_id`` (of ``turn_id`` when given; else the latest with that id).

        Raises:
            ViewCallNotFound: no such call with a view is kept.
        """
        if turn_id is not None:
            found = self._calls.get((turn_id, call_id))
        else:
            found = next((v for (_, c), v in reversed(self._calls.items()) if c == call_id), None)
        if found is None:
            raise ViewCallNotFound(call_id)
        return found
