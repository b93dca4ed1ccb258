"""50 conversations calling tools at once, with a server crashing meanwhile (issue 8, part 6).

One ``meworkd`` subprocess, five control connections, ten conversations on each, every
conversation calling its tool in a loop for ``figures.LOAD["seconds"]`` (15 s; 60 s with
``MEWORKD_SOAK=1``). The servers: kitchen ``echo``, kitchen ``slow`` (0.05 s), a kitchen that a
separate task kills every few seconds with its ``die`` tool (``crashy``), and a stdlib echo server
(``light``) for the rest, so that 50 sessions fit on a 2-core machine. Checked:

* every request gets exactly one reply (a client of its own counts replies per JSON-RPC id; every
  call also has a unique ``callId`` that the echo servers send back), and no reply is mixed up;
* only calls to the crashing server may fail, and then with the clear "closed the connection" or
  "unavailable" text;
* the daemon's RSS after warm-up (the first third) grows less than ``LOAD["rss_growth_bound_mib"]``;
* p50/p99/max latency are reported (``.last-run.json``), and nothing is left running at the end.
"""

from __future__ import annotations

import itertools
import json
import statistics
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.reliability import figures
from tests.reliability.harness import (
    BOUND,
    FAKE,
    LOCAL_SERVERS,
    DaemonProc,
    bound_name,
    marked_pids,
    new_mark,
    server_entry,
    text_of,
    wait_marked_gone,
)

HOSTILE = str(LOCAL_SERVERS / "hostile.py")
CONNECTIONS = 5
# conversations per server: the kitchens are the expensive part (~0.5 s CPU and 66 MB each)
PLAN = {"echo": 5, "slow": 5, "crashy": 2, "light": 38}
CRASH_OK = ("closed the connection during the call", "is unavailable")
_ids = itertools.count(1)


class CountingClient:
    """JSON-RPC over the socket that records every reply line by id (duplicates included)."""

    def __init__(self, stream: SocketStream) -> None:
        self.stream = stream
        self.lock = anyio.Lock()
        self.sent: set[int] = set()
        self.replies: defaultdict[Any, list[dict[str, Any]]] = defaultdict(list)
        self.waiters: dict[int, anyio.Event] = {}

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        rid = next(_ids)
        self.sent.add(rid)
        done = self.waiters[rid] = anyio.Event()
        line = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        async with self.lock:
            await self.stream.send(line.encode() + b"\n")
        with anyio.fail_after(BOUND):
            await done.wait()
        return self.replies[rid][0]

    async def read(self) -> None:
        reader = BufferedByteReceiveStream(self.stream)
        try:
            while True:
                line = await reader.receive_until(b"\n", 64 * 1024 * 1024)
                message = json.loads(line)
                for reply in message if isinstance(message, list) else [message]:
                    if "id" not in reply:
                        continue  # an event
                    self.replies[reply["id"]].append(reply)
                    waiter = self.waiters.pop(reply["id"], None)
                    if waiter is not None:
                        waiter.set()
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError):
            pass


