"""Talking bytes to a real daemon's control socket, and what its replies must be.

Shared by the hostile-input tests (tests/reliability/test_hostile_input.py) and the fuzz files
(test_fuzz_socket_*.py): every reply line is valid JSON-RPC 2.0 (``jsonrpc`` "2.0", an ``id``,
exactly one of ``result`` or ``error``, the error with an integer ``code`` and a string
``message``) or an event notification; no reply invents an id the client never sent; a line that
must be answered is answered exactly once, and after EOF the daemon closes.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any, Protocol

from tests.reliability.harness import BOUND, FAKE, DaemonProc, daemon_dir, new_mark, server_entry

RSS_GROWTH_BOUND = 64 * 1024 * 1024


@contextlib.contextmanager
def hostile_daemon_proc(**more: dict[str, Any]) -> Iterator[DaemonProc]:
    """One daemon for a whole module of hostile input (it must stop cleanly afterwards), with
    the kitchen server as ``k`` and the entries ``more``."""
    with daemon_dir() as root:
        d = DaemonProc(root)
        d.write_settings({"k": server_entry(FAKE, mark=new_mark(), timeout=20), **more})
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


class Peer(Protocol):
    """Where a fuzz case goes: :class:`SocketPeer`, or the in-process dispatcher
    (tests/reliability/in_process.py)."""

    def exchange(self, data: bytes) -> list[bytes]: ...
    def status_ok(self) -> None: ...
    def rss(self) -> int: ...


def status_ok(d: DaemonProc) -> None:
    with d.client() as c:
        assert c.call("daemon.status")["pid"] == d.pid


class SocketPeer:
    """A ``meworkd`` subprocess: each exchange on a fresh connection, half-closed after."""

    def __init__(self, daemon: DaemonProc) -> None:
        self.daemon = daemon

    def exchange(self, data: bytes) -> list[bytes]:
        return exchange(self.daemon, data)

    def status_ok(self) -> None:
        status_ok(self.daemon)

    def rss(self) -> int:
        return self.daemon.rss()


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


def send_values(peer: Peer, values: list[Any], tail: bytes = b"") -> None:
    """One line per value (``json.dumps``), then ``tail`` unterminated; check the replies."""
    data = b"".join(json.dumps(v).encode() + b"\n" for v in values) + tail
    sent_ids = [i for v in values for i in _ids_in(v)]
    responses = check_replies(peer.exchange(data), sent_ids)
    verdicts = [answered(v) for v in values]
    assert sum(v is True for v in verdicts) <= responses <= sum(v is not False for v in verdicts)


def send_raw_lines(peer: Peer, lines: list[bytes]) -> None:
    """Lines that are not JSON: every non-blank one gets exactly one parse error."""
    data = b"".join(line + b"\n" for line in lines)
    replies = peer.exchange(data)
    assert check_replies(replies, []) == len(replies)
    expected = sum(1 for line in lines if line.strip())
    assert len(replies) == expected, (len(replies), expected)
    for reply in replies:
        assert json.loads(reply)["error"]["code"] == -32700
