"""From one received line to the reply line: parsing, batches, dispatch and the error boundary.

jsonrpcserver validates the envelope, finds the method and shapes replies; this module adds what
it lacks for a daemon: typed params (msgspec), per-member batch errors, and the one place where
exceptions become JSON-RPC errors, so no Python exception text ever reaches a client.

A well-formed request for a registered method with named params (nearly every request) is
answered here directly, with the same reply jsonrpcserver would give (tests/test_dispatch.py
checks that); jsonrpcserver's pipeline costs about 80 us per request, mostly validating the
envelope with jsonschema, which the fast check below does in about 1 us (bench/README.md, B1).
"""

import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import anyio
import msgspec
from jsonrpcserver import Success, async_dispatch_to_serializable
from jsonrpcserver.async_dispatcher import dispatch_request
from jsonrpcserver.dispatcher import create_request, to_response
from jsonrpcserver.exceptions import JsonRpcError
from jsonrpcserver.response import to_serializable
from jsonrpcserver.sentinels import NOID

from meworkd.base.errors import MeworkError
from meworkd.base.log import get_logger

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "Dispatcher",
    "MethodTable",
    "error_response",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
MAX_BATCH = 256  # members per batch; more is refused whole

C = TypeVar("C")
P = TypeVar("P")
Handler = Callable[[C, Any], Awaitable[object]]
log = get_logger("meworkd.rpc")


class NoParams(msgspec.Struct, forbid_unknown_fields=True):
    """For methods that take none (an empty object or no ``params`` at all)."""


def error_response(code: int, message: str, data: object = None, id_: object = None) -> bytes:
    error: dict[str, object] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return msgspec.json.encode({"jsonrpc": "2.0", "error": error, "id": id_})


def to_rpc_error(exc: BaseException) -> JsonRpcError:
    """The single exception-to-wire mapping."""
    if isinstance(exc, MeworkError):
        return JsonRpcError(exc.code, exc.message, {"kind": exc.kind, **exc.data})
    if isinstance(exc, msgspec.ValidationError):
        detail = str(exc).replace("`", "").replace("$.", "").replace(" - at $", "")
        return JsonRpcError(
            INVALID_PARAMS, "Invalid params", {"kind": "invalid_params", "detail": detail}
        )
    return JsonRpcError(INTERNAL_ERROR, "Internal error", {"kind": "internal"})


@dataclass(frozen=True, slots=True)
class _Method(Generic[C]):
    handler: Handler[C]
    params: type[Any]


class MethodTable(Generic[C]):
    """Method name → (params Struct, handler); handlers get ``(context, params)``."""

    def __init__(self) -> None:
        self._methods: dict[str, _Method[C]] = {}

    def add(self, name: str, params: type[Any] = NoParams) -> Callable[[Handler[C]], Handler[C]]:
        def register(handler: Handler[C]) -> Handler[C]:
            if name in self._methods:
                raise ValueError(f"method {name} registered twice")
            self._methods[name] = _Method(handler, params)
            return handler

        return register

    def names(self) -> list[str]:
        return sorted(self._methods)

    def get(self, name: str) -> "_Method[C] | None":
        return self._methods.get(name)

    def jsonrpcserver_methods(self) -> dict[str, Callable[..., Awaitable[object]]]:
        return {name: self._entry(name, m) for name, m in self._methods.items()}

    @staticmethod
    def _entry(name: str, method: _Method[C]) -> Callable[..., Awaitable[object]]:
        async def entry(context: C, *args: object, **kwargs: object) -> object:
            if args:
                raise JsonRpcError(
                    INVALID_PARAMS,
                    "Invalid params",
                    {"kind": "invalid_params", "detail": "params must be an object"},
                )
            return Success(await _invoke(name, method, context, kwargs))

        # jsonrpcserver checks every call's arguments with inspect.signature(entry).bind(...);
        # computing the signature each time was ~20 % of its per-request cost (bench/README.md,
        # B1 profile). A precomputed __signature__ is what inspect.signature returns as is.
        entry.__signature__ = inspect.signature(entry)  # type: ignore[attr-defined]
        return entry


async def _invoke(name: str, method: _Method[C], context: C, params: dict[str, object]) -> object:
    """Run a method on its typed params; every exception leaves as a :class:`JsonRpcError`."""
    try:
        typed = msgspec.convert(params, method.params)
        return await method.handler(context, typed)
    except anyio.get_cancelled_exc_class():
        raise
    except Exception as exc:
        error = to_rpc_error(exc)
        if error.code == INTERNAL_ERROR:
            log.exception("rpc.internal_error", method=name)
        raise error from None


