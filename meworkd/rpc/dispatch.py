"""From one received line to the reply line: parsing, batches, typed dispatch, the error boundary.

Two paths, one answer. A well-formed request for a registered method with named params (nearly
every request) is answered here directly: its envelope is checked by :func:`_plainly_valid` in
about 1 us, where jsonrpcserver's pipeline spends about 80 us validating it with jsonschema
(bench/README.md, B1). Everything else (a malformed envelope, an unknown method, positional
params, a param named ``context``) goes to :class:`meworkd.rpc.envelope.Envelope`, jsonrpcserver's
public pipeline, which decides and words the error (its synchronous one when the request is
well-formed and runs no method, so that reply keeps its place). Both run a method through
:func:`_invoke`, so typed params and the exception-to-wire map (:func:`to_rpc_error`) are the
same on both, and tests/test_dispatch.py checks that both give the same bytes for any request
(``Dispatcher(table, fast_path=False)`` sends everything down the second path).

This module adds what jsonrpcserver lacks for a daemon: typed params (msgspec), per-member batch
errors, and the one place where exceptions become JSON-RPC errors, so no Python exception text
ever reaches a client. A method may return ``msgspec.Raw`` (an already encoded reply): it is
written into the reply verbatim.
"""

import json
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Generic, TypeVar

import anyio
import msgspec
from mework_protocol import codes

from meworkd.base.errors import MeworkError
from meworkd.base.log import get_logger
from meworkd.rpc.envelope import Envelope
from meworkd.rpc.holdings import Account
from meworkd.rpc.table import Method, MethodTable, RpcFailure

__all__ = [
    "BATCH_REPLY_BYTES",
    "MAX_BATCH",
    "Dispatcher",
    "Lane",
    "MethodTable",
    "Slot",
    "error_response",
    "invalid_request",
    "to_rpc_error",
]

MAX_BATCH = 256  # members per batch; more is refused whole
# Bytes of one batch's reply; members whose replies would pass it get an error each instead.
BATCH_REPLY_BYTES = 8 * 1024 * 1024

C = TypeVar("C")
log = get_logger("meworkd.rpc")


async def _at_once() -> None:
    return None


class Lane:
    """What the lines of one connection share: the in-flight limit, the connection's account of
    the daemon-wide budget, ``ready`` (wait until new work may start: the peer reads its replies
    and the daemon is under its budget) and a lock that runs its batches one at a time."""

    __slots__ = ("account", "batches", "limiter", "ready")

    def __init__(
        self,
        limiter: anyio.Semaphore,
        account: Account | None = None,
        ready: Callable[[], Awaitable[None]] = _at_once,
    ) -> None:
        self.limiter = limiter
        self.account = account
        self.ready = ready
        self.batches = anyio.Lock()


class Slot:
    """A line's slot of the connection's in-flight limit: released once, by whoever is done
    first (the worker after the reply, or a batch as it starts: its members take their own)."""

    __slots__ = ("held", "lane")

    def __init__(self, lane: Lane) -> None:
        self.lane = lane
        self.held = True

    @property
    def limiter(self) -> anyio.Semaphore:
        return self.lane.limiter

    def release(self) -> None:
        if self.held:
            self.held = False
            self.lane.limiter.release()


def error_response(code: int, message: str, data: object = None, id_: object = None) -> bytes:
    error: dict[str, object] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return msgspec.json.encode({"jsonrpc": "2.0", "error": error, "id": id_})


def to_rpc_error(exc: BaseException) -> RpcFailure:
    """The single exception-to-wire mapping."""
    if isinstance(exc, MeworkError):
        return RpcFailure(exc.code, exc.message, {"kind": exc.kind, **exc.data})
    if isinstance(exc, msgspec.ValidationError):
        detail = str(exc).replace("`", "").replace("$.", "").replace(" - at $", "")
        return RpcFailure(
            codes.INVALID_PARAMS, "Invalid params", {"kind": "invalid_params", "detail": detail}
        )
    return RpcFailure(codes.INTERNAL_ERROR, "Internal error", {"kind": "internal"})


