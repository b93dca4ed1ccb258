"""Budgets in bytes, not lines (issue 14, point 5).

Each attack runs against the real daemon (a ``meworkd`` subprocess, so the memory measured is
its own) over real sockets, pipes and HTTP, and must leave the daemon's peak RSS less than
64 MiB above where it was, and a second connection answered meanwhile. The peak is the kernel's
high-water mark (``VmHWM``), reset before each attack through ``/proc/PID/clear_refs``, so a
buffer held for a moment and freed again still counts. The attacks share one daemon for the
module: each starts once the last one's connections are gone and the daemon is idle, and
measures from there. The timeouts (a half-sent line, a peer that never reads) are checked on an
in-process daemon whose timeouts are shortened.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from tests.daemon_fixture import make_env, raw_session, running_daemon
from tests.reliability import figures
from tests.reliability.harness import (
    BOUND,
    LOCAL_SERVERS,
    DaemonProc,
    HttpFixture,
    begin,
    bound_name,
    call,
    daemon_dir,
    new_mark,
    poll_until,
    server_entry,
    text_of,
)

HOSTILE = str(LOCAL_SERVERS / "hostile.py")
HTTP_HUGE = str(LOCAL_SERVERS / "http_huge.py")
RSS_BOUND = 64 * 1024 * 1024
MIB = 1024 * 1024
REFUSED = re.compile(
    r"passed 81920 bytes while it was still arriving, over the limit of 65536 bytes, "
    r"so it was refused"
)


# --- measuring -------------------------------------------------------------------------------


class Peak:
    """The daemon's peak RSS growth from now on (``VmHWM`` after a reset, minus RSS now)."""

    def __init__(self, d: DaemonProc) -> None:
        self.pid = d.pid
        Path(f"/proc/{self.pid}/clear_refs").write_text("5")  # resets VmHWM to the RSS
        self.base = d.rss()

    def growth(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024 - self.base
        raise AssertionError("no VmHWM")


def settle(d: DaemonProc) -> None:
    """Bounded poll until the daemon has stopped working (no event says so): its CPU time does
    not move over three samples."""
    proc = psutil.Process(d.pid)
    samples: list[float] = []

    def idle() -> bool:
        times = proc.cpu_times()
        samples.append(times.user + times.system)
        return len(samples) >= 15 and samples[-1] == samples[-15]

    poll_until("the daemon is idle", idle)


def push(sock: socket.socket, data: bytes) -> int:
    """Send what the socket takes without waiting (the daemon may stop reading); bytes sent."""
    sock.setblocking(False)
    sent = 0
    try:
        while sent < len(data):
            sent += sock.send(data[sent:])
    except BlockingIOError:
        pass
    return sent


def read_ids(sock: socket.socket, count: int) -> list[Any]:
    """The ids of the next ``count`` reply lines on ``sock`` (bounded wait)."""
    sock.setblocking(True)
    sock.settimeout(BOUND)
    ids: list[Any] = []
    partial = b""
    while len(ids) < count:
        chunk = sock.recv(1 << 20)
        assert chunk, "the daemon closed the connection"
        *lines, partial = (partial + chunk).split(b"\n")
        ids += [json.loads(line)["id"] for line in lines]
    return ids


def within_bound(section: str, name: str, growth: int) -> None:
    figures.record("budgets", **{f"{section}_{name}_peak_rss_growth_kib": growth // 1024})
    assert growth < RSS_BOUND, f"{name}: peak RSS grew by {growth / MIB:.1f} MiB"


LISTINGS = ("endless", "many", "huge")


@pytest.fixture(scope="module")
def budget_daemon() -> Iterator[DaemonProc]:
    """The module's daemon: the hostile server as ``h``, the hostile listings and a well-behaved
    ``ok`` beside them, and a 500 KB unknown key (so that settings.get answers 500 KB)."""
    servers = {
        m: server_entry(HOSTILE, "--listing", m, mark=new_mark(), timeout=20) for m in LISTINGS
    }
    servers["ok"] = server_entry(HOSTILE, mark=new_mark(), timeout=20)
    servers["h"] = server_entry(HOSTILE, mark=new_mark(), timeout=20)
    with daemon_dir() as root:
        d = DaemonProc(root)
        d.write_settings(servers, {"x-big": "x" * 500_000})
        d.start()
        try:
            yield d
            assert d.stop() == 0, d.log_tail()
        finally:
            d.kill()


def idle(d: DaemonProc) -> DaemonProc:
    """``d`` once the last attack's connections are gone and it has stopped working."""
    poll_until("the last test's connections are closed", lambda: d.status()["connections"] == 1)
    settle(d)
    return d


# --- the control socket ------------------------------------------------------------------------


def test_batch_members_count_against_the_in_flight_limit(
    spawn_daemon: Callable[..., DaemonProc],
) -> None:
    """Two batches of 256 calls that each wait for an approval: 128 run (the connection's
    in-flight limit), not 512; answering one lets exactly one more start. A daemon of its own:
    the calls left waiting for a person keep their connection open."""
    d = spawn_daemon()
    d.write_settings({"h": server_entry(HOSTILE, mark=new_mark(), timeout=20)})
    d.start()

    async def main() -> int:
        async with d.connect() as b:
            await call(b, "events.subscribe", {"topics": ["approval.requested"]})
            turn = await begin(b, ["h"], level="request_approval")
            echo = bound_name(turn, "h", "echo")
            peak = Peak(d)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as a:
                a.connect(str(d.socket))
                for n in range(2):
                    batch = [
                        {
                            "jsonrpc": "2.0",
                            "id": f"{n}-{i}",
                            "method": "turns.callTool",
                            "params": {"turnId": turn["turnId"], "name": echo},
                        }
                        for i in range(256)
                    ]
                    push(a, json.dumps(batch).encode() + b"\n")
                with anyio.fail_after(BOUND):
                    for _ in range(128):
                        await b.next_event("approval.requested")
                pending = (await call(b, "approvals.list"))["approvals"]
                assert len(pending) == 128
                first = pending[0]["approvalId"]
                await call(b, "approvals.respond", {"approvalId": first, "decision": "deny"})
                with anyio.fail_after(BOUND):
                    await b.next_event("approval.requested")
                assert len((await call(b, "approvals.list"))["approvals"]) == 128
                assert (await call(b, "daemon.status"))["connections"] == 2
                return peak.growth()

    within_bound("control", "batches", anyio.run(main))


def test_outbox_is_bounded_in_bytes(budget_daemon: DaemonProc) -> None:
    """A peer asks 300 times for a 500 KB reply and reads nothing: the daemon stops reading it
    (backpressure) instead of queueing 256 replies; every reply arrives once it reads."""
    d = idle(budget_daemon)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as a:
        a.connect(str(d.socket))
        peak = Peak(d)
        lines = b"".join(
            b'{"jsonrpc":"2.0","id":%d,"method":"settings.get"}\n' % i for i in range(300)
        )
        assert push(a, lines) == len(lines)
        with d.client() as b:
            assert b.call("daemon.status")["connections"] == 2
        settle(d)
        growth = peak.growth()
        ids = read_ids(a, 300)
    assert sorted(ids) == list(range(300))
    within_bound("control", "unread_replies", growth)


def test_half_lines_hold_bounded_memory(budget_daemon: DaemonProc) -> None:
    """Three peers each send 8 MiB of a line and stall; others are served meanwhile."""
    d = idle(budget_daemon)
    peak = Peak(d)
    peers = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(3)]
    try:
        for s in peers:
            s.connect(str(d.socket))
            s.settimeout(BOUND)
            s.sendall(
                b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"p":"' + b"q" * (8 * MIB - 99)
            )
        settle(d)
        with d.client() as b:
            assert b.call("daemon.status")["connections"] == 4
        growth = peak.growth()
    finally:
        for s in peers:
            s.close()
    within_bound("control", "half_lines", growth)


@pytest.mark.anyio
async def test_a_half_sent_line_times_out(short_tmp: Path) -> None:
    """Half a line, then silence: after the idle timeout the peer gets an error and EOF."""
    env = make_env(short_tmp)
    async with running_daemon(env) as daemon:
        daemon.rpc.line_timeout = 0.5
        async with raw_session(env.socket) as a:
            await a.send(b'{"jsonrpc":"2.0","id":1,"method":"daemon.status"')
            reply = await a.receive()
            assert reply["error"]["data"]["kind"] == "invalid_request", reply
            assert "unfinished message" in reply["error"]["data"]["detail"], reply
            with anyio.fail_after(BOUND), pytest.raises(anyio.EndOfStream):
                await a.stream.receive()


async def _send_forever(session: Any, data: bytes) -> None:
    while True:
        await session.send(data)


@pytest.mark.anyio
async def test_a_peer_that_never_reads_is_closed_after_the_stall_timeout(short_tmp: Path) -> None:
    """Requests keep coming, replies are never read: once the outbox is full and nothing is
    taken for the stall timeout, the connection is closed; another connection is served."""
    env = make_env(short_tmp)
    async with running_daemon(env) as daemon:
        daemon.rpc.stall_timeout = 0.5
        async with raw_session(env.socket) as a:
            request = b'{"jsonrpc":"2.0","id":1,"method":"settings.get"}\n' * 256
            # Before the timeout the daemon stops reading (backpressure), so this send waits;
            # once the connection is shut down it fails instead.
            with anyio.fail_after(BOUND), pytest.raises((anyio.BrokenResourceError, OSError)):
                await _send_forever(a, request)
            async with raw_session(env.socket) as b:
                await b.send(b'{"jsonrpc":"2.0","id":2,"method":"daemon.status"}\n')
                assert (await b.receive())["id"] == 2
            with anyio.fail_after(BOUND):
                with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    while await a.stream.receive(1 << 20):
                        pass


# --- what servers send -------------------------------------------------------------------------


async def _call_into(client: Any, params: dict[str, Any], box: list[Any]) -> None:
    box.append(await call(client, "turns.callTool", params))


def _huge_calls(d: DaemonProc, server: str, calls: list[dict[str, Any]]) -> list[int]:
    """Each call of ``huge`` is refused while it arrives, a second connection is answered
    meanwhile, and the session still answers afterwards; the peak RSS growth of each."""

    async def main() -> list[int]:
        growths = []
        async with d.connect() as a, d.connect() as b:
            turn = await begin(a, [server])
            huge, echo = bound_name(turn, server, "huge"), bound_name(turn, server, "echo")
            for arguments in calls:
                peak = Peak(d)
                replies: list[Any] = []
                params = {"turnId": turn["turnId"], "name": huge, "arguments": arguments}
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_call_into, a, params, replies)
                    assert (await call(b, "daemon.status"))["connections"] == 2
                growths.append(peak.growth())
                assert replies[0]["isError"] is True, replies
                assert REFUSED.search(text_of(replies[0])), replies
                params = {"turnId": turn["turnId"], "name": echo, "arguments": {"text": "hi"}}
                assert text_of(await call(a, "turns.callTool", params)) == "hi"
        return growths

    return anyio.run(main)


def test_http_reply_is_refused_while_it_is_read(budget_daemon: DaemonProc) -> None:
    """100 MiB as one JSON body and as one SSE event: refused once past the limit."""
    d = idle(budget_daemon)
    server = HttpFixture("huge", HTTP_HUGE)
    url = server.start()
    try:
        entry = {"type": "streamable_http", "url": url, "timeoutSeconds": 20}
        with d.client() as c:
            c.call("servers.add", {"name": "web", "server": entry})
        growths = _huge_calls(d, "web", [{"mib": 100}, {"mib": 100, "sse": True}])
        with d.client() as c:
            c.call("servers.remove", {"name": "web"})
    finally:
        server.stop()
    within_bound("http", "json_100mib", growths[0])
    within_bound("http", "sse_100mib", growths[1])


def test_stdio_reply_is_refused_while_it_is_read(budget_daemon: DaemonProc) -> None:
    """A 31 MiB reply line (under the old 32 MiB line limit), its id written first as the
    Python SDK does and last as the TypeScript SDK does: dropped as it arrives, refused."""
    d = idle(budget_daemon)
    growths = _huge_calls(d, "h", [{"mib": 31, "order": "python"}, {"mib": 31, "order": "ts"}])
    within_bound("stdio", "id_first_31mib", growths[0])
    within_bound("stdio", "id_last_31mib", growths[1])


def test_tools_listing_is_bounded(budget_daemon: DaemonProc) -> None:
    """Endless pages, 5000 tools, a 6 MiB page: each server's listing is refused with a clear
    reason, another client is served meanwhile, the turn gets the well-behaved server's tools."""
    modes = LISTINGS
    d = idle(budget_daemon)

    async def begin_into(client: Any, box: list[dict[str, Any]]) -> None:
        box.append(await begin(client, [*modes, "ok"]))

    async def main() -> tuple[dict[str, str], int]:
        async with d.connect() as a, d.connect() as b:
            peak = Peak(d)
            turns: list[dict[str, Any]] = []
            async with anyio.create_task_group() as tg:
                tg.start_soon(begin_into, a, turns)
                # Another client is served while the hostile listings are read.
                assert (await call(b, "daemon.status"))["connections"] == 2
            turn = turns[0]
            bound_name(turn, "ok", "echo")
            assert (await call(a, "daemon.status"))["connections"] == 2
            return {f["server"]: f["reason"] for f in turn["failures"]}, peak.growth()

    failures, growth = anyio.run(main)
    assert failures == {
        "endless": "the server's tools/list listing is too large (more than 100 pages); "
        "it was refused",
        "many": "the server's tools/list listing is too large (more than 1000 items); "
        "it was refused",
        "huge": "the server's tools/list listing is too large (a page of more than 4210688 "
        "bytes); it was refused",
    }, failures
    within_bound("listing", "three_hostile_listings", growth)
