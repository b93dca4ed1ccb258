"""The fast path and jsonrpcserver's pipeline answer the same, batches and lines that
do not parse included (issue 13.5).

``tests/test_dispatch.py`` compares the two paths on single requests; the fast path also splits
batches itself and decodes every line first (its own parse errors, a lone surrogate), so those
cases are compared here, byte for byte, with the methods each path ran.
"""

import pytest

from tests.test_dispatch import both

pytestmark = pytest.mark.anyio

ECHO = b'{"jsonrpc":"2.0","method":"echo","params":{"text":"x"},"id":1}'

LINES = {
    "batch": b"[" + ECHO + b',{"jsonrpc":"2.0","method":"status","id":2}]',
    "batch_of_a_notification": b'[{"jsonrpc":"2.0","method":"echo","params":{"text":"x"}}]',
    "batch_with_errors": (
        b'[{"jsonrpc":"2.0","method":"broken","id":1},{"jsonrpc":"2.0","method":"missing","id":2},'
        b'{"jsonrpc":"2.0","method":"nope","id":3},5,{"jsonrpc":"2.0","method":"echo","id":4}]'
    ),
    "empty_batch": b"[]",
    "batch_of_non_requests": b"[1, null]",
    "unfinished": ECHO[:-1],
    "not_json": b"not json",
    "empty_line": b"",
    "blank_line": b"   ",
    "a_string": b'"str"',
    "a_number": b"5",
    "null": b"null",
    "lone_surrogate": ECHO.replace(b'"x"', b'"\\ud800"'),
    "number_out_of_range": ECHO.replace(b'"id":1', b'"id":1e400'),
    "big_integer_id": ECHO.replace(b'"id":1', b'"id":123456789012345678901234567890'),
    "repeated_key": ECHO.replace(b'"id":1', b'"id":1,"id":2'),
}


@pytest.mark.parametrize("line", list(LINES.values()), ids=list(LINES))
async def test_both_paths_answer_batches_and_unparsable_lines_alike(line: bytes) -> None:
    fast, full, fast_calls, full_calls = await both(line)
    assert fast == full
    assert fast_calls == full_calls
