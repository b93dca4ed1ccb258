"""meworkd.rpc.dispatch: a handler's already encoded result (msgspec.Raw) leaves unchanged.

Turns.call_tool encodes a tool reply once and returns it as ``msgspec.Raw``; the fast path writes
those bytes verbatim into the reply, jsonrpcserver's pipeline gets them as plain data, and both
send the same bytes.
"""

import json
from typing import Any

import msgspec
import pytest

from meworkd.rpc.dispatch import Dispatcher, MethodTable

pytestmark = pytest.mark.anyio

REPLY = {
    "content": [{"type": "text", "text": 'héllo \u2028 "quoted" \\ 😀'}],
    "structuredContent": {"z": 1, "a": [1.5, -0.0, 1e300, None, True], "m": {"": ""}},
    "isError": False,
}
ENCODED = msgspec.json.encode(REPLY)


def table() -> MethodTable[None]:
    t: MethodTable[None] = MethodTable()

    @t.add("raw")
    async def raw(_ctx: None, _p: object) -> msgspec.Raw:
        return msgspec.Raw(ENCODED)

    return t


async def both(request: Any) -> tuple[bytes | None, bytes | None]:
    line = json.dumps(request).encode()
    fast = await Dispatcher(table()).handle_line(line, None)
    full = await Dispatcher(table(), fast_path=False).handle_line(line, None)
    return fast, full


async def test_a_raw_result_goes_out_verbatim_on_both_paths() -> None:
    fast, full = await both({"jsonrpc": "2.0", "method": "raw", "id": 7})
    assert fast == full == b'{"jsonrpc":"2.0","result":' + ENCODED + b',"id":7}'


async def test_a_raw_result_in_a_batch() -> None:
    request = {"jsonrpc": "2.0", "method": "raw", "id": 1}
    fast, full = await both([request, {**request, "id": 2}])
    expected = b'{"jsonrpc":"2.0","result":' + ENCODED + b',"id":%d}'
    assert fast == full == b"[" + (expected % 1) + b"," + (expected % 2) + b"]"
