"""What the UI writes for each state: a symbol and a word, the reason and the fix."""

import pytest

pytest.importorskip("textual")

from mework_ui.fields import FieldError, parse_field, show_field
from mework_ui.questions import approval_text, typed
from mework_ui.tabs import approval_words
from mework_ui.words import call_card, failure_text, server_status, time_left_text


@pytest.mark.parametrize(
    ("entry", "failure", "shown"),
    [
        ({"status": "connected", "sessions": 2}, None, "● connected (2)"),
        ({"status": "enabled"}, {"reason": "exited"}, "✘ failed: exited"),
        ({"status": "connected", "sessions": 1}, {"reason": "exited"}, "● connected (1)"),
        ({"status": "disabled"}, {"reason": "exited"}, "– disabled"),
        ({"status": "invalid"}, None, "! invalid"),
        ({"status": "enabled", "auth": {"state": "required"}}, None, "⚷ needs login"),
        ({"status": "enabled", "auth": {"state": "authorized"}}, None, "○ idle"),
    ],
)
def test_status_words(entry: dict[str, object], failure: dict[str, str] | None, shown: str) -> None:
    assert server_status(entry, failure) == shown


def test_a_failure_says_why_and_what_to_do() -> None:
    text = failure_text(
        {"reason": "command_not_found", "error": "command not found: x", "stderrTail": ["boom"]}
    )
    assert text.splitlines() == [
        "✘ command_not_found: command not found: x",
        "  hint: the daemon's PATH is short under systemd: use an absolute command",
        "  stderr: boom",
    ]


def test_fields_round_trip_and_refuse_clearly() -> None:
    entry = {"args": ["--dir", "my files"], "env": {"A": "1 2"}, "timeoutSeconds": 60.0}
    assert parse_field("args", show_field("args", entry)) == entry["args"]
    assert parse_field("env", show_field("env", entry)) == entry["env"]
    assert show_field("timeoutSeconds", entry) == "60"
    assert parse_field("url", "  ") is None  # an emptied field removes the key
    with pytest.raises(FieldError, match="NAME=value"):
        parse_field("env", "TOKEN")
    with pytest.raises(FieldError, match="unbalanced quotes"):
        parse_field("args", "'open")
    with pytest.raises(FieldError, match="number of seconds"):
        parse_field("timeoutSeconds", "soon")


def test_form_answers_take_the_schemas_types() -> None:
    assert typed("42", {"type": "integer"}) == 42
    assert typed("yes", {"type": "boolean"}) is True
    assert typed("4.5", {"type": "number"}) == 4.5
    assert typed("many", {"type": "integer"}) == "many"  # the daemon names the problem


def test_time_left_to_answer() -> None:
    assert time_left_text(582.4) == "⌛ 9:42 left to answer"
    assert time_left_text(61) == "⌛ 1:01 left to answer"
    assert time_left_text(0.0) == "⌛ time is up: meworkd gives up waiting"
    assert time_left_text(None) == ""


def test_tool_cards_say_what_was_decided_by_whom() -> None:
    card = {"server": "time", "tool": "now", "decision": "requested"}
    assert call_card(card, waiting=True) == (
        "⏳ time · now · waiting for approval: y allow · c conversation · n deny"
    )
    assert call_card(card, waiting=False) == "… time · now · running"
    done = {**card, "decision": "allow", "decidedBy": "level", "durationMs": 1520.3}
    assert call_card({**done, "replyBytes": 120}, False) == (
        "✓ time · now · allowed by level · 1.5 s · 120 B"
    )
    assert call_card({**done, "replyBytes": 4096, "isError": True}, False) == (
        "✘ time · now · error · allowed by level · 1.5 s · 4.0 KB"
    )
    denied = {**card, "decision": "deny", "decidedBy": "timeout", "reason": "nobody answered"}
    assert call_card(denied, False) == "✘ time · now · denied by timeout: nobody answered"


def test_a_daemon_failure_says_its_kind() -> None:
    """lastError and server.status failed say `kind` where servers.test says `reason`."""
    failure = {"kind": "connect_failed", "error": "connection refused", "stderrTail": []}
    assert server_status({"status": "enabled"}, failure) == "✘ failed: connect_failed"
    assert failure_text(failure).splitlines() == [
        "✘ connect_failed: connection refused",
        "  hint: nothing answers at the URL: is the server running?",
    ]


def test_a_tool_switch_states_its_effect() -> None:
    must_ask = {"name": "t", "_meta": {"anthropic/requiresUserInteraction": True}}
    not_declared = {"name": "t", "_meta": {"anthropic/requiresUserInteraction": False}}
    assert approval_words("t", must_ask, set(), set()) == "⚑ asks every call (server)"
    assert approval_words("t", not_declared, set(), set()) == "level decides"
    assert approval_words("t", not_declared, set(), {"t"}) == "asks every call"
    assert approval_words("t", must_ask, {"t"}, set()) == "— not offered"


def test_a_views_own_call_says_so_on_its_card_and_approval() -> None:
    card = {
        "server": "s",
        "tool": "bump",
        "decision": "allow",
        "decidedBy": "user",
        "origin": "app",
    }
    assert call_card(card, False).startswith("✓ s · bump (asked by its view) · allowed by user")
    asked = {"server": "s", "tool": "bump", "origin": "app", "reason": "asks"}
    assert "asked by the tool's view · asks" in approval_text(asked, "1 of 1")
