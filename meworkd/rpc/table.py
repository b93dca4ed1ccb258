"""The method table: name → (params Struct, handler), and the error a method answers with.

Handlers get ``(context, params)``: the context is the caller's connection, the params a Struct
of :mod:`mework_protocol.params`. A group of methods is written as :class:`MethodGroup`, handlers
that take the services first, bound into a table once the services exist.
"""

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar

from mework_protocol.params import NoParams

__all__ = ["Handler", "Method", "MethodGroup", "MethodTable", "RpcFailure"]

C = TypeVar("C")
S = TypeVar("S")
Handler = Callable[[C, Any], Awaitable[object]]


class RpcFailure(Exception):
    """An error reply: what every exception out of a method becomes at the wire boundary."""

    def __init__(self, code: int, message: str, data: dict[str, object]) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


@dataclass(frozen=True, slots=True)
class Method(Generic[C]):
    name: str
    handler: Handler[C]
    params: type[Any]


class MethodTable(Generic[C]):
    """Method name → :class:`Method`; a name is registered once."""

    def __init__(self) -> None:
        self._methods: dict[str, Method[C]] = {}

    def add(self, name: str, params: type[Any] = NoParams) -> Callable[[Handler[C]], Handler[C]]:
        def register(handler: Handler[C]) -> Handler[C]:
            if name in self._methods:
                raise ValueError(f"method {name} registered twice")
            self._methods[name] = Method(name, handler, params)
            return handler

        return register

    def names(self) -> list[str]:
        return sorted(self._methods)

    def get(self, name: str) -> Method[C] | None:
        return self._methods.get(name)

    def __iter__(self) -> Iterator[Method[C]]:
        return iter(self._methods.values())


GroupHandler = Callable[[S, C, Any], Awaitable[object]]


class MethodGroup(Generic[S, C]):
    """One group's methods, written as module functions taking ``(services, context, params)``."""

    def __init__(self) -> None:
        self._rows: list[tuple[str, type[Any], GroupHandler[S, C]]] = []

    def add(
        self, name: str, params: type[Any] = NoParams
    ) -> Callable[[GroupHandler[S, C]], GroupHandler[S, C]]:
        def register(handler: GroupHandler[S, C]) -> GroupHandler[S, C]:
            self._rows.append((name, params, handler))
            return handler

        return register

    def bind(self, table: MethodTable[C], services: S) -> None:
        """Register every method of the group in ``table``, each handler given ``services``."""
        for name, params, handler in self._rows:
            table.add(name, params)(partial(handler, services))
