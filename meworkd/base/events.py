"""The in-process event bus: topics fan out to bounded per-subscriber channels.

Publishing never blocks: a subscriber that falls ``capacity`` events behind is cut off (its
stream ends and it is told why) instead of growing the daemon's memory.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mework_protocol.topics import TOPICS

__all__ = ["TOPICS", "Event", "EventBus", "Subscription"]

DEFAULT_CAPACITY = 2048


@dataclass(frozen=True, slots=True)
class Event:
    topic: str
    data: dict[str, Any]


class Subscription:
    """A frontend's view of the bus; iterate it to receive events."""

    def __init__(
        self,
        bus: "EventBus",
        topics: frozenset[str] | None,
        capacity: int,
        servers: frozenset[str] | None = None,
    ) -> None:
        self._bus = bus
        self.topics = topics
        self.servers = servers
        self.overflowed = False
        self._send: MemoryObjectSendStream[Event]
        self._receive: MemoryObjectReceiveStream[Event]
        self._send, self._receive = anyio.create_memory_object_stream[Event](capacity)

    def wants(self, topic: str) -> bool:
        return self.topics is None or topic in self.topics

    def wants_event(self, event: Event) -> bool:
        """Its topic, and (when filtered by server) an event about one of those servers or
        about none: a frontend following one server's logs still hears of approvals."""
        if not self.wants(event.topic):
            return False
        server = event.data.get("server")
        return self.servers is None or not isinstance(server, str) or server in self.servers

    def offer(self, event: Event) -> None:
        try:
            self._send.send_nowait(event)
        except anyio.WouldBlock:
            self.overflowed = True
            self.close()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            self.close()

    def close(self) -> None:
        self._bus._subscribers.discard(self)
        self._send.close()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Event:
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
        self._receive.close()


class EventBus:
    def __init__(self) -> None:
        self._subscribers: set[Subscription] = set()

    def subscribe(
        self,
        topics: Iterable[str] | None = None,
        capacity: int = DEFAULT_CAPACITY,
        servers: Iterable[str] | None = None,
    ) -> Subscription:
        only = None if servers is None else frozenset(servers)
        sub = Subscription(self, None if topics is None else frozenset(topics), capacity, only)
        self._subscribers.add(sub)
        return sub

    def publish(self, topic: str, data: dict[str, Any]) -> None:
        event = Event(topic, data)
        for sub in list(self._subscribers):
            if sub.wants_event(event):
                sub.offer(event)

    def watching(self, topic: str) -> int:
        """How many subscribers would receive ``topic`` (is anyone there to ask?)."""
        return sum(1 for sub in self._subscribers if sub.wants(topic))

    @property
    def subscriber_count(self) -> int:
        return len(self._subscribers)