async def _invoke(method: Method[C], context: C, params: dict[str, object]) -> object:
    """Run a method on its typed params; every exception leaves as an :class:`RpcFailure`."""
    try:
        typed = msgspec.convert(params, method.params)
        return await method.handler(context, typed)
    except anyio.get_cancelled_exc_class():
        raise
    except Exception as exc:
        error = to_rpc_error(exc)
        if error.code == codes.INTERNAL_ERROR:
            log.exception("rpc.internal_error", method=method.name)
        raise error from None


class Dispatcher(Generic[C]):
    """Turns one received line into the bytes to send back (``None``: nothing to send)."""

    def __init__(self, table: MethodTable[C], *, fast_path: bool = True) -> None:
        self._table = table
        self._envelope = Envelope({m.name: partial(_invoke, m) for m in table})
        self._fast_path = fast_path  # off: jsonrpcserver's whole pipeline (tests compare)
        self.max_batch_reply = BATCH_REPLY_BYTES

    async def handle_line(self, line: bytes, context: C, slot: Slot | None = None) -> bytes | None:
        """The reply to ``line``; ``slot``: the line's slot of the connection's in-flight limit
        (a batch gives it back as it starts, and each member takes a slot of its own)."""
        try:
            return await self._handle_line(line, context, slot)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception:
            # Last resort: whatever a line does, it must not take the listener down with it.
            log.exception("rpc.unhandled_line")
            return error_response(codes.INTERNAL_ERROR, "Internal error", {"kind": "internal"})

    async def _handle_line(self, line: bytes, context: C, slot: Slot | None) -> bytes | None:
        try:
            message = msgspec.json.decode(line)
        except msgspec.DecodeError:
            return _parse_error(_where(line))
        except RecursionError:  # msgspec's nesting limit (about 1000 levels)
            return _parse_error("nested too deeply")
        if isinstance(message, list):
            return await self._batch(message, context, slot)
        reply = await self._one(message, context)
        return None if reply is None else msgspec.json.encode(reply)

    async def _batch(self, members: list[object], context: C, slot: Slot | None) -> bytes | None:
        if not members:
            return invalid_request("empty batch")
        if len(members) > MAX_BATCH:
            return invalid_request(f"a batch may hold at most {MAX_BATCH} requests")
        if slot is None:
            return await self._members(members, context, None)
        # The line's slot is given back: its members take one each, once its turn comes. One
        # batch of a connection runs at a time, waiting for room before every member, so that
        # batches read together cannot all gather replies at once.
        slot.release()
        async with slot.lane.batches:
            return await self._members(members, context, slot.lane)

    async def _members(self, members: list[object], context: C, lane: Lane | None) -> bytes | None:
        reply = _BatchReply(len(members), self.max_batch_reply, lane)

        async def run(i: int, member: object, done: Slot | None) -> None:
            try:
                reply.add(i, await self._one(member, context))
            finally:
                if done is not None:
                    done.release()

        try:
            async with anyio.create_task_group() as tg:
                for i, member in enumerate(members):
                    if reply.full:  # past the bound: not run, an error each
                        reply.refuse(i, member)
                        continue
                    # Each member waits for a slot of its own, so a batch of 256 is 256 requests
                    # in flight, not one; and for room: none starts while the peer leaves
                    # replies unread or the daemon holds more than its budget.
                    own = None
                    if lane is not None:
                        await lane.ready()
                        await lane.limiter.acquire()
                        own = Slot(lane)
                    tg.start_soon(run, i, member, own)
            return reply.encode()
        finally:
            reply.close()

    async def _one(self, message: object, context: C) -> object | None:
        if self._fast_path and isinstance(message, dict) and _plainly_valid(message):
            method = self._table.get(message["method"])
            params = message.get("params", _NO_PARAMS)
            # (A param named "context" is jsonrpcserver's to refuse: it clashes with its
            # context argument. Positional params it refuses in the envelope's entry.)
            if method is not None and isinstance(params, dict) and "context" not in params:
                return await _direct(method, message, params, context)
            if method is None or params:  # (empty positional params run the method)
                return self._envelope.refuse(message)
        return await self._envelope.answer(message, context)


async def _direct(
    method: Method[C], message: dict[str, Any], params: dict[str, object], context: C
) -> object | None:
    try:
        result = await _invoke(method, context, params)
    except RpcFailure as exc:
        reply = {
            "jsonrpc": "2.0",
            "error": {"code": exc.code, "message": exc.message, "data": exc.data},
            "id": message.get("id"),
        }
    else:
        reply = {"jsonrpc": "2.0", "result": result, "id": message.get("id")}
    return reply if "id" in message else None  # a notification runs but gets no reply


