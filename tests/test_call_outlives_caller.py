"""A call does not outlive the program that made it (issue 25.4), against a real daemon.

meworkctl killed outright (its connection ends while the call waits for approval): the daemon
cancels the call and its approval, as Ctrl-C does. SIGTERM and SIGHUP are Ctrl-C to meworkctl.
meworkd dying while meworkctl waits: it says so and exits with the not-running status.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.test_ctl import (
    RUN_TIMEOUT,
    Daemon,
    daemon_fixture,  # noqa: F401  (the daemon fixture: one daemon for this module)
    ok,
    ok_json,
    start_daemon,
    stop_daemon,
)
from tests.test_ctl_interactive import begin_echo, close_call, read_line, start_call


class Events:
    """A real connection subscribed to the approval events (subscribed when constructed)."""

    def __init__(self, daemon: Daemon) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(RUN_TIMEOUT)  # a lost event fails the test, it does not hang it
        self.sock.connect(str(daemon.socket))
        self.lines = self.sock.makefile("rb")
        topics = ["approval.requested", "approval.resolved"]
        request = {"jsonrpc": "2.0", "id": 1, "method": "events.subscribe"}
        self.sock.sendall(json.dumps(request | {"params": {"topics": topics}}).encode() + b"\n")
        while "id" not in json.loads(self.lines.readline()):
            pass  # (no event comes before the reply; skipped all the same)

    def next(self, topic: str) -> dict[str, object]:
        while True:
            message = json.loads(self.lines.readline())
            if message["params"]["topic"] == topic:
                data: dict[str, object] = message["params"]["data"]
                return data

    def close(self) -> None:
        self.lines.close()
        self.sock.close()


def test_a_killed_meworkctl_takes_its_waiting_call_with_it(daemon: Daemon) -> None:
    turn, echo = begin_echo(daemon, "ko1")
    events = Events(daemon)
    call = start_call(daemon, turn, echo, stdin=subprocess.DEVNULL)
    try:
        asked = events.next("approval.requested")
        call.kill()  # no Ctrl-C, no cancel: only its connection ends
        call.communicate()
        resolved = events.next("approval.resolved")
    finally:
        close_call(call)
        events.close()
    assert resolved["approvalId"] == asked["approvalId"]
    assert resolved["decidedBy"] == "cancelled"
    assert ok(daemon, "approvals", "list") == "No pending approvals.\n"
    audit = ok_json(daemon, "audit", "--conversation", "c-ko1")["entries"]
    assert [(e["decision"], e["decidedBy"]) for e in audit] == [("deny", "cancelled")]


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_sigterm_and_sighup_cancel_the_call_as_ctrl_c_does(
    daemon: Daemon, stop_signal: signal.Signals
) -> None:
    name = f"ko-{stop_signal.name.lower()}"
    turn, echo = begin_echo(daemon, name)
    call = start_call(daemon, turn, echo, stdin=subprocess.DEVNULL)
    try:
        assert read_line(call.stderr).startswith("Waiting for approval of echo")
        call.send_signal(stop_signal)
        out, err = call.communicate(timeout=RUN_TIMEOUT)
    finally:
        close_call(call)
    assert call.returncode == 130
    assert out == ""
    assert "meworkctl: interrupted: cancelled the call ctl-" in err
    audit = ok_json(daemon, "audit", "--conversation", f"c-{name}")["entries"]
    assert [(e["decision"], e["decidedBy"]) for e in audit] == [("deny", "cancelled")]


@pytest.mark.parametrize("how", ["dies", "shuts down"])
def test_meworkd_stopping_while_the_call_waits_is_said_and_exits_not_running(how: str) -> None:
    with tempfile.TemporaryDirectory(prefix="mw-", dir="/tmp") as d:
        own = start_daemon(Path(d))
        try:
            turn, echo = begin_echo(own, "kd")
            call = start_call(own, turn, echo, stdin=subprocess.DEVNULL)
            try:
                assert read_line(call.stderr).startswith("Waiting for approval of echo")
                assert read_line(call.stderr).startswith("Answer it elsewhere")
                if how == "dies":  # no shutdown, no denial, only closed connections
                    own.proc.kill()
                else:  # as systemctl stop does: the waiting call is answered shutting_down
                    own.proc.send_signal(signal.SIGTERM)
                own.proc.wait()
                out, err = call.communicate(timeout=RUN_TIMEOUT)
            finally:
                close_call(call)
        finally:
            stop_daemon(own)
            shutil.rmtree(Path(d) / "run", ignore_errors=True)
    assert call.returncode == 3, (out, err)
    assert out == ""
    assert err.startswith("meworkctl: meworkd stopped while the call waited")
    assert "answered elsewhere" not in err


def test_a_half_closed_connection_still_gets_its_calls_result(daemon: Daemon) -> None:
    """Half-closing (no more requests) is not going away: the peer waits for its replies."""
    turn, echo = begin_echo(daemon, "ko-half")
    events = Events(daemon)
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "turns.callTool",
        "params": {"turnId": turn, "name": echo, "arguments": {"text": "hi"}},
    }
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as peer:
        peer.settimeout(RUN_TIMEOUT)
        peer.connect(str(daemon.socket))
        peer.sendall(json.dumps(request).encode() + b"\n")
        try:
            asked = events.next("approval.requested")
            peer.shutdown(socket.SHUT_WR)
            ok(daemon, "approvals", "allow", str(asked["approvalId"]))
        finally:
            events.close()
        reply = json.loads(peer.makefile("rb").readline())
    assert reply["result"]["content"] == [{"type": "text", "text": "hi"}]
