"""The call path's shortcuts (bench B1) give what the plain ways gave.

``wire_time`` formats the second once and the milliseconds per call: it must write every moment
exactly as ``datetime`` did; ``CallRecord`` hands its ``CallFields`` to the audit by position,
so their order must stay that of ``AuditEntry``'s leading fields.
"""

import dataclasses
import inspect
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from meworkd.base.clock import _LATEST, wire_time
from meworkd.core.audit import AuditEntry, AuditLog
from meworkd.core.toolcall import ToolCall as CallFields


def _by_datetime(timestamp: float) -> str:
    moment = datetime.fromtimestamp(min(timestamp, _LATEST), UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@given(st.floats(min_value=-5e9, max_value=1e13, allow_nan=False))
def test_wire_time_writes_any_moment_as_datetime_does(timestamp: float) -> None:
    assert wire_time(timestamp) == _by_datetime(timestamp)


def test_wire_time_at_the_edges_of_a_second() -> None:
    # A fraction that rounds up to the next second, one just under it, and the cached second
    # left for another and back.
    for timestamp in (1_764_590_400.9999996, 1_764_590_400.9995, 1_764_590_401.0, 5.0000004):
        assert wire_time(timestamp) == _by_datetime(timestamp)
    assert wire_time(1e300) == "9999-12-31T23:59:59.000Z"


def test_wire_time_now_is_now() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    stamp = wire_time()
    assert stamp.endswith("Z")
    assert datetime.fromisoformat(stamp.replace("Z", "+00:00")) >= before


# A call's identity is taken by position (``*call[:7]``); who asked (``origin``, the last
# field) is passed by name.
IDENTITY = list(CallFields._fields[:-1])


def test_call_fields_are_the_audit_entry_leading_fields_in_order() -> None:
    names = [f.name for f in dataclasses.fields(AuditEntry)]
    assert CallFields._fields[-1] == "origin"
    assert names[: len(IDENTITY)] == IDENTITY
    assert "origin" in names


def test_call_fields_are_record_request_positional_params_in_order() -> None:
    params = inspect.signature(AuditLog.record_request).parameters
    positional = [n for n, p in params.items() if p.kind is p.POSITIONAL_OR_KEYWORD][1:]
    assert positional == IDENTITY
    assert params["origin"].kind is inspect.Parameter.KEYWORD_ONLY
