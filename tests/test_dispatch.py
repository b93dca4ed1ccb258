"""meworkd.rpc.dispatch: the fast paths answer exactly what jsonrpcserver's full pipeline does.

Most requests skip jsonrpcserver (bench B1); a reply that differed from its answer in any byte
(order of keys, error wording, ids, notifications) would be a contract break for frontends.
"""

import json
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meworkd.base.errors import ConversationNotFound
from meworkd.rpc.dispatch import Dispatcher, MethodTable

pytestmark = pytest.mark.anyio


class EchoParams(msgspec.Struct, forbid_unknown_fields=True):
    text: str
    times: int = 1


def table(calls: list[str]) -> MethodTable[None]:
    t: MethodTable[None] = MethodTable()

    @t.add("echo", EchoParams)
    async def echo(_ctx: None, p: EchoParams) -> dict[str, Any]:
        calls.append("echo")
        return {"text": p.text * p.times}

    @t.add("status")
    async def status(_ctx: None, _p: object) -> dict[str, Any]:
        calls.append("status")
        return {"ok": True}

    @t.add("missing")
    async def missing(_ctx: None, _p: object) -> None:
        calls.append("missing")
        raise ConversationNotFound("c1")

    @t.add("broken")
    async def broken(_ctx: None, _p: object) -> None:
        calls.append("broken")
        raise RuntimeError("internal detail that must not leave")

    return t


async def both(line: bytes) -> tuple[bytes | None, bytes | None, list[str], list[str]]:
    fast_calls: list[str] = []
    full_calls: list[str] = []
    fast = await Dispatcher(table(fast_calls)).handle_line(line, None)
    full = await Dispatcher(table(full_calls), fast_path=False).handle_line(line, None)
    return fast, full, fast_calls, full_calls


SHAPES: list[dict[str, Any]] = [
    {"jsonrpc": "2.0", "method": "echo", "params": {"text": "x"}, "id": 1},
    {"jsonrpc": "2.0", "method": "echo", "params": {"text": "x", "times": 3}, "id": "a"},
    {"jsonrpc": "2.0", "method": "echo", "params": {"text": "x"}, "id": None},
    {"jsonrpc": "2.0", "method": "echo", "params": {"text": "x"}, "id": 1.5},
    {"jsonrpc": "2.0", "method": "echo", "params": {"text": "x"}},  # notification
    {"jsonrpc": "2.0", "method": "echo", "params": {"text": 5}, "id": 2},
    {"jsonrpc": "2.0", "method": "echo", "params": {}, "id": 3},
    {"jsonrpc": "2.0", "method": "echo", "params": {"text": "x", "extra": 1}, "id": 4},
    {"jsonrpc": "2.0", "method": "echo", "params": {"context": 1}, "id": 5},
    {"jsonrpc": "2.0", "method": "echo", "params": ["x"], "id": 6},
    {"jsonrpc": "2.0", "method": "echo", "id": 7},
    {"jsonrpc": "2.0", "method": "status", "id": 8},
    {"jsonrpc": "2.0", "method": "status", "params": {}, "id": 9},
    {"jsonrpc": "2.0", "method": "status", "params": {"x": 1}, "id": 10},
    {"jsonrpc": "2.0", "method": "missing", "id": 11},
    {"jsonrpc": "2.0", "method": "broken", "id": 12},
    {"jsonrpc": "2.0", "method": "broken"},
    {"jsonrpc": "2.0", "method": "nope", "id": 13},
    {"jsonrpc": "2.0", "method": "nope"},
    {"jsonrpc": "1.0", "method": "echo", "params": {"text": "x"}, "id": 14},
    {"jsonrpc": "2.0", "method": "echo", "params": {"text": "x"}, "id": True},
    {"jsonrpc": "2.0", "method": "echo", "params": {"text": "x"}, "id": [1]},
    {"jsonrpc": "2.0", "method": 5, "id": 15},
    {"jsonrpc": "2.0", "method": "echo", "params": {"text": "x"}, "id": 16, "x": 1},
    {"method": "echo", "params": {"text": "x"}, "id": 17},
]


@pytest.mark.parametrize("request_", SHAPES, ids=lambda r: json.dumps(r)[:60])
async def test_fast_paths_answer_what_jsonrpcserver_answers(request_: dict[str, Any]) -> None:
    fast, full, fast_calls, full_calls = await both(json.dumps(request_).encode())
    assert fast == full
    assert fast_calls == full_calls  # notifications run too, and nothing runs twice


async def test_internal_errors_carry_no_python_text() -> None:
    fast, _full, _, _ = await both(b'{"jsonrpc": "2.0", "method": "broken", "id": 1}')
    assert fast is not None
    assert b"internal detail" not in fast
    assert json.loads(fast)["error"] == {
        "code": -32603,
        "message": "Internal error",
        "data": {"kind": "internal"},
    }


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
requests = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "2.0", "2.0", "1.0"]) | json_values,
        "method": st.sampled_from(["echo", "status", "missing", "broken", "nope"]) | json_values,
        "params": st.fixed_dictionaries(
            {}, optional={"text": st.text(max_size=5) | json_values, "times": json_values}
        )
        | json_values,
        "id": st.integers(-5, 5) | st.text(max_size=4) | st.none() | json_values,
    },
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request_=requests)
async def test_any_request_gets_the_same_answer(request_: dict[str, Any]) -> None:
    fast, full, fast_calls, full_calls = await both(json.dumps(request_).encode())
    assert fast == full
    assert fast_calls == full_calls
