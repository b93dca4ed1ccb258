"""Issue 8, part 3: hostile bytes on the control socket, and connection churn.

One ``meworkd`` subprocess serves the whole module. Hypothesis strategies send random bytes,
invalid UTF-8, arbitrary JSON values, request-shaped objects with wrong types, batches of junk and
half-written lines followed by EOF; a fixed list adds what random generation rarely reaches (100k
deep nesting, numbers out of range, 9 MiB lines, batch limits, NUL bytes). For every case:

* every reply line is valid JSON-RPC 2.0 (``jsonrpc`` "2.0", an ``id``, exactly one of ``result``
  or ``error``, the error with an integer ``code`` and a string ``message``), or an event
  notification; no reply invents an id the client never sent;
* a line that must be answered is answered exactly once, and after EOF the daemon closes;
* the daemon answers ``daemon.status`` afterwards.

The churn test opens and drops 500 connections (some mid-line, some with a request whose reply
nobody reads) and checks that the daemon's fd count and ``connections`` return to their idle
values.
"""

from __future__ import annotations

import json
import socket
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mework_client import RpcError

from tests.reliability import figures
from tests.reliability.harness import (
    BOUND,
    KITCHEN,
    DaemonProc,
    bound_name,
    daemon_dir,
    new_mark,
    poll_until,
    server_entry,
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
RSS_GROWTH_BOUND = 64 * 1024 * 1024


@pytest.fixture(scope="module")
def hostile_daemon() -> Iterator[DaemonProc]:
    with daemon_dir() as root:
        d = DaemonProc(root)
        d.write_settings({"k": server_entry(KITCHEN, mark=new_mark(), timeout=20)})
        d.start()
        try:
            yield d
            assert d.stop() == 0, d.log_tail()
        finally:
            d.kill()


# --- talking bytes -----------------------------------------------------------------------------


def exchange(d: DaemonProc, data: bytes) -> list[bytes]:
    """Send ``data``, half-close, read every reply line until the daemon closes (EOF)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(BOUND)
        s.connect(str(d.socket))
        failure: list[BaseException] = []

        def send() -> None:
            try:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
            except OSError as exc:
                failure.append(exc)

        # A separate sender: a big request and big replies must not deadlock on full buffers.
        sender = threading.Thread(target=send)
        sender.start()
        chunks = []
        while True:
            chunk = s.recv(1 << 20)  # socket timeout = the bound; EOF = the daemon closed
            if not chunk:
                break
            chunks.append(chunk)
        sender.join(BOUND)
        assert not failure, failure
    raw = b"".join(chunks)
    assert raw == b"" or raw.endswith(b"\n"), f"a reply line was cut: {raw[-200:]!r}"
    return raw.split(b"\n")[:-1] if raw else []


def check_message(message: object, sent_ids: list[Any]) -> bool:
    """Validate one JSON-RPC 2.0 response (True) or event notification (False)."""
    assert isinstance(message, dict), message
    assert message.get("jsonrpc") == "2.0", message
    if "method" in message:
        assert message["method"] == "event", message
        assert "id" not in message, message
        assert set(message) == {"jsonrpc", "method", "params"}, message
        return False
    assert "id" in message, message
    assert set(message) in ({"jsonrpc", "id", "result"}, {"jsonrpc", "id", "error"}), message
    if "error" in message:
        error = message["error"]
        assert isinstance(error, dict), message
        assert isinstance(error.get("code"), int), message
        assert not isinstance(error["code"], bool), message
        assert isinstance(error.get("message"), str), message
        assert isinstance(error.get("data", {}).get("kind"), str), message
        assert "Traceback" not in json.dumps(error), message
    if message["id"] is not None:
        assert any(message["id"] == i and type(message["id"]) is type(i) for i in sent_ids), (
            message["id"],
            sent_ids[:10],
        )
    return True


def check_replies(lines: list[bytes], sent_ids: list[Any]) -> int:
    """Validate every reply line; return how many were responses (not events)."""
    responses = 0
    for line in lines:
        message = json.loads(line)  # raises on invalid UTF-8 or invalid JSON
        if isinstance(message, list):
            assert message, "an empty batch reply"
            for member in message:
                assert check_message(member, sent_ids), member
            responses += 1
        elif check_message(message, sent_ids):
            responses += 1
    return responses


def status_ok(d: DaemonProc) -> None:
    with d.client() as c:
        assert c.call("daemon.status")["pid"] == d.pid


# --- what a line must get -------------------------------------------------------------------------


def _ids_in(value: Any) -> list[Any]:
    members = value if isinstance(value, list) else [value]
    return [m["id"] for m in members if isinstance(m, dict) and "id" in m]


def _member_answered(value: Any) -> bool | None:
    if not isinstance(value, dict):
        return True
    if "id" in value:
        return True
    notification = (
        value.get("jsonrpc") == "2.0"
        and isinstance(value.get("method"), str)
        and isinstance(value.get("params", {}), dict | list)
    )
    return False if notification else None


def answered(value: Any) -> bool | None:
    """Whether a line holding ``value`` must get a reply (None: the spec leaves room)."""
    if isinstance(value, list):
        if not value or len(value) > 256:
            return True
        verdicts = [_member_answered(m) for m in value]
        if any(v is True for v in verdicts):
            return True
        return False if all(v is False for v in verdicts) else None
    return _member_answered(value)


def send_values(d: DaemonProc, values: list[Any], tail: bytes = b"") -> None:
    """One line per value (``json.dumps``), then ``tail`` unterminated; check the replies."""
    data = b"".join(json.dumps(v).encode() + b"\n" for v in values) + tail
    sent_ids = [i for v in values for i in _ids_in(v)]
    responses = check_replies(exchange(d, data), sent_ids)
    verdicts = [answered(v) for v in values]
    assert sum(v is True for v in verdicts) <= responses <= sum(v is not False for v in verdicts)


def send_raw_lines(d: DaemonProc, lines: list[bytes]) -> None:
    """Lines that are not JSON: every non-blank one gets exactly one parse error."""
    data = b"".join(line + b"\n" for line in lines)
    replies = exchange(d, data)
    assert check_replies(replies, []) == len(replies)
    expected = sum(1 for line in lines if line.strip())
    assert len(replies) == expected, (len(replies), expected)
    for reply in replies:
        assert json.loads(reply)["error"]["code"] == -32700


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


# --- the fuzz test -------------------------------------------------------------------------------


def _settings(name: str) -> Any:
    return settings(
        max_examples=figures.fuzz_examples(name),
        deadline=None,
        database=None,
        derandomize=not figures.SOAK,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# Hundreds of cases against a real daemon: on a busy 2-core machine this took over 120 s.
@pytest.mark.timeout(900 if figures.SOAK else 300)
def test_fuzz_control_socket(hostile_daemon: DaemonProc) -> None:
    d = hostile_daemon
    rss_before = d.rss()
    counts: dict[str, int] = dict.fromkeys(figures.FUZZ_EXAMPLES, 0)

    @_settings("random_bytes")
    @given(st.lists(st.binary(min_size=1, max_size=300), min_size=1, max_size=8))
    def random_bytes(chunks: list[bytes]) -> None:
        # A chunk that happens to be JSON (b"1", b"[]") is left out: it is not a parse error.
        lines = [c.replace(b"\n", b" ") for c in chunks if not _parses(c.replace(b"\n", b" "))]
        send_raw_lines(d, lines or [b"\xff"])
        status_ok(d)
        counts["random_bytes"] += 1  # counted once the case passed

    @_settings("invalid_utf8")
    @given(st.data())
    def invalid_utf8(data: st.DataObject) -> None:
        lines = [_invalid_utf8_line(data.draw) for _ in range(data.draw(st.integers(1, 4)))]
        send_raw_lines(d, lines)
        status_ok(d)
        counts["invalid_utf8"] += 1  # counted once the case passed

    @_settings("json_values")
    @given(st.lists(json_values, min_size=1, max_size=6))
    def arbitrary_json(values: list[Any]) -> None:
        send_values(d, values)
        status_ok(d)
        counts["json_values"] += 1  # counted once the case passed

    @_settings("request_shapes")
    @given(st.lists(requests(), min_size=1, max_size=6))
    def request_shapes(values: list[dict[str, Any]]) -> None:
        send_values(d, values)
        status_ok(d)
        counts["request_shapes"] += 1  # counted once the case passed

    @_settings("batches")
    @given(
        st.lists(
            st.lists(requests() | json_values, min_size=0, max_size=12), min_size=1, max_size=3
        )
    )
    def batches(values: list[list[Any]]) -> None:
        send_values(d, values)
        status_ok(d)
        counts["batches"] += 1  # counted once the case passed

    @_settings("half_lines_then_eof")
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
        status_ok(d)
        counts["half_lines_then_eof"] += 1  # counted once the case passed

    for run in (random_bytes, invalid_utf8, arbitrary_json, request_shapes, batches, half_lines):
        run()
    growth = d.rss() - rss_before
    figures.record(
        "hostile_input",
        fuzz_cases_run=sum(counts.values()),
        fuzz_rss_growth_kib=growth // 1024,
    )
    assert counts == {k: figures.fuzz_examples(k) for k in figures.FUZZ_EXAMPLES}, counts
    assert growth < RSS_GROWTH_BOUND


def _parses(line: bytes) -> bool:
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return False
    return True


# --- fixed hostile inputs ------------------------------------------------------------------------

STATUS = b'{"jsonrpc":"2.0","id":"after","method":"daemon.status"}\n'


def test_fixed_hostile_inputs(hostile_daemon: DaemonProc) -> None:
    d = hostile_daemon
    rss_before = d.rss()
    tried: list[str] = []

    def case(name: str) -> None:
        tried.append(name)

    def one_error(data: bytes, code: int | None, kind: str | None = None) -> dict[str, Any]:
        replies = exchange(d, data)
        assert check_replies(replies, ["after", 1, 7]) == len(replies)
        first = json.loads(replies[0])
        assert "error" in first, first
        if code is not None:
            assert first["error"]["code"] == code, first
        if kind is not None:
            assert first["error"]["data"]["kind"] == kind, first
        if data.endswith(STATUS):
            # The connection survived: the request after the hostile line was answered.
            assert json.loads(replies[-1])["id"] == "after", replies[-1][:200]
            assert len(replies) == 2, [r[:100] for r in replies]
        return dict(first)

    deep = 100_000
    case("deep_array_100k")
    one_error(b"[" * deep + b"]" * deep + b"\n" + STATUS, -32700, "parse_error")
    case("deep_object_100k")
    one_error(b'{"a":' * deep + b"1" + b"}" * deep + b"\n" + STATUS, -32700, "parse_error")

    case("deep_params_900")
    # Deep but parseable: a tool call whose arguments nest 900 levels (the session's JSON
    # encoder and the audit digest see it). Any clean reply is fine; the daemon must live on.
    with d.client() as c:
        conv = c.call("conversations.create", {"mcpServers": ["k"], "approvalLevel": "full_access"})
        turn = c.call("turns.begin", {"conversationId": conv["id"]})
    echo = bound_name(turn, "k", "echo")
    nested = "[" * 900 + "]" * 900
    request = (
        f'{{"jsonrpc":"2.0","id":7,"method":"turns.callTool","params":{{"turnId":"{turn["turnId"]}",'
        f'"name":"{echo}","arguments":{{"text":"x","deep":{nested}}}}}}}\n'
    )
    replies = exchange(d, request.encode() + STATUS)
    assert check_replies(replies, [7, "after"]) == 2, [r[:300] for r in replies]

    case("huge_float")
    one_error(b'{"jsonrpc":"2.0","id":1e400,"method":"daemon.status"}\n' + STATUS, -32700)
    one_error(
        b'{"jsonrpc":"2.0","id":1,"method":"servers.get","params":{"name":1e400}}\n' + STATUS,
        -32700,
    )
    case("huge_int")
    big = b"1" + b"0" * 5000
    one_error(b'{"jsonrpc":"2.0","id":' + big + b',"method":"daemon.status"}\n' + STATUS, -32700)
    one_error(
        b'{"jsonrpc":"2.0","id":1,"method":"servers.logs","params":{"name":"k","tail":'
        + big
        + b"}}\n"
        + STATUS,
        -32700,
    )
    # In range for Python, out of range for every other consumer: still a clean answer.
    replies = exchange(
        d,
        b'{"jsonrpc":"2.0","id":1,"method":"servers.logs","params":{"name":"k","tail":'
        + b"1"
        + b"0" * 40
        + b"}}\n"
        + STATUS,
    )
    assert check_replies(replies, [1, "after"]) == 2

    case("huge_line_9mib")
    line = b'{"jsonrpc":"2.0","id":1,"method":"daemon.status","params":{"x":"'
    line += b"a" * (9 * 1024 * 1024) + b'"}}\n'
    one_error(line + STATUS, -32600, "message_too_large")
    case("huge_line_9mib_no_newline")
    assert exchange(d, b"b" * (9 * 1024 * 1024)) == []

    case("batch_256_junk")
    replies = exchange(d, json.dumps([{"junk": i} for i in range(256)]).encode() + b"\n")
    batch = json.loads(replies[0])
    assert isinstance(batch, list)
    assert len(batch) == 256
    assert all(m["error"]["code"] == -32600 for m in batch)
    case("batch_257")
    batch_reply = one_error(
        json.dumps(
            [{"jsonrpc": "2.0", "id": i, "method": "daemon.status"} for i in range(257)]
        ).encode()
        + b"\n"
        + STATUS,
        -32600,
    )
    assert batch_reply["id"] is None

    case("nul_and_controls")
    replies = exchange(
        d,
        b'{"jsonrpc":"2.0","id":1,"method":"daemon.status\\u0000"}\n'
        b"\x00\x00\x00\n"
        b'{"jsonrpc":"2.0","id":1,"method":"servers.get","params":{"name":"\\u0000\\u001b[31m"}}\n'
        b"\x1b[2J\x07\r\n" + STATUS,
    )
    assert check_replies(replies, [1, "after"]) == 5
    assert json.loads(replies[-1])["id"] == "after"

    status_ok(d)
    growth = d.rss() - rss_before
    figures.record("hostile_input", fixed_rss_growth_kib=growth // 1024)
    assert tried == list(figures.FIXED_HOSTILE_INPUTS)
    assert growth < RSS_GROWTH_BOUND, f"RSS grew by {growth >> 20} MiB"


# --- connection churn ----------------------------------------------------------------------------


def _churn_one(d: DaemonProc, i: int) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(BOUND)
        s.connect(str(d.socket))
        mode = i % 5
        if mode == 1:  # half a line, then gone
            s.sendall(b'{"jsonrpc":"2.0","id":1,"meth')
        elif mode == 2:  # a whole request, gone before the reply
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"servers.list"}\n')
        elif mode == 3:  # a subscription, gone before the reply (every other one: after it)
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"events.subscribe"}\n')
            if i % 2:
                s.recv(1)
        elif mode == 4:  # many requests, reset (unread data makes close send RST)
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"settings.get"}\n' * 50)
            s.recv(1)
        # mode 0: connect and close at once


def test_connection_churn(hostile_daemon: DaemonProc) -> None:
    d = hostile_daemon
    status_ok(d)
    poll_until("idle connections", lambda: d.status()["connections"] == 1)
    fds_before = d.fds()
    threads = []
    for start in range(0, figures.CONNECTION_CHURN, 50):
        batch = [
            threading.Thread(target=_churn_one, args=(d, i))
            for i in range(start, min(start + 50, figures.CONNECTION_CHURN))
        ]
        for t in batch:
            t.start()
        threads += batch
        for t in batch:
            t.join(BOUND)
    assert not any(t.is_alive() for t in threads)
    seconds = poll_until("connections back to 1", lambda: d.status()["connections"] == 1)
    poll_until("fds back to the idle count", lambda: d.fds() <= fds_before)
    figures.record(
        "hostile_input",
        churn_connections=len(threads),
        churn_fds_before=fds_before,
        churn_fds_after=d.fds(),
        churn_settle_seconds=round(seconds, 2),
    )


# --- known bugs ----------------------------------------------------------------------------------

BATCHED_SUBSCRIBE = (
    b'[{"jsonrpc":"2.0","id":1,"method":"daemon.status"},'
    b'{"jsonrpc":"2.0","id":2,"method":"events.subscribe"}]\n'
)


def _batched_subscribe_then_eof(d: DaemonProc) -> bool:
    """Send a batch that subscribes, half-close; True if the daemon closed within 3 s."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(3)
        s.connect(str(d.socket))
        s.sendall(BATCHED_SUBSCRIBE)
        s.shutdown(socket.SHUT_WR)
        try:
            while s.recv(65536):
                pass
        except TimeoutError:
            return False
    return True


def test_batched_subscribe_then_eof_closes_the_connection(
    spawn_daemon: Any,
) -> None:
    d = spawn_daemon()
    d.write_settings({})
    d.start()
    closed = _batched_subscribe_then_eof(d)
    connections = d.status()["connections"]
    d.kill()
    assert closed, "no EOF: the daemon kept the connection open"
    assert connections == 1, f"{connections} connections (1 is this status request)"


def test_shutdown_is_bounded_with_a_lingering_connection(spawn_daemon: Any) -> None:
    from meworkd.app.daemon import SHUTDOWN_BOUND

    d = spawn_daemon()
    d.write_settings({})
    d.start()
    _batched_subscribe_then_eof(d)
    assert d.proc is not None
    d.proc.terminate()
    try:
        d.proc.wait(SHUTDOWN_BOUND)
    except subprocess.TimeoutExpired:
        d.kill()
        raise AssertionError(f"meworkd did not stop within {SHUTDOWN_BOUND} s of SIGTERM") from None


def test_huge_integer_is_a_parse_error(hostile_daemon: DaemonProc) -> None:
    """Found by this suite (fixed in 8416eae): over 4300 digits was an Internal error with a
    traceback in the log (json.loads raised a plain ValueError in Dispatcher._where)."""
    big = b"1" + b"0" * 5000
    replies = exchange(hostile_daemon, b'{"jsonrpc":"2.0","id":' + big + b',"method":"x"}\n')
    reply = json.loads(replies[0])
    assert reply["error"]["code"] == -32700, reply
    assert reply["error"]["data"]["kind"] == "parse_error", reply


def test_deep_value_does_not_break_later_writes(spawn_daemon: Any) -> None:
    d = spawn_daemon()
    d.write_settings({})
    d.start()
    deep = "[" * 600 + "]" * 600
    request = (
        '{"jsonrpc":"2.0","id":1,"method":"servers.add","params":{"name":"deep",'
        f'"server":{{"command":"true","x-deep":{deep}}}}}}}\n'
    )
    first = json.loads(exchange(d, request.encode())[0])
    accepted = "result" in first
    if not accepted:  # refusing it is fine, as a clean validation error
        assert first["error"]["data"]["kind"] in ("invalid_params", "invalid_settings"), first
    with d.client() as c:
        try:
            c.call("servers.add", {"name": "next", "server": {"command": "true"}})
            c.call("settings.get")
            if accepted:
                c.call("servers.remove", {"name": "deep"})
        finally:
            d.kill()


def test_deep_preset_does_not_break_later_writes(spawn_daemon: Any) -> None:
    d = spawn_daemon()
    d.write_settings({})
    d.start()
    deep = json.loads("[" * 600 + "]" * 600)
    with d.client() as c:
        try:
            try:
                c.call("presets.set", {"name": "p", "preset": {"mcpServers": [], "x-deep": deep}})
            except RpcError as exc:  # refusing it is fine, as a clean validation error
                if exc.kind not in ("invalid_params", "invalid_settings"):
                    raise
            c.call("servers.add", {"name": "next", "server": {"command": "true"}})
            c.call("settings.get")
        finally:
            d.kill()


def test_hand_edited_deep_value_is_reported_not_internal(spawn_daemon: Any) -> None:
    d = spawn_daemon()
    d.write_settings({}, extra={"x-deep": json.loads("[" * 600 + "]" * 600)})
    d.start()
    with d.client() as c:
        try:
            for method, params in (
                ("settings.get", None),
                ("servers.add", {"name": "a", "server": {"command": "true"}}),
            ):
                try:
                    c.call(method, params)
                except RpcError as exc:
                    # Refused like a file that does not parse is fine; an internal error is not.
                    if exc.kind != "settings_unreadable":
                        raise
        finally:
            d.kill()


def test_subscriber_that_never_reads(hostile_daemon: DaemonProc) -> None:
    """A frontend subscribes to everything and stops reading while a server floods its stderr
    (one server.log event per line): the daemon's memory stays bounded, nobody else waits, and
    the slow subscriber is told it missed events instead of being fed forever."""
    d = hostile_daemon
    rss_before = d.rss()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as slow:
        slow.settimeout(BOUND)
        slow.connect(str(d.socket))
        slow.sendall(b'{"jsonrpc":"2.0","id":1,"method":"events.subscribe"}\n')
        with d.client() as c:
            conv = c.call(
                "conversations.create", {"mcpServers": ["k"], "approvalLevel": "full_access"}
            )
            turn = c.call("turns.begin", {"conversationId": conv["id"]})
            flood = bound_name(turn, "k", "flood_stderr")
            reply = c.call(
                "turns.callTool",
                {"turnId": turn["turnId"], "name": flood, "arguments": {"bytes": 20_000_000}},
            )
            assert reply["content"][0]["text"] == "flooded", reply
            assert c.call("daemon.status")["connections"] == 2
            c.call("conversations.delete", {"id": conv["id"]})
        growth = d.rss() - rss_before
        # Now read what the slow subscriber was sent: its reply, some events, then the notice.
        buffer = b""
        while b'"events.overflowed"' not in buffer:
            chunk = slow.recv(1 << 20)
            assert chunk, "EOF before the events.overflowed notice"
            buffer += chunk
            buffer = buffer[-4096:] if b'"events.overflowed"' not in buffer else buffer
    figures.record("hostile_input", slow_subscriber_rss_growth_kib=growth // 1024)
    assert growth < RSS_GROWTH_BOUND, f"RSS grew by {growth >> 20} MiB"
