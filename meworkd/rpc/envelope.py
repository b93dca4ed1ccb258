"""Irregular requests through jsonrpcserver's public pipeline: the oracle for envelope wording.

Everything the fast path of :mod:`meworkd.rpc.dispatch` does not take (a malformed envelope, an
unknown method, positional params, a param named ``context``) is answered here, so jsonrpcserver
decides and words those errors. Two of its public entry points are used:

- :meth:`Envelope.refuse`, ``dispatch_to_serializable``: a well-formed request that jsonrpcserver
  refuses without running a method (unknown method, positional params, a ``context`` param). The
  synchronous pipeline answers in the worker's own step, so the reply is not overtaken by the
  replies to requests sent after it (tests/reliability/test_hostile_input.py), which the async
  pipeline's ``asyncio.gather`` task would allow.
- :meth:`Envelope.answer`, ``async_dispatch_to_serializable``: anything else, which may run a
  method: entries run the typed call the dispatcher gives.

This module is the only importer of jsonrpcserver (docs/architecture.md).
"""

from collections.abc import Awaitable, Callable, Mapping
from typing import Generic, TypeVar

import msgspec
from jsonrpcserver import (
    JsonRpcError,
    Success,
    async_dispatch_to_serializable,
    dispatch_to_serializable,
)
from mework_protocol import codes

from meworkd.rpc.table import RpcFailure

__all__ = ["Call", "Envelope"]

C = TypeVar("C")
# A method's typed call on its params object; raises RpcFailure for an error reply.
Call = Callable[[C, dict[str, object]], Awaitable[object]]
Entry = Callable[..., Awaitable[object]]


class Envelope(Generic[C]):
    """jsonrpcserver's pipelines over the given methods: one decoded message → its reply."""

    def __init__(self, calls: Mapping[str, Call[C]]) -> None:
        self._methods = {name: _entry(call) for name, call in calls.items()}
        self._refusals = dict.fromkeys(calls, _refusal)

    async def answer(self, message: object, context: C) -> object | None:
        """The reply object for ``message`` (``None`` for a notification)."""
        # jsonrpcserver parses the text it is given; a deserializer returning the decoded
        # message keeps one parse, and lets batches be split per member by the dispatcher.
        reply = await async_dispatch_to_serializable(
            "", methods=self._methods, context=context, deserializer=lambda _text: message
        )
        return _with_kind(reply)

    def refuse(self, message: object) -> object | None:
        """The reply to a well-formed request that runs no method (see the module comment)."""
        reply = dispatch_to_serializable(
            "", methods=self._refusals, context=None, deserializer=lambda _text: message
        )
        return _with_kind(reply)


def _with_kind(reply: object) -> object:
    # jsonrpcserver's own errors (invalid request, method not found) carry a bare string as
    # data; give them the stable data.kind every other error has.
    error = reply.get("error") if isinstance(reply, dict) else None
    if isinstance(error, dict) and not isinstance(error.get("data"), dict):
        kind = codes.STANDARD_KINDS.get(error.get("code"), "internal")  # type: ignore[arg-type]
        detail = error.get("data")
        error["data"] = {"kind": kind} if detail is None else {"kind": kind, "detail": detail}
    return reply


def _positional() -> JsonRpcError:
    return JsonRpcError(
        codes.INVALID_PARAMS,
        "Invalid params",
        {"kind": "invalid_params", "detail": "params must be an object"},
    )


def _refusal(context: object, *args: object, **kwargs: object) -> object:
    """A method as the synchronous pipeline sees it: only reached with positional params."""
    raise _positional()


def _entry(call: Call[C]) -> Entry:
    async def entry(context: C, *args: object, **kwargs: object) -> object:
        if args:
            raise _positional()
        try:
            result = await call(context, kwargs)
        except RpcFailure as exc:
            raise JsonRpcError(exc.code, exc.message, exc.data) from None
        # A result already encoded (a tool reply) becomes plain data for jsonrpcserver; encoded
        # again with the reply it gives the same bytes.
        return Success(msgspec.json.decode(result) if isinstance(result, msgspec.Raw) else result)

    return entry
