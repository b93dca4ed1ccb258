"""One memory budget for what frontends send and are sent (issue 28, section 3).

Hostile clients on real sockets against a daemon run in the test's process, with its limits
made small here (the batch reply's bound, the daemon-wide budget, the line's time), so that what
the daemon holds is read from what it reports (``daemon.status`` ``rpcMemory``) rather than
from the RSS of a shared machine. Memory itself is measured in ``bench/rpc_memory.py``.
"""

from __future__ import annotations

import contextlib
import json
import socket
from pathlib import Path
from typing import Any

import anyio
import pytest

from meworkd.rpc.connection import OUTBOX_BYTES
from tests.daemon_fixture import make_env, raw_session, running_daemon
from tests.reliability.harness import BOUND, wait_until

KIB = 1024
PAD = 200 * KIB  # settings.get replies of about this many bytes
STATUS = b'{"jsonrpc":"2.0","id":"s","method":"daemon.status"}\n'


def padded(root: Path) -> Any:
    return make_env(root, {"servers": {}, "x-pad": "x" * PAD})


def settings_batch(count: int, first: int = 0) -> bytes:
    batch = [{"jsonrpc": "2.0", "id": first + i, "method": "settings.get"} for i in range(count)]
    return json.dumps(batch).encode() + b"\n"


def push(sock: socket.socket, data: bytes | memoryview) -> int:
    """What the socket takes now, without waiting (the daemon may have stopped reading)."""
    sock.setblocking(False)
    try:
        return sock.send(data)
    except BlockingIOError:
        return 0


async def status(path: Path) -> dict[str, Any]:
    async with raw_session(path) as s:
        reply = await s.exchange(STATUS)
    result: dict[str, Any] = reply["result"]
    return result


async def read_lines(sock: socket.socket, count: int) -> list[Any]:
    """The next ``count`` lines on a raw socket, each decoded (bounded wait)."""
    lines: list[Any] = []
    rest = b""
    with anyio.fail_after(BOUND):
        while len(lines) < count:
            await anyio.wait_readable(sock)
            chunk = sock.recv(1 << 20)
            assert chunk, "the daemon closed the connection"
            *whole, rest = (rest + chunk).split(b"\n")
            lines += [json.loads(line) for line in whole]
    return lines


@pytest.mark.anyio
async def test_a_batch_reply_is_bounded_in_bytes(short_tmp: Path) -> None:
    """Members whose replies would pass the bound get an error each; the batch still answers
    every member (in order), the notification none."""
    env = padded(short_tmp)
    async with running_daemon(env) as daemon:
        daemon.rpc.dispatcher.max_batch_reply = 3 * PAD + 3 * KIB  # three replies fit
        members = [{"jsonrpc": "2.0", "id": i, "method": "settings.get"} for i in range(10)]
        members.append({"jsonrpc": "2.0", "method": "settings.get"})  # a notification
        async with raw_session(env.socket) as a:
            reply = await a.exchange(json.dumps(members).encode() + b"\n")
            assert [r["id"] for r in reply] == list(range(10))
            ok = [r for r in reply if "result" in r]
            refused = [r for r in reply if "error" in r]
            assert len(ok) == 3, [r.get("error") for r in reply]
            assert len(refused) == 7
            for r in refused:
                assert r["error"]["code"] == -32067, r
                assert r["error"]["data"]["kind"] == "batch_reply_too_large", r
                assert "send large requests alone" in r["error"]["data"]["detail"].lower()
            # The connection is still served, and what the batch held is given back.
            assert (await a.exchange(STATUS))["result"]["rpcMemory"]["heldBytes"] < KIB


