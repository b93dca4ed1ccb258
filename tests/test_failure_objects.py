"""Failure objects (docs/api.md "Failure objects"): ``kind`` and ``error`` everywhere, the old
``reason`` kept as a deprecated alias; and a start-up cut off by a turn's timeout still quotes
the stderr lines the server printed. One daemon for the module's one test."""

import sys
from pathlib import Path
from typing import Any

import pytest
from mework_client.ctl.servers_probe import format_test
from mework_client.ctl.turn import format_turn
from mework_protocol.failures import failure, failure_error, failure_kind

from tests.turn_helpers import Harness, document, mw_fixture, wait_event  # noqa: F401

pytestmark = pytest.mark.anyio

MUTE = Path(__file__).resolve().parent / "servers" / "mute_start.py"
TOKEN = "tok-5e4d3c2b1a09"


def test_the_readers_prefer_the_new_names_and_read_older_daemons_too() -> None:
    now = failure("timeout", "timed out after 1 s", server="s", reason="timed out after 1 s")
    assert (failure_kind(now), failure_error(now)) == ("timeout", "timed out after 1 s")
    old_turn = {"server": "s", "reason": "command not found: x", "kind": "command_not_found"}
    assert (failure_kind(old_turn), failure_error(old_turn)) == (
        "command_not_found",
        "command not found: x",
    )
    old_test = {"ok": False, "error": "it exited", "reason": "exited", "stderrTail": []}
    assert (failure_kind(old_test), failure_error(old_test)) == ("exited", "it exited")
    assert (failure_kind({}), failure_error({})) == (None, None)
    # A turn failure's reason is a sentence, never mistaken for a kind.
    assert failure_kind({"server": "s", "reason": "a sentence"}) is None


def test_meworkctl_prints_the_sentence_and_json_the_kind() -> None:
    # The kind is for programs (--json has it); a person reads the sentence (issue 25.7).
    turn = {"turnId": "t", "tools": [], "bindings": {}, "failures": []}
    turn["failures"] = [failure("timeout", "timed out after 1 s", server="docs")]
    assert format_turn(turn).splitlines()[-1] == "docs: timed out after 1 s"
    tested = failure("exited", "it exited with code 3", ok=False, server="fs", stderrTail=[])
    assert format_test(tested).splitlines() == ["fs: it exited with code 3"]


def _keys(obj: dict[str, Any]) -> set[str]:
    return set(obj) - {"stderrTail", "durationMs", "time", "conversation", "ok", "server"}


async def test_every_failure_says_kind_and_error(mw: Harness) -> None:
    mute = {
        "command": sys.executable,
        "args": [str(MUTE)],
        "timeoutSeconds": 1,
        "env": {"API_TOKEN": TOKEN},
    }
    servers = {"missing": {"command": "/nonexistent/mework-x"}, "mute": mute, "bad": {"args": 3}}
    await mw.start(document(servers))
    events = await mw.connect(["server.status"])

    tested = await mw.call("servers.test", {"name": "missing"})
    assert tested["ok"] is False
    assert tested["kind"] == tested["reason"] == "command_not_found"  # reason: the old name
    assert "/nonexistent/mework-x" in tested["error"]

    prepared = await mw.call(
        "conversations.prepare", {"conversationId": await mw.conversation(["bad"])}
    )
    (invalid,) = prepared["failures"]
    assert invalid["kind"] == "invalid_entry"
    assert invalid["error"] == invalid["reason"]  # reason: the old name of the sentence

    conversation = await mw.conversation(["bad", "missing", "mute"])
    turn = await mw.begin(conversation)
    failures = {f["server"]: f for f in turn["failures"]}
    assert {s: f["kind"] for s, f in failures.items()} == {
        "bad": "invalid_entry",
        "missing": "command_not_found",
        "mute": "timeout",
    }
    for f in failures.values():
        assert _keys(f) == {"kind", "error", "reason"}
        assert f["reason"] == f["error"]

    # The turn's timeout cut mute's start-up off: its failure still quotes what it printed.
    failed = await wait_event(
        events,
        "server.status",
        lambda d: d["server"] == "mute" and d["status"] == "failed" and d["kind"] == "timeout",
    )
    tail = [f"mute: starting {i}" for i in range(3)] + ["mute: token=[redacted]"]
    assert failed["stderrTail"] == tail
    last = (await mw.call("servers.get", {"name": "mute"}))["lastError"]
    assert (last["kind"], last["stderrTail"]) == ("timeout", tail)
    assert _keys(last) == {"kind", "error"}
