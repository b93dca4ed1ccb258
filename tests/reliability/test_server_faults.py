"""MCP servers that misbehave, against one ``meworkd`` subprocess (issue 8, part 1).

Every scenario runs its fault in a conversation of its own while a healthy kitchen server in
another conversation keeps answering echo calls, and then checks four things:

* the faulty call (or the turn's discovery, for start-up faults) gets a clear error, within the
  server's ``timeoutSeconds`` (2) plus a small scheduling slack;
* the daemon's RSS (it runs as a subprocess, so the figure is its own) stays bounded;
* the healthy conversation answered *while* a slow fault was pending, and answers afterwards;
* once the conversation is deleted no process is left: no child of the daemon and no process
  anywhere that carries the scenario's ``MW_REL_MARK`` (grandchildren inherit it).
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import psutil
import pytest
from mework_client import RpcError

from tests.reliability import figures
from tests.reliability.harness import (
    FAKE,
    LOCAL_SERVERS,
    MARK_VAR,
    RAW_BAD,
    DaemonProc,
    HttpFixture,
    bound_name,
    call,
    daemon_dir,
    group_members,
    marked_pids,
    new_mark,
    poll_until,
    process_groups,
    server_entry,
    text_of,
    wait_marked_gone,
    wait_until,
)

HOSTILE = str(LOCAL_SERVERS / "hostile.py")
TIMEOUT = 2  # every fault server's timeoutSeconds
STARTUP_TIMEOUT = 20  # while a call-phase scenario's server starts (see test_server_fault)
# A reply due at the timeout may come this much later on a busy 2-core machine: the event loop
# has other work (the healthy conversation's calls, the flood's stderr) between the deadline and
# the reply being written.
SLACK = 1.0
RSS_GROWTH_BOUND = 48 * 1024 * 1024  # per scenario, measured after the fault's session closed
# While a fault is pending the healthy conversation is called this often: often enough to see
# it answer throughout, where calling flat out cost more CPU than all the faults together.
ECHO_EVERY = 0.1
HEALTHY_MARK = new_mark()
HEALTHY_CONV = "healthy-conversation"


@dataclass(frozen=True)
class Fault:
    id: str
    entry: Callable[[str, str], dict[str, Any]]  # (mark, url) -> settings entry
    expect: str  # regex the error text must match
    phase: str = "call"  # "begin": the fault shows in turns.begin's failures
    tool: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    http_mode: str | None = None
    slow: bool = False  # takes about the timeout: the healthy conversation must answer meanwhile
    stderr_expect: str | None = None  # a line the server's log ring must hold afterwards


def fake(*args: str) -> Callable[[str, str], dict[str, Any]]:
    return lambda mark, _url: server_entry(FAKE, *args, mark=mark, timeout=TIMEOUT)


def raw_bad(mode: str) -> Callable[[str, str], dict[str, Any]]:
    return lambda mark, _url: server_entry(RAW_BAD, "--mode", mode, mark=mark, timeout=TIMEOUT)


def hostile(*args: str) -> Callable[[str, str], dict[str, Any]]:
    return lambda mark, _url: server_entry(HOSTILE, *args, mark=mark, timeout=TIMEOUT)


def http(_mark: str, url: str) -> dict[str, Any]:
    return {"type": "streamable_http", "url": url, "timeoutSeconds": TIMEOUT}


TIMED_OUT = rf"timed out after {TIMEOUT} s"
FAULTS = [
    Fault("exit_at_start", fake("--exit-at-start", "3"), r"exited with code 3", "begin"),
    Fault("crash_mid_call", fake(), r"closed the connection during the call", tool="die"),
    Fault(
        "hang_call",
        fake(),
        TIMED_OUT,
        tool="slow",
        arguments={"seconds": 3600},
        slow=True,
        stderr_expect="kitchen: slow cancelled",
    ),
    Fault("silent_call", raw_bad("silent"), TIMED_OUT, tool="t", slow=True),
    Fault(
        "hang_initialize",
        fake("--hang-initialize"),
        TIMED_OUT,
        "begin",
        slow=True,
    ),
    Fault(
        "flood_stderr",
        fake(),
        rf"^flooded$|{TIMED_OUT}",
        tool="flood_stderr",
        arguments={"bytes": figures.FLOOD_BYTES},
        slow=True,
    ),
    Fault(
        "big_reply",
        fake(),
        r"passed 81920 bytes while it was still arriving, over the limit of 65536 bytes, so it "
        r"was refused",
        tool="big",
        arguments={"bytes": figures.BIG_REPLY_BYTES},
    ),
    Fault(
        "invalid_json",
        raw_bad("invalid-json"),
        TIMED_OUT,
        tool="t",
        slow=True,
        stderr_expect="[meworkd] ignored a non-JSON-RPC line on stdout",
    ),
    Fault(
        "stdout_junk",
        fake("--stdout-junk"),
        r"^hi$",
        tool="echo",
        arguments={"text": "hi"},
        stderr_expect="[meworkd] ignored a non-JSON-RPC line on stdout: hello from kitchen",
    ),
    Fault("wrong_id", raw_bad("wrong-id"), TIMED_OUT, tool="t", slow=True),
    Fault(
        "endless_line",
        hostile(),
        r"^after the endless line$",
        tool="endless",
        arguments={"mib": 48},
        stderr_expect="[meworkd] ignored a",
    ),
    Fault(
        "grandchild",
        fake("--grandchild", "--ignore-sigterm"),
        r"^\d+$",
        tool="spawn_grandchild",
    ),
    Fault(
        "http_500",
        http,
        r"HTTP 500 from http://127\.0\.0\.1:\d+/mcp: kitchen http: internal failure",
        "begin",
        http_mode="500",
    ),
    Fault(
        "http_drop",
        http,
        r"closed the connection|timed out|HTTP|answered with an error",
        tool="echo",
        arguments={"text": "x"},
        http_mode="drop",
    ),
    Fault("http_hang", http, TIMED_OUT, "begin", http_mode="hang", slow=True),
]
assert [f.id for f in FAULTS] == list(figures.SERVER_FAULTS), "figures.SERVER_FAULTS is stale"


@pytest.fixture(scope="module")
def fault_daemon() -> Iterator[DaemonProc]:
    with daemon_dir() as root:
        d = DaemonProc(root)
        # A generous timeout: the healthy server must never be the one that times out.
        d.write_settings({"healthy": server_entry(FAKE, mark=HEALTHY_MARK, timeout=60)})
        try:  # a failed set-up must not leave the daemon behind either
            d.start()
            with d.client() as c:
                c.call(
                    "conversations.create",
                    {"id": HEALTHY_CONV, "mcpServers": ["healthy"], "approvalLevel": "full_access"},
                )
                turn = c.call("turns.begin", {"conversationId": HEALTHY_CONV})
                echo = bound_name(turn, "healthy", "echo")
                c.call("turns.callTool", {"turnId": turn["turnId"], "name": echo, "arguments": {}})
            rss0, fds0 = d.rss(), d.fds()
            yield d
            # A connection the last scenario closed may not be torn down yet (bounded poll:
            # fds send no event); a leak never comes back.
            with contextlib.suppress(AssertionError):
                poll_until("the fds are back", lambda: d.fds() <= fds0, bound=10)
            rss1, fds1 = d.rss(), d.fds()
            figures.record(
                "server_faults",
                daemon_rss_start_mib=round(rss0 / 2**20, 1),
                daemon_rss_end_mib=round(rss1 / 2**20, 1),
                daemon_fds_start=fds0,
                daemon_fds_end=fds1,
            )
            assert fds1 <= fds0, f"file descriptors leaked: {fds0} -> {fds1}"
            assert rss1 - rss0 < RSS_GROWTH_BOUND, f"RSS {rss0 >> 20} -> {rss1 >> 20} MiB"
            code = d.stop()
            assert code == 0, d.log_tail()
            assert not marked_pids(HEALTHY_MARK), "the healthy server outlived the daemon"
        finally:
            d.kill()
            text = d.log_text()
            # The daemon's own log: no Python traceback means no unexpected exception.
            assert "Traceback" not in text, text[-4000:]


@pytest.mark.anyio
@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: f.id)
async def test_server_fault(fault_daemon: DaemonProc, fault: Fault) -> None:
    d = fault_daemon
    mark = new_mark()
    server = HttpFixture(fault.http_mode) if fault.http_mode else None
    url = await anyio.to_thread.run_sync(server.start) if server else ""
    name = f"fault-{fault.id}"
    conv_id = f"conv-{fault.id}"
    entry = fault.entry(mark, url)
    if fault.phase == "call":
        # Start-up is not what these scenarios test, and a Python server's start-up can take
        # over 2 s on a loaded 2-core machine: connect with a longer timeout, then set 2 s
        # (a policy field: applied without reconnecting).
        entry["timeoutSeconds"] = STARTUP_TIMEOUT
    try:
        async with d.connect() as client, d.connect() as watcher:
            # The server may write its last stderr line after meworkd has answered the call:
            # the check below waits for that line's event instead of racing it.
            await watcher.subscribe(["server.log"])
            await call(client, "servers.add", {"name": name, "server": entry})
            healthy = await call(client, "turns.begin", {"conversationId": HEALTHY_CONV})
            echo = bound_name(healthy, "healthy", "echo")

            async def echo_healthy(text: str) -> None:
                reply = await call(
                    client,
                    "turns.callTool",
                    {"turnId": healthy["turnId"], "name": echo, "arguments": {"text": text}},
                )
                assert text_of(reply) == text, reply

            await echo_healthy("warm")
            sessions_before = (await call(client, "daemon.status"))["sessions"]
            await call(
                client,
                "conversations.create",
                {"id": conv_id, "mcpServers": [name], "approvalLevel": "full_access"},
            )
            turn: dict[str, Any] = {}
            if fault.phase == "call":
                turn = await call(client, "turns.begin", {"conversationId": conv_id})
                tool = bound_name(turn, name, fault.tool)
                await call(
                    client, "servers.update", {"name": name, "patch": {"timeoutSeconds": TIMEOUT}}
                )
            rss_before = d.rss()
            outcome: dict[str, Any] = {}

            async def faulty() -> None:
                started = time.monotonic()
                if fault.phase == "begin":
                    begun = await call(client, "turns.begin", {"conversationId": conv_id})
                    outcome["elapsed"] = time.monotonic() - started
                    failures = [f["reason"] for f in begun["failures"] if f["server"] == name]
                    outcome["text"] = " / ".join(failures)
                    outcome["bound"] = [b["tool"] for b in begun["bindings"].values()]
                    return
                reply = await call(
                    client,
                    "turns.callTool",
                    {"turnId": turn["turnId"], "name": tool, "arguments": fault.arguments},
                )
                outcome["elapsed"] = time.monotonic() - started
                outcome["text"] = text_of(reply)
                outcome["isError"] = reply["isError"]

            meanwhile = 0
            done = anyio.Event()

            async def run_fault() -> None:
                try:
                    await faulty()
                finally:
                    done.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(run_fault)
                while not done.is_set():
                    await echo_healthy(f"meanwhile {meanwhile}")
                    meanwhile += 1
                    with anyio.move_on_after(ECHO_EVERY):  # or at once, the fault answered
                        await done.wait()

            # 1. a clear error, in time
            assert re.search(fault.expect, outcome["text"]), outcome
            if fault.phase == "begin":
                assert outcome["bound"] == [], outcome
            assert outcome["elapsed"] <= TIMEOUT + SLACK, (
                f"{fault.id}: answered after {outcome['elapsed']:.2f} s "
                f"(timeoutSeconds {TIMEOUT}): {outcome['text']}"
            )
            # 2. the others kept working, meanwhile and afterwards
            if fault.slow:
                assert meanwhile >= 1, "the healthy conversation did not answer meanwhile"
            await echo_healthy("after")
            if fault.stderr_expect is not None:
                expected = fault.stderr_expect
                with anyio.fail_after(10):
                    while True:
                        _topic, logged = await watcher.next_event("server.log")
                        if logged.get("server") == name and expected in logged.get("line", ""):
                            break
                logs = await call(client, "servers.logs", {"name": name})
                lines = [entry["line"] for entry in logs["lines"]]
                assert any(fault.stderr_expect in line for line in lines), lines[-20:]
            running = marked_pids(mark)
            groups = process_groups(running)
            if fault.id == "grandchild":
                assert int(outcome["text"]) in running  # the grandchild really ran
            # 3. nothing left behind once the conversation is gone
            closing = time.monotonic()
            await call(client, "conversations.delete", {"id": conv_id})
            await wait_marked_gone(mark)
            close_seconds = time.monotonic() - closing
            # A process in the middle of exiting has an empty environ already: the group scan
            # waits for it to be gone for good (bounded poll).
            await wait_until(
                "the server's process group is empty", lambda: not group_members(groups)
            )
            for child in d.children():
                try:
                    environ = child.environ()
                except (psutil.NoSuchProcess, ProcessLookupError):
                    continue  # exited between the listing and the read: not left behind
                assert environ.get(MARK_VAR) != mark, f"daemon child {child.pid} left behind"
            if fault.id == "flood_stderr":
                ring = await call(client, "servers.logs", {"name": name})
                assert len(ring["lines"]) <= 1000, "the log ring is not bounded"
                figures.record(
                    "server_faults",
                    flood_outcome="answered" if outcome["text"] == "flooded" else "timed out",
                    flood_lines_through_ring=ring["dropped"] + len(ring["lines"]),
                )
            await call(client, "servers.remove", {"name": name})
            status = await call(client, "daemon.status")
            assert status["sessions"] == sessions_before, status
            # 4. memory bounded
            rss_after = d.rss()
            growth = rss_after - rss_before
            figures.record(
                "server_faults",
                **{
                    f"{fault.id}_seconds": round(outcome["elapsed"], 2),
                    f"{fault.id}_rss_growth_kib": growth // 1024,
                    f"{fault.id}_close_seconds": round(close_seconds, 2),
                },
            )
            assert growth < RSS_GROWTH_BOUND, (
                f"{fault.id}: daemon RSS grew by {growth / 2**20:.1f} MiB "
                f"({rss_before / 2**20:.1f} -> {rss_after / 2**20:.1f})"
            )
            figures.bump("server_faults", "scenarios_survived")
    finally:
        with d.client() as c:  # after a failure: leave nothing for the next scenario
            for method, params in (
                ("conversations.delete", {"id": conv_id}),
                ("servers.remove", {"name": name}),
            ):
                with contextlib.suppress(RpcError):
                    c.call(method, params)
        if server is not None:
            await anyio.to_thread.run_sync(server.stop)


@pytest.mark.anyio
async def test_hang_initialize_answers_within_timeout(fault_daemon: DaemonProc) -> None:
    """turns.begin must report a server stuck in initialize at its timeoutSeconds, not after
    meworkd finished killing it (a SIGTERM-ignoring server made that 2.5 s more: found by this
    suite, fixed in cb26c2b)."""
    d = fault_daemon
    mark = new_mark()
    name = "fault-hang-init-stubborn"
    entry = server_entry(FAKE, "--hang-initialize", "--ignore-sigterm", mark=mark, timeout=TIMEOUT)
    async with d.connect() as client:
        await call(client, "servers.add", {"name": name, "server": entry})
        try:
            conv = await call(
                client,
                "conversations.create",
                {"mcpServers": [name], "approvalLevel": "full_access"},
            )
            started = time.monotonic()
            turn = await call(client, "turns.begin", {"conversationId": conv["id"]})
            elapsed = time.monotonic() - started
            assert re.search(TIMED_OUT, turn["failures"][0]["reason"]), turn
            await wait_marked_gone(mark)
            assert elapsed <= TIMEOUT + SLACK, f"answered after {elapsed:.2f} s"
        finally:
            await call(client, "servers.remove", {"name": name})