class _BatchReply:
    """A batch's member replies, encoded as each finishes and counted against the batch's bound
    (and the connection's account). A reply that would pass the bound becomes an error, and so
    does every member not yet started once the bound is reached (those are not run)."""

    def __init__(self, size: int, bound: int, lane: Lane | None) -> None:
        self._parts: list[bytes | None] = [None] * size
        self._bound = bound
        self._bytes = 0
        self.full = False
        self._account = lane.account if lane is not None else None

    def add(self, index: int, reply: object | None) -> None:
        if reply is None:
            return
        part = msgspec.json.encode(reply)
        if self._bytes + len(part) > self._bound:
            self.full = True
            part = _past_the_bound(self._bound, _id_of(reply), ran=True)
        self._put(index, part)

    def refuse(self, index: int, member: object) -> None:
        if isinstance(member, dict) and "id" in member:  # (a notification gets no reply)
            self._put(index, _past_the_bound(self._bound, _id_of(member), ran=False))

    def _put(self, index: int, part: bytes) -> None:
        self._parts[index] = part
        self._bytes += len(part)
        if self._account is not None:
            self._account.take(len(part))

    def encode(self) -> bytes | None:
        answered = [part for part in self._parts if part is not None]
        return b"[" + b",".join(answered) + b"]" if answered else None

    def close(self) -> None:
        """Given back to the account: the reply is sent now (queued, it counts there)."""
        if self._account is not None:
            self._account.give_back(self._bytes)
        self._parts.clear()


def _id_of(message: object) -> object:
    member_id = message.get("id") if isinstance(message, dict) else None
    return member_id if member_id is None or isinstance(member_id, str | int | float) else None


def _past_the_bound(bound: int, member_id: object, *, ran: bool) -> bytes:
    what = (
        "this request ran, but its reply would pass it"
        if ran
        else "the replies before this request reached it, so it was not run"
    )
    return error_response(
        codes.RESOURCE_EXHAUSTED,
        "Reply too large for the batch",
        {
            "kind": "batch_reply_too_large",
            "detail": f"a batch's reply may be at most {bound} bytes; {what}. "
            "Send large requests alone or in smaller batches",
        },
        member_id,
    )


_NO_PARAMS: dict[str, object] = {}
_REQUEST_KEYS = frozenset({"jsonrpc", "method", "id", "params"})


def _plainly_valid(request: dict[str, object]) -> bool:
    """True only for a request that jsonrpcserver's request-schema.json accepts: an object with
    no other keys than jsonrpc "2.0", a string method, an id that is a string, number or null,
    and params that are an array or object. (False does not mean invalid: the schema decides.)
    """
    id_ = request.get("id")
    return (
        request.keys() <= _REQUEST_KEYS
        and request.get("jsonrpc") == "2.0"
        and isinstance(request.get("method"), str)
        and (id_ is None or isinstance(id_, str) or type(id_) in (int, float))  # no bool
        and ("params" not in request or isinstance(request["params"], list | dict))
    )


def _parse_error(detail: str) -> bytes:
    return error_response(
        codes.PARSE_ERROR, "Parse error", {"kind": "parse_error", "detail": detail}
    )


def invalid_request(detail: str, kind: str = "invalid_request") -> bytes:
    """The reply line refusing a message that is no valid request (``kind`` refines why)."""
    return error_response(
        codes.INVALID_REQUEST, "Invalid request", {"kind": kind, "detail": detail}
    )


def _where(line: bytes) -> str:
    try:
        text = line.decode()
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text (byte {exc.start})"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"{exc.msg} at column {exc.colno}"
    except RecursionError:
        return "nested too deeply"
    except ValueError:  # e.g. an integer over Python's 4300-digit conversion limit
        return "a number is too large"
    try:
        # json accepts an escaped lone surrogate ("\ud800"); msgspec refuses it, rightly: it
        # is no Unicode character. Said so, not as msgspec's "truncated" or a number's fault.
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return "a string holds a lone UTF-16 surrogate escape (such as \\ud800), not text"
    return "a value is out of range (a number too large for JSON-RPC)"