@asynccontextmanager
async def counting_client(d: DaemonProc) -> AsyncIterator[CountingClient]:
    async with await anyio.connect_unix(d.socket) as stream, anyio.create_task_group() as tg:
        client = CountingClient(stream)
        tg.start_soon(client.read)
        yield client
        tg.cancel_scope.cancel()


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@pytest.mark.anyio
async def test_fifty_conversations_under_load(spawn_daemon: Any) -> None:
    seconds = figures.load_seconds()
    assert sum(PLAN.values()) == figures.LOAD["conversations"]
    d = spawn_daemon()
    mark = new_mark()
    d.write_settings(
        {
            "echo": server_entry(FAKE, mark=mark, timeout=20),
            "slow": server_entry(FAKE, mark=mark, timeout=20),
            "crashy": server_entry(FAKE, mark=mark, timeout=20),
            "light": server_entry(HOSTILE, mark=mark, timeout=20),
        }
    )
    await anyio.to_thread.run_sync(d.start)
    latencies: defaultdict[str, list[float]] = defaultdict(list)
    errors: defaultdict[str, list[str]] = defaultdict(list)
    rss: list[tuple[float, int]] = []
    crashes = 0

    async with contextlib_multi(d, CONNECTIONS) as clients:
        # Warm-up: 50 conversations, a turn each (every session starts here).
        conversations: list[tuple[str, CountingClient, dict[str, Any]]] = []
        for server, count in PLAN.items():
            for _ in range(count):
                conversations.append((server, clients[len(conversations) % CONNECTIONS], {}))

        async def open_one(index: int) -> None:
            server, client, turn = conversations[index]
            conv = await client.request(
                "conversations.create",
                {"id": f"load-{index}", "mcpServers": [server], "approvalLevel": "full_access"},
            )
            assert "result" in conv, conv
            begun = await client.request("turns.begin", {"conversationId": f"load-{index}"})
            assert begun["result"]["failures"] == [], begun
            turn.update(begun["result"])

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for index in range(len(conversations)):
                    tg.start_soon(open_one, index)

        async def caller(index: int, stop: anyio.Event) -> None:
            server, client, turn = conversations[index]
            name = bound_name(turn, server, "slow" if server == "slow" else "echo")
            n = 0
            while not stop.is_set():
                call_id = f"c{index}-{n}"
                n += 1
                args = {"seconds": 0.05} if server == "slow" else {"text": call_id}
                started = time.monotonic()
                reply = await client.request(
                    "turns.callTool",
                    {"turnId": turn["turnId"], "name": name, "arguments": args, "callId": call_id},
                )
                latencies[server].append(time.monotonic() - started)
                result = reply.get("result")
                assert result is not None, reply
                text = text_of(result)
                if server == "crashy" and result["isError"]:
                    assert any(ok in text for ok in CRASH_OK), text
                    errors[server].append(text)
                    continue
                assert not result["isError"], (server, text)
                assert text == ("slept" if server == "slow" else call_id), (call_id, text)

        async def crasher(stop: anyio.Event) -> None:
            nonlocal crashes
            index = next(i for i, c in enumerate(conversations) if c[0] == "crashy")
            server, client, turn = conversations[index]
            die = bound_name(turn, server, "die")
            while not stop.is_set():
                with anyio.move_on_after(figures.LOAD["crash_every_seconds"]):
                    await stop.wait()
                if stop.is_set():
                    return
                reply = await client.request(
                    "turns.callTool", {"turnId": turn["turnId"], "name": die, "arguments": {}}
                )
                assert reply["result"]["isError"], reply
                crashes += 1

        async def sampler(stop: anyio.Event, started: float) -> None:
            while not stop.is_set():
                rss.append((time.monotonic() - started, d.rss()))
                with anyio.move_on_after(0.25):
                    await stop.wait()

        stop = anyio.Event()
        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            for index in range(len(conversations)):
                tg.start_soon(caller, index, stop)
            tg.start_soon(crasher, stop)
            tg.start_soon(sampler, stop, started)
            with anyio.move_on_after(seconds):
                await anyio.sleep_forever()
            stop.set()
        duration = time.monotonic() - started
        status = await clients[0].request("daemon.status", {})
        for index in range(len(conversations)):
            await clients[0].request("conversations.delete", {"id": f"load-{index}"})

    # Exactly one reply per request, none for ids never sent.
    for client in clients:
        duplicates = {rid: len(r) for rid, r in client.replies.items() if len(r) != 1}
        assert duplicates == {}, f"requests answered more than once: {duplicates}"
        assert set(client.replies) == client.sent, (
            "a request was not answered, or a reply came for an id never sent"
        )
    await wait_marked_gone(mark)
    assert d.stop() == 0
    assert marked_pids(mark) == []

    calls = sum(len(v) for v in latencies.values())
    steady = [s for s in latencies if s != "crashy"]
    all_latencies = [x for s in steady for x in latencies[s]]
    warm = [r for t, r in rss if t >= duration / 3]
    growth = warm[-1] - warm[0] if warm else 0
    p99 = _percentile(all_latencies, 0.99) * 1000
    figures.record(
        "load",
        conversations=len(conversations),
        seconds=round(duration, 1),
        calls=calls,
        calls_per_second=round(calls / duration),
        crashes_caused=crashes,
        crash_errors=len(errors["crashy"]),
        p50_ms=round(statistics.median(all_latencies) * 1000, 2),
        p99_ms=round(p99, 2),
        max_ms=round(max(all_latencies) * 1000, 1),
        p99_ms_by_server={
            s: round(_percentile(v, 0.99) * 1000, 2) for s, v in sorted(latencies.items())
        },
        rss_after_warmup_mib=round(warm[0] / 2**20, 1) if warm else None,
        rss_end_mib=round(warm[-1] / 2**20, 1) if warm else None,
        rss_growth_after_warmup_mib=round(growth / 2**20, 1),
        sessions_at_end=status["result"]["sessions"],
    )
    print(
        f"load: {calls} calls in {duration:.1f} s, p99 {p99:.1f} ms (without the crashing "
        f"server), {crashes} crashes, RSS growth after warm-up {growth / 2**20:.1f} MiB"
    )
    assert crashes >= 2, "the crashing server was not crashed"
    assert all(latencies[s] for s in PLAN), "a kind of server was never called"
    assert growth < figures.LOAD["rss_growth_bound_mib"] * 2**20, (
        f"RSS grew by {growth / 2**20:.1f} MiB after warm-up: {[r >> 20 for _, r in rss]}"
    )


@asynccontextmanager
async def contextlib_multi(d: DaemonProc, n: int) -> AsyncIterator[list[CountingClient]]:
    async with counting_client(d) as first:
        if n == 1:
            yield [first]
            return
        async with contextlib_multi(d, n - 1) as rest:
            yield [first, *rest]
