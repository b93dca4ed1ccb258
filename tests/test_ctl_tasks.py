"""meworkctl tasks: MCP tasks listed, shown and cancelled, from real meworkctl processes.

One daemon for the module (each test has its own conversation) with the tasks fixture server
(tests/servers/tasks.py) over real Streamable HTTP. A call that waits for its task runs as a
``meworkctl call`` process; the tests wait for the task on the output of ``meworkctl events``.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mework_client.ctl.tasks import format_task, format_tasks

from tests.daemon_helpers import serving_for_module
from tests.test_ctl import (
    MEWORKCTL,
    RUN_TIMEOUT,
    Daemon,
    ok,
    ok_json,
    run_ctl,
    start_daemon,
    stop_daemon,
)

TASKS_SERVER = str(Path(__file__).parent / "servers" / "tasks.py")


@pytest.fixture(scope="module")
def tasks_url() -> Iterator[str]:
    with serving_for_module(TASKS_SERVER, "--http") as base:
        yield f"{base}/mcp"


@pytest.fixture(scope="module", name="daemon")
def daemon_fixture(tasks_url: str) -> Iterator[Daemon]:
    with tempfile.TemporaryDirectory(prefix="mw-", dir="/tmp") as d:
        running = start_daemon(Path(d))
        try:
            ok(running, "servers", "add", "work", "--url", tasks_url)
            yield running
        finally:
            stop_daemon(running)


class Events:
    """``meworkctl events`` on the task topics: the tests wait on the lines it prints."""

    def __init__(self, daemon: Daemon) -> None:
        topics = ["task.started", "task.input_required", "task.completed", "task.failed"]
        self.proc = subprocess.Popen(
            [str(MEWORKCTL), "--socket", str(daemon.socket), "events", *topics],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=daemon.env(),
        )
        assert self.proc.stderr is not None
        assert self.proc.stderr.readline().startswith("Listening for events")

    def until(self, topic: str, call_id: str) -> dict[str, Any]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = json.loads(line)
            if event["topic"] == topic and event["data"]["callId"] == call_id:
                data: dict[str, Any] = event["data"]
                return data
        raise AssertionError(f"meworkctl events ended before {topic} of {call_id}")

    def close(self) -> None:
        self.proc.kill()
        self.proc.communicate(timeout=RUN_TIMEOUT)


@pytest.fixture
def events(daemon: Daemon) -> Iterator[Events]:
    watching = Events(daemon)
    try:
        yield watching
    finally:
        watching.close()


def begin(daemon: Daemon, conversation: str) -> tuple[str, dict[str, str]]:
    """A conversation using ``work`` at full_access, a turn, and its tools' bound names."""
    ok(daemon, "conv", "create", "--id", conversation, "--server", "work", "--level", "full_access")
    begun = ok_json(daemon, "turn", "begin", conversation)
    names = {b["tool"]: name for name, b in begun["bindings"].items()}
    return begun["turnId"], names


def start_call(daemon: Daemon, turn: str, name: str, call_id: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(MEWORKCTL), "--socket", str(daemon.socket), "call", turn, name, "--call-id", call_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=daemon.env(),
    )


def fields(shown: str) -> dict[str, str]:
    """``tasks show``'s ``key: value`` lines."""
    pairs = (line.partition(":") for line in shown.splitlines())
    return {key: value.strip() for key, _, value in pairs}


def row_of(listing: str, call_id: str) -> str:
    return next(line for line in listing.splitlines() if call_id in line)


def test_a_running_task_is_listed_shown_and_cancelled(daemon: Daemon, events: Events) -> None:
    turn, names = begin(daemon, "t-forever")
    call = start_call(daemon, turn, names["forever"], "c-forever")
    try:
        events.until("task.started", "c-forever")
        listing = ok(daemon, "tasks", "--open")
        head = listing.splitlines()[0].split()
        assert head == ["STATUS", "SERVER/TOOL", "CONV", "AGE", "CALL", "MESSAGE"]
        row = row_of(listing, "c-forever").split()
        assert row[:3] == ["working", "work/forever", "t-forever"]
        assert row[4] in ("s", "min")  # the age: "N s"
        assert row[5] == "c-forever"
        shown = ok(daemon, "tasks", "show", "c-forever")
        assert fields(shown)["status"] == "working"
        assert "followed now (meworkd polls it)" in shown
        assert "outlives a restart of meworkd" in shown
        assert fields(shown)["conversation"] == "t-forever"
        as_json = ok_json(daemon, "tasks", "show", "c-forever")
        assert as_json["followed"] is True
        assert "ok  cancelled c-forever" in ok(daemon, "tasks", "cancel", "c-forever")
        out, _err = call.communicate(timeout=RUN_TIMEOUT)
        assert "cancel" in out  # the call's reply says its task was cancelled
        assert events.until("task.failed", "c-forever")["status"] == "cancelled"
        again = ok(daemon, "tasks", "cancel", "c-forever")
        assert again.strip() == "c-forever had ended already: nothing to cancel"
        assert ok_json(daemon, "tasks", "cancel", "c-forever") == {"cancelled": False}
        shown = ok(daemon, "tasks", "show", "c-forever")
        assert fields(shown)["status"] == "cancelled"
        assert "no longer followed (it ended)" in shown
        assert "c-forever" not in ok(daemon, "tasks", "--open")
        assert row_of(ok(daemon, "tasks"), "c-forever").split()[0] == "cancelled"
    finally:
        if call.poll() is None:
            call.kill()
        call.communicate()


