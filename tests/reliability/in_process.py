"""The daemon's dispatcher in this process, for the fuzz: a case's bytes answered without a socket.

Most fuzz cases are about what one line gets (a clear error, no Python text, the right id), which
is the dispatcher's job; sending each through a fresh connection of a ``meworkd`` subprocess
cost a connect, a thread and two context switches per case. :class:`InProcessPeer` runs a real
:class:`~meworkd.app.daemon.Daemon` in the test's event loop and answers a case's lines the way
the server answers a connection's: split by :class:`~meworkd.base.lines.LineSplitter`, blank
lines skipped, each line given to the daemon's :class:`~meworkd.rpc.dispatch.Dispatcher` with a
real :class:`~meworkd.rpc.connection.Connection` (on one end of a socket pair, whose other end
collects the events it sends). What only a socket shows (half lines, EOF, churn) stays with
:class:`~tests.reliability.control_socket.SocketPeer` and test_hostile_input.py.

The hypothesis runners are synchronous: they run on a worker thread and call into the loop with
``anyio.from_thread``.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import psutil
from anyio.abc import SocketStream

from meworkd.app.daemon import Daemon
from meworkd.base.lines import LineSplitter, Oversized
from meworkd.rpc.connection import Connection
from meworkd.rpc.dispatch import Dispatcher
from tests.common import BOUND, FAKE
from tests.daemon_fixture import make_env, running_daemon
from tests.reliability.harness import new_mark, server_entry

__all__ = ["InProcessPeer", "in_process_peer"]

STATUS = b'{"jsonrpc":"2.0","id":"status","method":"daemon.status"}'


class InProcessPeer:
    """A daemon in this process's event loop; call its methods from a worker thread."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.dispatcher = Dispatcher(daemon.methods)

    def exchange(self, data: bytes) -> list[bytes]:
        return anyio.from_thread.run(self._exchange, data)

    def status_ok(self) -> None:
        (reply,) = self.exchange(STATUS + b"\n")
        assert json.loads(reply)["result"]["pid"] == os.getpid(), reply

    def rss(self) -> int:
        return int(psutil.Process().memory_info().rss)

    async def _exchange(self, data: bytes) -> list[bytes]:
        ours, theirs = socket.socketpair()
        events = bytearray()
        replies: list[bytes] = []
        with theirs, anyio.fail_after(BOUND):
            stream = await SocketStream.from_socket(ours)
            async with stream, anyio.create_task_group() as outer:
                outer.start_soon(_drain, theirs, events)
                async with anyio.create_task_group() as tasks:
                    conn = Connection(
                        stream, tasks, self.daemon.bus, self.daemon.redactor.redact_value
                    )
                    tasks.start_soon(conn.run_writer)
                    for line in LineSplitter(self.daemon.rpc.max_line).feed(data):
                        assert not isinstance(line, Oversized), line
                        if line.strip():
                            reply = await self.dispatcher.handle_line(line, conn)
                            if reply is not None:
                                replies.append(reply)
                    conn.close()  # as the server does when the peer's EOF ends its reader
                    conn.end_writes()
                ours.shutdown(socket.SHUT_WR)  # the writer is done: the drain sees EOF
        assert not events or events.endswith(b"\n"), events[-200:]
        return replies + bytes(events).split(b"\n")[:-1]


async def _drain(sock: socket.socket, into: bytearray) -> None:
    sock.setblocking(False)
    while True:
        await anyio.wait_readable(sock)
        chunk = sock.recv(1 << 16)
        if not chunk:
            return
        into += chunk


@asynccontextmanager
async def in_process_peer(root: Path, **more: Any) -> AsyncIterator[InProcessPeer]:
    """The settings of the fuzz's subprocess daemon (the fake server as ``k``), in process."""
    servers = {"k": server_entry(FAKE, mark=new_mark(), timeout=20), **more}
    env = make_env(root, {"assets": {"mcpServers": servers}})
    async with running_daemon(env) as daemon:
        yield InProcessPeer(daemon)
