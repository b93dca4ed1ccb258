"""mework_client.aio against the real daemon: replies split over many reads, events that nobody
reads never stop the replies, concurrent and cancelled calls on one connection; the sync client's
own line reading (it reads the socket with a buffer of its own, see mework_client.sync)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import anyio
import pytest
from mework_client import Client
from mework_client.aio import AsyncClient, _connect_stream, _connect_transport

from tests.common import fake
from tests.daemon_helpers import (
    PY,
    begin_turn,
    call_tool,
    start_daemon,
    text_of,
    wait_event,
)

pytestmark = pytest.mark.anyio

Connector = Callable[[Path], AbstractAsyncContextManager[AsyncClient]]


@pytest.fixture(params=["asyncio-transport", "socket-stream"])
def connect(request: pytest.FixtureRequest) -> Connector:
    """Both ways the client connects: an asyncio transport, or (any other backend) the socket
    stream with a reader task. Tests run on asyncio, so the second one is chosen here."""
    return _connect_transport if request.param == "asyncio-transport" else _connect_stream


async def test_a_reply_larger_than_many_reads_arrives_whole(
    short_tmp: Path, connect: Connector
) -> None:
    note = "n" * (3 * 1024 * 1024 + 7)  # kept as an unknown key; several 256 KiB reads
    async with start_daemon(short_tmp, {}) as (_d, sock), connect(sock) as c:
        await c.call("servers.add", {"name": "s", "server": {"command": PY, "x-note": note}})
        got = await c.call("servers.get", {"name": "s"})
        assert got["server"]["x-note"] == note
        assert (await c.call("daemon.status"))["pid"] > 0


async def test_events_nobody_reads_do_not_stop_replies(short_tmp: Path, connect: Connector) -> None:
    async with start_daemon(short_tmp, {}) as (_d, sock), connect(sock) as c:
        await c.subscribe()
        c.event_stream.close()  # the frontend stopped listening but keeps calling
        with anyio.fail_after(20):
            for i in range(20):  # each write publishes settings events nobody takes
                await c.call("servers.add", {"name": f"s{i}", "server": {"command": PY}})
            listed = await c.call("servers.list")
        assert len(listed["servers"]) == 20
        assert not c.closed.is_set()


async def test_many_concurrent_calls_on_one_connection(short_tmp: Path, connect: Connector) -> None:
    async with start_daemon(short_tmp, {}) as (_d, sock), connect(sock) as c:
        results: dict[int, object] = {}

        async def one(i: int) -> None:
            results[i] = (await c.call("daemon.status"))["pid"]

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                for i in range(50):
                    tg.start_soon(one, i)
        assert len(results) == 50


async def test_a_cancelled_call_does_not_stall_the_others(
    short_tmp: Path, connect: Connector
) -> None:
    """A call cancelled while another waits on the same connection: the other still gets its
    reply (whoever reads the socket, a cancellation must not leave replies unread)."""
    async with (
        start_daemon(short_tmp, {"k": fake()}) as (_d, sock),
        connect(sock) as c,
        connect(sock) as watcher,
    ):
        await watcher.subscribe(["turn.progress"])
        turn = await begin_turn(c, ["k"])
        outcome: dict[str, object] = {}

        async def slow(key: str, seconds: float, scope: anyio.CancelScope) -> None:
            with scope:
                result = await call_tool(c, turn, "k", "slow", {"seconds": seconds})
                outcome[key] = text_of(result)

        first = anyio.CancelScope()
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(slow, "first", 60, first)
                # Both calls are running on the server (they report progress as they start).
                await wait_event(watcher, "turn.progress")
                tg.start_soon(slow, "second", 1, anyio.CancelScope())
                await wait_event(watcher, "turn.progress")
                first.cancel()
        assert "first" not in outcome
        assert outcome["second"] == "slept"


async def test_after_the_daemon_closes_the_connection_calls_fail_at_once(
    short_tmp: Path, connect: Connector
) -> None:
    async with start_daemon(short_tmp, {}) as (daemon, sock), connect(sock) as c:
        await c.call("daemon.status")
        daemon.request_shutdown()
        with anyio.fail_after(10):
            await c.closed.wait()
            with pytest.raises(ConnectionError):
                await c.call("daemon.status")


async def test_the_sync_client_reads_replies_over_many_reads_and_keeps_events(
    short_tmp: Path,
) -> None:
    """Several MiB in one reply, and an event line read while a call waits, kept for events()."""
    note = "n" * (3 * 1024 * 1024 + 7)

    def use(sock: Path) -> tuple[str, str, int]:
        with Client(sock, 20) as c:
            c.call("events.subscribe", {"topics": ["settings.reloaded"]})
            c.call("servers.add", {"name": "s", "server": {"command": PY, "x-note": note}})
            got = c.call("servers.get", {"name": "s"})["server"]["x-note"]
            pid = c.call("daemon.status")["pid"]
            topic, _data = next(c.events(["settings.reloaded"]))
            return got, topic, pid

    async with start_daemon(short_tmp, {}) as (_d, sock):
        got, topic, pid = await anyio.to_thread.run_sync(use, sock)
    assert got == note
    assert topic == "settings.reloaded"
    assert pid > 0


async def test_the_sync_client_shutdown_ends_a_read_blocked_in_another_thread(
    short_tmp: Path,
) -> None:
    async with start_daemon(short_tmp, {}) as (_d, sock):
        client = Client(sock, None)
        subscribed = threading.Event()
        ended: list[BaseException] = []

        def listen() -> None:
            try:
                client.call("events.subscribe", {"topics": ["server.log"]})
                subscribed.set()
                next(client.events(["server.log"]))  # blocks: no server logs anything
            except ConnectionError as exc:
                ended.append(exc)

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(anyio.to_thread.run_sync, listen)
                await anyio.to_thread.run_sync(subscribed.wait)
                client.shutdown()
        client.close()
    assert [str(e) for e in ended] == ["meworkd closed the connection"]


async def test_a_call_after_the_connection_ended_says_so_like_a_read_does(short_tmp: Path) -> None:
    # The thread above may be sending its subscribe when the shutdown lands: EPIPE, not EOF.
    async with start_daemon(short_tmp, {}) as (_d, sock):
        client = Client(sock, None)
        client.shutdown()
        with pytest.raises(ConnectionError) as ended:
            await anyio.to_thread.run_sync(client.call, "daemon.status")
        client.close()
    assert str(ended.value) == "meworkd closed the connection"
