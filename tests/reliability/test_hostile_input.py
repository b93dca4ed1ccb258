"""Hostile bytes on the control socket, and connection churn (issue 8, part 3).

One ``meworkd`` subprocess serves the whole module. A fixed list of hostile inputs adds what the
random generation of the fuzz (test_fuzz_socket_*.py, tests/reliability/fuzzing.py) rarely
reaches: 100k deep nesting, numbers out of range, 9 MiB lines, batch limits, NUL bytes. For every
case the replies are checked as in tests/reliability/control_socket.py, and the daemon answers
``daemon.status`` afterwards.

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
from mework_client import RpcError

from tests.reliability import figures
from tests.reliability.control_socket import (
    RSS_GROWTH_BOUND,
    check_replies,
    exchange,
    hostile_daemon_proc,
    status_ok,
)
from tests.reliability.harness import (
    BOUND,
    FAKE,
    DaemonProc,
    bound_name,
    new_mark,
    poll_until,
    server_entry,
)

# The kitchen server never answers a call whose arguments nest 900 deep (deep_params_900): the
# daemon's call time-out is the reply, so it must end well within BOUND, which the test waits.
DEEP_CALL_TIMEOUT = 8  # seconds; also bounds opening its session, slow on a busy machine


@pytest.fixture(scope="module")
def hostile_daemon() -> Iterator[DaemonProc]:
    deep = server_entry(FAKE, mark=new_mark(), timeout=DEEP_CALL_TIMEOUT)
    with hostile_daemon_proc(deep=deep) as d:
        yield d


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
        conv = c.call(
            "conversations.create", {"mcpServers": ["deep"], "approvalLevel": "full_access"}
        )
        turn = c.call("turns.begin", {"conversationId": conv["id"]})
    echo = bound_name(turn, "deep", "echo")
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


def test_batched_subscribe_then_eof_closes_the_connection(hostile_daemon: DaemonProc) -> None:
    d = hostile_daemon
    poll_until("idle connections", lambda: d.status()["connections"] == 1)
    closed = _batched_subscribe_then_eof(d)
    connections = d.status()["connections"]
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


# On the module's daemon, under names of their own (its later tests, and its clean stop at the
# module's end, are more later writes).
def test_deep_value_does_not_break_later_writes(hostile_daemon: DaemonProc) -> None:
    d = hostile_daemon
    deep = "[" * 600 + "]" * 600
    request = (
        '{"jsonrpc":"2.0","id":1,"method":"servers.add","params":{"name":"deep-value",'
        f'"server":{{"command":"true","x-deep":{deep}}}}}}}\n'
    )
    first = json.loads(exchange(d, request.encode())[0])
    accepted = "result" in first
    if not accepted:  # refusing it is fine, as a clean validation error
        assert first["error"]["data"]["kind"] in ("invalid_params", "invalid_settings"), first
    with d.client() as c:
        c.call("servers.add", {"name": "deep-value-next", "server": {"command": "true"}})
        c.call("settings.get")
        if accepted:
            c.call("servers.remove", {"name": "deep-value"})
        c.call("servers.remove", {"name": "deep-value-next"})


def test_deep_preset_does_not_break_later_writes(hostile_daemon: DaemonProc) -> None:
    d = hostile_daemon
    deep = json.loads("[" * 600 + "]" * 600)
    with d.client() as c:
        accepted = True
        try:
            c.call("presets.set", {"name": "deep-p", "preset": {"mcpServers": [], "x-deep": deep}})
        except RpcError as exc:  # refusing it is fine, as a clean validation error
            if exc.kind not in ("invalid_params", "invalid_settings"):
                raise
            accepted = False
        c.call("servers.add", {"name": "deep-preset-next", "server": {"command": "true"}})
        c.call("settings.get")
        if accepted:
            c.call("presets.remove", {"name": "deep-p"})
        c.call("servers.remove", {"name": "deep-preset-next"})


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