def test_a_task_asking_points_to_the_question_and_lists_by_conversation(
    daemon: Daemon, events: Events
) -> None:
    turn, names = begin(daemon, "t-ask")
    finished = ok_json(daemon, "call", turn, names["job"], '{"seconds": 0}', "--call-id", "c-job")
    assert finished["content"][0]["text"] == "done"
    call = subprocess.Popen(
        [str(MEWORKCTL), "--socket", str(daemon.socket), "call", turn, names["ask"],
         '{"message": "which colour?"}', "--call-id", "c-ask"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=daemon.env(),
    )  # fmt: skip
    try:
        events.until("task.input_required", "c-ask")
        listing = ok(daemon, "tasks", "--conversation", "t-ask")
        lines = listing.splitlines()
        assert [line.split()[0] for line in lines[1:3]] == ["needs", "completed"]  # newest first
        assert "c-ask" in lines[1]
        assert "c-job" in lines[2]
        assert lines[-1] == "a task that needs your answer: meworkctl requests watch"
        listed = ok_json(daemon, "tasks", "--conversation", "t-ask", "--open")
        assert [t["callId"] for t in listed["tasks"]] == ["c-ask"]
        assert fields(ok(daemon, "tasks", "show", "c-ask"))["status"] == "needs your answer"
        ok(daemon, "tasks", "cancel", "c-ask")
        call.communicate(timeout=RUN_TIMEOUT)
    finally:
        if call.poll() is None:
            call.kill()
        call.communicate()


def test_no_tasks_unknown_ids_and_conversations(daemon: Daemon) -> None:
    ok(daemon, "conv", "create", "--id", "t-none", "--server", "work")
    assert ok(daemon, "tasks", "--conversation", "t-none") == "No MCP tasks.\n"
    assert ok_json(daemon, "tasks", "--conversation", "t-none") == {"tasks": []}
    for verb in ("show", "cancel"):
        done = run_ctl(daemon, "tasks", verb, "no-such-call")
        assert done.returncode == 1
        assert done.stdout == ""
        assert "no MCP task of a call 'no-such-call'" in done.stderr
    done = run_ctl(daemon, "--json", "tasks", "show", "no-such-call")
    assert done.returncode == 1
    assert "(task_not_found)" in done.stderr
    done = run_ctl(daemon, "tasks", "--conversation", "no-such-conv")
    assert done.returncode == 1
    assert "no-such-conv" in done.stderr
    for line, usage in (
        (["tasks", "show"], "usage: meworkctl tasks show "),
        (["tasks", "cancel"], "usage: meworkctl tasks cancel "),
        (["tasks", "bogus"], "usage: meworkctl tasks [--conversation ID]"),
        (["tasks", "x", "y"], "usage: meworkctl tasks [--conversation ID]"),
    ):
        done = run_ctl(daemon, *line)
        assert done.returncode == 2, line
        assert done.stderr.startswith(usage), done.stderr
    done = run_ctl(daemon, "tasks", "bogus")
    assert "invalid choice: 'bogus' (choose from 'show', 'cancel')" in done.stderr


def test_the_words_of_a_task_without_a_daemon() -> None:
    task = {
        "callId": "c7", "conversationId": "demo", "turnId": "t9", "server": "research",
        "tool": "deep_search", "name": "mcp__research__deep_search", "status": "working",
        "message": "Analyzing content...", "createdAt": "2026-12-06T10:01:02.000Z",
        "updatedAt": "2026-12-06T10:01:05.000Z", "resumable": False, "followed": False,
    }  # fmt: skip
    row = format_tasks({"tasks": [task]}).splitlines()[1]
    assert row.split()[:3] == ["working", "research/deep_search", "demo"]
    assert row.endswith("Analyzing content...")
    shown = format_task(task)
    assert "ends with meworkd (a stdio server's task)" in shown
    assert "not followed now (it is followed again when meworkd next starts)" in shown
    assert format_tasks({"tasks": []}) == "No MCP tasks."
    assert format_tasks({}) == "No MCP tasks."