class Dispatcher(Generic[C]):
    """Turns one received line into the bytes to send back (``None``: nothing to send)."""

    def __init__(self, table: MethodTable[C], *, fast_path: bool = True) -> None:
        self._table = table
        self._methods = table.jsonrpcserver_methods()
        self._fast_path = fast_path  # off: jsonrpcserver's whole pipeline (tests compare)

    async def handle_line(self, line: bytes, context: C) -> bytes | None:
        try:
            return await self._handle_line(line, context)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception:
            # Last resort: whatever a line does, it must not take the listener down with it.
            log.exception("rpc.unhandled_line")
            return error_response(INTERNAL_ERROR, "Internal error", {"kind": "internal"})

    async def _handle_line(self, line: bytes, context: C) -> bytes | None:
        try:
            message = msgspec.json.decode(line)
        except msgspec.DecodeError:
            return error_response(
                PARSE_ERROR, "Parse error", {"kind": "parse_error", "detail": _where(line)}
            )
        except RecursionError:  # msgspec's nesting limit (about 1000 levels)
            return error_response(
                PARSE_ERROR, "Parse error", {"kind": "parse_error", "detail": "nested too deeply"}
            )
        if isinstance(message, list):
            return await self._batch(message, context)
        reply = await self._one(message, context)
        return None if reply is None else msgspec.json.encode(reply)

    async def _batch(self, members: list[object], context: C) -> bytes | None:
        if not members:
            return error_response(
                INVALID_REQUEST,
                "Invalid request",
                {"kind": "invalid_request", "detail": "empty batch"},
            )
        if len(members) > MAX_BATCH:
            return error_response(
                INVALID_REQUEST,
                "Invalid request",
                {
                    "kind": "invalid_request",
                    "detail": f"a batch may hold at most {MAX_BATCH} requests",
                },
            )
        replies: list[object | None] = [None] * len(members)

        async def run(i: int, member: object) -> None:
            replies[i] = await self._one(member, context)

        async with anyio.create_task_group() as tg:
            for i, member in enumerate(members):
                tg.start_soon(run, i, member)
        answered = [r for r in replies if r is not None]
        return msgspec.json.encode(answered) if answered else None

    async def _one(self, message: object, context: C) -> object | None:
        reply: object
        if self._fast_path and isinstance(message, dict) and _plainly_valid(message):
            name = message["method"]
            method = self._table.get(name)
            params = message.get("params", _NO_PARAMS)
            # (A param named "context" is jsonrpcserver's to refuse: it clashes with its
            # context argument. Positional params are refused in the entry.)
            if method is not None and isinstance(params, dict) and "context" not in params:
                return await self._direct(name, method, message, params, context)
            # jsonrpcserver's own steps for a request that plainly satisfies its request
            # schema, without the jsonschema validation and the asyncio.gather task its
            # pipeline adds around every request.
            request = create_request(message)
            _request, result = await dispatch_request(self._methods, context, request)
            reply = None if request.id is NOID else to_serializable(to_response(request, result))
        else:
            # Anything else: jsonrpcserver's full pipeline decides and words the error. It
            # re-parses the text it is given; handing it the decoded object through the
            # deserializer keeps one parse and lets batches be split per member.
            reply = await async_dispatch_to_serializable(
                "", methods=self._methods, context=context, deserializer=lambda _text: message
            )
        # jsonrpcserver's own errors (invalid request, method not found) carry a bare string
        # as data; give them the stable data.kind every other error has.
        error = reply.get("error") if isinstance(reply, dict) else None
        if isinstance(error, dict) and not isinstance(error.get("data"), dict):
            kind = _STANDARD_KINDS.get(error.get("code"), "internal")  # type: ignore[arg-type]
            detail = error.get("data")
            error["data"] = {"kind": kind} if detail is None else {"kind": kind, "detail": detail}
        return reply

    @staticmethod
    async def _direct(
        name: str,
        method: _Method[C],
        message: dict[str, Any],
        params: dict[str, object],
        context: C,
    ) -> object | None:
        try:
            result = await _invoke(name, method, context, params)
        except JsonRpcError as exc:
            reply = {
                "jsonrpc": "2.0",
                "error": {"code": exc.code, "message": exc.message, "data": exc.data},
                "id": message.get("id"),
            }
        else:
            reply = {"jsonrpc": "2.0", "result": result, "id": message.get("id")}
        return reply if "id" in message else None  # a notification runs but gets no reply


_NO_PARAMS: dict[str, object] = {}
_STANDARD_KINDS = {
    PARSE_ERROR: "parse_error",
    INVALID_REQUEST: "invalid_request",
    METHOD_NOT_FOUND: "method_not_found",
    INVALID_PARAMS: "invalid_params",
    INTERNAL_ERROR: "internal",
}


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


def _where(line: bytes) -> str:
    try:
        text = line.decode()
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text (byte {exc.start})"
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return f"{exc.msg} at column {exc.colno}"
    except RecursionError:
        return "nested too deeply"
    except ValueError:  # e.g. an integer over Python's 4300-digit conversion limit
        return "a number is too large"
    return "a value is out of range (a number too large for JSON-RPC)"