@pytest.mark.anyio
async def test_lines_read_wait_while_their_replies_cannot_be_written(short_tmp: Path) -> None:
    """A peer sends 40 batches of settings.get (8 MB of replies) and reads nothing: once its
    replies fill the outbox the daemon runs no more of its lines, however long another client is
    served meanwhile; when the peer reads, every reply arrives."""
    env = padded(short_tmp)
    async with running_daemon(env) as daemon:
        daemon.rpc.dispatcher.max_batch_reply = 2 * PAD + 2 * KIB
        lines = b"".join(settings_batch(2, 2 * n) for n in range(40))
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as a:
            a.connect(str(env.socket))
            assert push(a, lines) == len(lines)
            holdings = daemon.rpc.holdings
            await wait_until("the outbox is full", lambda: holdings.held >= OUTBOX_BYTES)
            bound = OUTBOX_BYTES + 2 * (2 * PAD + 2 * KIB) + len(lines)
            async with raw_session(env.socket) as b:
                for _ in range(50):
                    memory = (await b.exchange(STATUS))["result"]["rpcMemory"]
                    assert memory["peakHeldBytes"] <= bound, memory
            replies = await read_lines(a, 40)
        assert sorted(r["id"] for batch in replies for r in batch) == list(range(80))
        assert all("result" in r for batch in replies for r in batch)
        assert holdings.peak <= bound


async def _partial(path: Path, size: int) -> socket.socket:
    """A connection that sent ``size`` bytes of a line (the daemon runs in this event loop, so
    the bytes are sent without blocking it)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(path))
    head = b'{"jsonrpc":"2.0","id":1,"method":"daemon.status","params":{"p":"'
    data = memoryview(head + b"q" * (size - len(head)))
    with anyio.fail_after(BOUND):
        while data:
            sent = push(sock, data)
            data = data[sent:]
            if data:
                await anyio.wait_writable(sock)
    return sock


def _closed(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1 << 16) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


@pytest.mark.anyio
async def test_past_the_daemon_wide_budget_the_longest_stalled_are_cut(short_tmp: Path) -> None:
    """Ten peers each leave 300 KB of a line unfinished, one after another, against a budget of
    1 MiB: the oldest are cut until a quarter of the budget is free, the newest stay, what the
    daemon holds stays near the budget, and another client is served throughout."""
    env = make_env(short_tmp, {"servers": {}})
    async with running_daemon(env) as daemon:
        holdings = daemon.rpc.holdings
        holdings.limit = 1024 * KIB
        peers: list[socket.socket] = []
        try:
            for n in range(10):
                before = holdings.held
                peers.append(await _partial(env.socket, 300 * KIB))
                await wait_until(
                    f"peer {n}'s line is read",
                    lambda before=before: holdings.held > before or holdings.cut > 0,
                )
                await wait_until("under the budget", lambda: not holdings.over)
                assert (await status(env.socket))["connections"] >= 1
            await wait_until("what was cut is given back", lambda: holdings.held <= 1024 * KIB)
            cut = [n for n, peer in enumerate(peers) if _closed(peer)]
            assert cut, "no connection was cut"
            assert holdings.cut == len(cut)
            # The oldest went first: the cut peers are a prefix, the newest peer stayed.
            assert cut == list(range(len(cut))), cut
            assert 9 not in cut
            memory = (await status(env.socket))["rpcMemory"]
            assert memory["connectionsCut"] == len(cut)
            assert memory["peakHeldBytes"] <= 1024 * KIB + 300 * KIB + 256 * KIB, memory
        finally:
            for peer in peers:
                peer.close()


async def _trickle(sock: socket.socket) -> None:
    """A byte now and then (not waiting for anything: only keeping the line moving)."""
    with contextlib.suppress(OSError):
        while True:
            sock.send(b"q")
            await anyio.sleep(0.05)


@pytest.mark.anyio
async def test_a_line_that_trickles_is_dropped_all_the_same(short_tmp: Path) -> None:
    """A line whose bytes keep coming, one by one, is still dropped once it has taken longer
    than the line's time (an idle timer alone would wait for ever)."""
    env = make_env(short_tmp, {"servers": {}})
    async with running_daemon(env) as daemon:
        daemon.rpc.line_timeout = 0.5
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as a:
            a.connect(str(env.socket))
            a.setblocking(False)
            a.send(b'{"jsonrpc":"2.0","id":1,"method":"daemon.status"')
            async with anyio.create_task_group() as tg:
                tg.start_soon(_trickle, a)
                (reply,) = await read_lines(a, 1)
                tg.cancel_scope.cancel()
            assert reply["error"]["data"]["kind"] == "invalid_request", reply
            assert "not complete within 0.5 s" in reply["error"]["data"]["detail"], reply
            await wait_until("the connection is closed", lambda: _closed(a))
        assert (await status(env.socket))["rpcMemory"]["heldBytes"] < KIB
