"""meworkd.transports: a stdio server's plain responses skip pydantic's union validation, and
what they become is exactly what pydantic makes of them; anything else is left to pydantic."""

import json
from typing import Any

import mcp_types as types
import pytest
from hypothesis import given
from hypothesis import strategies as st

from meworkd.mcp.stdio import _plain_response

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)
results = st.dictionaries(st.text(max_size=5), json_values, max_size=3)
plain_responses = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "id": st.integers() | st.text(max_size=4), "result": results}
)
any_messages = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "2.0", "1.0"]) | json_values,
        "id": st.integers() | st.text(max_size=4) | json_values,
        "result": results | json_values,
        "method": st.sampled_from(["notifications/progress", "ping"]),
        "error": st.fixed_dictionaries({"code": st.integers(), "message": st.text(max_size=5)}),
    },
)
messages = plain_responses | any_messages


@given(message=messages)
def test_a_plain_response_is_what_pydantic_makes_of_it(message: dict[str, Any]) -> None:
    line = json.dumps(message).encode()
    fast = _plain_response(line)
    if fast is None:
        return
    slow = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    assert isinstance(slow, types.JSONRPCResponse)
    assert fast.model_dump(by_alias=True) == slow.model_dump(by_alias=True)


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc": "2.0", "id": true, "result": {}}',  # a bool is not an id
        b'{"jsonrpc": "2.0", "id": 1.0, "result": {}}',
        b'{"jsonrpc": "2.0", "id": 1, "result": []}',
        b'{"jsonrpc": "2.0", "id": 1, "result": {}, "method": "x"}',
        b'{"jsonrpc": "1.0", "id": 1, "result": {}}',
        b'{"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "m"}}',
        b'{"jsonrpc": "2.0", "id": 1, "result": {"n": 1e400}}',
        b'{"jsonrpc": "2.0", "id": 1, "result": {',
        b"[" * 5000 + b"]" * 5000,
        b"\xff\xfe",
    ],
)
def test_anything_else_is_left_to_pydantic(line: bytes) -> None:
    assert _plain_response(line) is None


def test_a_plain_response() -> None:
    response = _plain_response(b'{"jsonrpc": "2.0", "id": "a", "result": {"content": []}}')
    assert response == types.JSONRPCResponse(jsonrpc="2.0", id="a", result={"content": []})
