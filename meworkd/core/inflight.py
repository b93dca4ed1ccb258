"""The tool calls in flight on each session, so a server's question can be bound to its call.

A question arrives on a session, not on a call: the only call in flight on that (conversation,
server) is taken to be the one asking; with several it is unknown (the ``CURRENT_CALL`` a
callback sees may be another call's, on stdio), and all of them are held. Each call in flight
holds its clock, stopped while a question bound to the call waits for a person.
"""

from contextvars import Token
from types import TracebackType

from meworkd.core.toolcall import ToolCall
from meworkd.mcp import CURRENT_CALL, CallClock

__all__ = ["InFlight", "Running"]


class InFlight:
    def __init__(self) -> None:
        self._slots: dict[tuple[str, str], list[Running]] = {}

    def running(self, call: ToolCall, clock: CallClock, *, patient: bool = False) -> "Running":
        """``call`` is in flight (and the current call of this task) inside the ``with`` block;
        ``patient``: its questions may wait for a frontend to come (a task followed again)."""
        return Running(self._slots, call, clock, patient)

    def find(
        self, conversation_id: str | None, server: str, current: object, certain: bool = False
    ) -> tuple["Running | None", list["Running"]]:
        """The call a question belongs to, and every call it may belong to.

        With one call in flight on the session it is that one. With several, the current call
        the callback sees is not to be trusted (a transport may hand over the context of the
        last message it sent, not of the request that caused the question): unknown, and all
        of them may be waiting for the person. The current call alone binds only when it is
        in flight and the only one, or when nothing else is registered (e.g. a probe), or when
        it is ``certain`` (it asks itself: an MCP task's input requests).
        """
        if certain and isinstance(current, Running):
            return current, [current]  # the call handed its own question over (a task's)
        slots = list(self._slots.get((conversation_id or "", server), []))
        if len(slots) == 1:
            return slots[0], slots
        if not slots and isinstance(current, Running):
            return current, [current]
        return None, slots


class Running:
    """A call in flight with its clock: the ``with`` block of :meth:`InFlight.running` (a
    class, not a generator: bench B1), and the current call a server's callback sees."""

    __slots__ = ("_key", "_slots", "_token", "call", "clock", "patient")

    def __init__(
        self,
        slots: dict[tuple[str, str], list["Running"]],
        call: ToolCall,
        clock: CallClock,
        patient: bool = False,
    ) -> None:
        self.call = call
        self.clock = clock
        self.patient = patient
        self._slots = slots
        self._key = (call.conversation_id, call.server)
        self._token: Token[object] | None = None

    def __enter__(self) -> None:
        self._slots.setdefault(self._key, []).append(self)
        self._token = CURRENT_CALL.set(self)

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._token is not None:
            CURRENT_CALL.reset(self._token)
        slots = self._slots[self._key]
        slots.remove(self)
        if not slots:
            del self._slots[self._key]
