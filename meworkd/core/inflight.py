"""The tool calls in flight on each session, so a server's question can be bound to its call.

A question arrives on a session, not on a call: over HTTP and in 2026-07-28 rounds the call is
known (its slot is the ``CURRENT_CALL`` the callback sees); over stdio it is not, and the only
call in flight on that (conversation, server) is taken to be the one asking. Each slot holds
its call's clock, stopped while a question bound to the call waits for a person.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from meworkd.mcp import CURRENT_CALL, CallClock

__all__ = ["CallSlot", "InFlight"]


@dataclass(frozen=True, slots=True, eq=False)
class CallSlot:
    conversation_id: str
    server: str
    turn_id: str
    call_id: str
    clock: CallClock


class InFlight:
    def __init__(self) -> None:
        self._slots: dict[tuple[str, str], list[CallSlot]] = {}

    @contextmanager
    def running(self, slot: CallSlot) -> Iterator[None]:
        """``slot`` is in flight (and the current call of this task) inside the block."""
        key = (slot.conversation_id, slot.server)
        self._slots.setdefault(key, []).append(slot)
        token = CURRENT_CALL.set(slot)
        try:
            yield
        finally:
            CURRENT_CALL.reset(token)
            slots = self._slots[key]
            slots.remove(slot)
            if not slots:
                del self._slots[key]

    def find(self, conversation_id: str | None, server: str, current: object) -> CallSlot | None:
        """The call a question belongs to: the current one, else the only one in flight."""
        if isinstance(current, CallSlot):
            return current
        slots = self._slots.get((conversation_id or "", server), [])
        return slots[0] if len(slots) == 1 else None
