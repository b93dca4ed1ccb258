"""The hypothesis fuzz of the control socket: strategies, and one runner per group of them.

Each strategy sends ``figures.FUZZ_EXAMPLES[name]`` derandomized cases (no example database) to
one daemon, most to its dispatcher in this process (tests/reliability/in_process.py) and
``figures.FUZZ_SOCKET_EXAMPLES[name]`` of them through the real socket of a ``meworkd``
subprocess, each on a fresh connection that is then half-closed; it checks every reply
(tests/reliability/control_socket.py) and that ``daemon.status`` answers after every case. The
strategies are split into ``figures.FUZZ_GROUPS``, one test file each
(test_fuzz_socket_<group>.py), so that pytest-xdist's two workers share them: under
``--dist loadfile`` a file is one worker's, and the whole fuzz was the suite's longest file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reliability import figures
from tests.reliability.control_socket import (
    RSS_GROWTH_BOUND,
    Peer,
    send_raw_lines,
    send_values,
)

SAFE_METHODS = [
    "daemon.status",
    "settings.get",
    "settings.reload",
    "servers.list",
    "servers.get",
    "servers.logs",
    "servers.export",
    "conversations.get",
    "conversations.list",
    "presets.list",
    "approvals.list",
    "approvals.respond",
    "audit.list",
    "turns.begin",
    "turns.callTool",
    "turns.cancel",
    "turns.end",
    # Inside a batch followed by EOF this once wedged the connection and the daemon's shutdown
    # (test_batched_subscribe_then_eof_closes_the_connection).
    "events.subscribe",
]


# --- strategies ----------------------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=25,
)
ids = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63),
    st.text(max_size=12),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
param_values = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {},
        optional={
            "name": json_values,
            "id": json_values,
            "turnId": json_values,
            "conversationId": json_values,
            "approvalId": json_values,
            "decision": st.sampled_from(["allow", "deny", "maybe"]) | json_values,
            "topics": st.lists(st.sampled_from(["server.log", "nope"]), max_size=3) | json_values,
            "tail": json_values,
            "reveal": json_values,
            "arguments": json_values,
            "limit": json_values,
        },
    ),
)


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    message: dict[str, Any] = {}
    jsonrpc = draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0", 2, None, "missing"]))
    if jsonrpc != "missing":
        message["jsonrpc"] = jsonrpc
    method = draw(
        st.sampled_from(SAFE_METHODS)
        | st.text(max_size=20)
        | st.sampled_from(["rpc.discover", "daemon.status ", "DAEMON.STATUS"])
        | json_scalars
    )
    message["method"] = method
    if draw(st.booleans()):
        message["params"] = draw(param_values)
    if draw(st.integers(0, 9)) < 8:
        message["id"] = draw(ids)
    return message


def _invalid_utf8_line(draw: st.DrawFn) -> bytes:
    text = draw(st.text(max_size=40)).replace("\n", " ").encode()
    bad = draw(
        st.sampled_from(
            [
                b"\x80",
                b"\xc3",
                b"\xc3\x28",
                b"\xe2\x82",
                b"\xed\xa0\x80",
                b"\xf4\x90\x80\x80",
                b"\xff",
            ]
        )
    )
    at = draw(st.integers(0, len(text)))
    body = text[:at] + bad + text[at:]
    wrap = draw(st.sampled_from(["raw", "in_string", "in_method"]))
    if wrap == "in_string":
        return b'{"jsonrpc":"2.0","id":1,"method":"daemon.status","params":{"x":"' + body + b'"}}'
    if wrap == "in_method":
        return b'{"jsonrpc":"2.0","id":1,"method":"' + body + b'"}'
    return body


def _parses(line: bytes) -> bool:
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return False
    return True


# --- the fuzz -----------------------------------------------------------------------------------


def _settings(name: str, path: str) -> Any:
    return settings(
        max_examples=figures.fuzz_examples(name, path),
        deadline=None,
        database=None,
        derandomize=not figures.SOAK,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def _cases(d: Peer, path: str, counts: dict[str, int]) -> dict[str, Callable[[], None]]:
    """Every strategy as a hypothesis test against ``d``; a case counts once it passed."""

    @_settings("random_bytes", path)
    @given(st.lists(st.binary(min_size=1, max_size=300), min_size=1, max_size=8))
    def random_bytes(chunks: list[bytes]) -> None:
        # A chunk that happens to be JSON (b"1", b"[]") is left out: it is not a parse error.
        lines = [c.replace(b"\n", b" ") for c in chunks if not _parses(c.replace(b"\n", b" "))]
        send_raw_lines(d, lines or [b"\xff"])
        d.status_ok()
        counts["random_bytes"] += 1  # counted once the case passed

    @_settings("invalid_utf8", path)
    @given(st.data())
    def invalid_utf8(data: st.DataObject) -> None:
        lines = [_invalid_utf8_line(data.draw) for _ in range(data.draw(st.integers(1, 4)))]
        send_raw_lines(d, lines)
        d.status_ok()
        counts["invalid_utf8"] += 1  # counted once the case passed

    @_settings("json_values", path)
    @given(st.lists(json_values, min_size=1, max_size=6))
    def arbitrary_json(values: list[Any]) -> None:
        send_values(d, values)
        d.status_ok()
        counts["json_values"] += 1  # counted once the case passed

    @_settings("request_shapes", path)
    @given(st.lists(requests(), min_size=1, max_size=6))
    def request_shapes(values: list[dict[str, Any]]) -> None:
        send_values(d, values)
        d.status_ok()
        counts["request_shapes"] += 1  # counted once the case passed

    @_settings("batches", path)
    @given(
        st.lists(
            st.lists(requests() | json_values, min_size=0, max_size=12), min_size=1, max_size=3
        )
    )
    def batches(values: list[list[Any]]) -> None:
        send_values(d, values)
        d.status_ok()
        counts["batches"] += 1  # counted once the case passed

    @_settings("half_lines_then_eof", path)
    @given(
        st.lists(requests(), max_size=3),
        st.one_of(
            st.binary(min_size=1, max_size=200),
            requests().map(lambda r: json.dumps(r).encode()),
        ).map(lambda b: b.replace(b"\n", b" ")),
        st.integers(min_value=1, max_value=200),
    )
    def half_lines(values: list[dict[str, Any]], partial: bytes, cut: int) -> None:
        send_values(d, values, tail=partial[: max(1, min(cut, len(partial)))])
        d.status_ok()
        counts["half_lines_then_eof"] += 1  # counted once the case passed

    return {
        "random_bytes": random_bytes,
        "invalid_utf8": invalid_utf8,
        "json_values": arbitrary_json,
        "request_shapes": request_shapes,
        "batches": batches,
        "half_lines_then_eof": half_lines,
    }


def run_fuzz(d: Peer, group: str, path: str) -> None:
    """Run the strategies of ``group`` against ``d`` (``path``: "socket" or "in_process"): every
    case passed and each counted exactly. Through the socket, the daemon's RSS grew less than
    this group's share of the whole fuzz's bound (in process, RSS would be the test's own)."""
    names = figures.FUZZ_GROUPS[group]
    rss_before = d.rss()
    counts: dict[str, int] = dict.fromkeys(figures.FUZZ_EXAMPLES, 0)
    cases = _cases(d, path, counts)
    for name in names:
        cases[name]()
    growth = d.rss() - rss_before
    run = sum(counts.values())
    figures.record(f"fuzz_{group}_{path}", cases_run=run, rss_growth_kib=growth // 1024)
    expected = {
        k: figures.fuzz_examples(k, path) if k in names else 0 for k in figures.FUZZ_EXAMPLES
    }
    assert counts == expected, counts
    if path == "socket":
        # The bound of the whole fuzz (one daemon, every case), shared by the group's cases.
        share = sum(figures.FUZZ_EXAMPLES[k] for k in names) / sum(figures.FUZZ_EXAMPLES.values())
        assert growth < RSS_GROWTH_BOUND * share, f"RSS grew by {growth >> 20} MiB"
