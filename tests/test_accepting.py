"""meworkd.rpc.accepting at its descriptor limit: the reserve descriptor comes back first.

Out of descriptors, the acceptor gives up its reserve to accept and refuse one connection. A
thread (anyio's workers open files) can take that slot meanwhile; the reserve then could not be
re-opened, the next free slot went to a connection, and every later one waited for nothing.
The acceptor runs in a child process (its own descriptor limit), put in the state that race
leaves; the test is the client.
"""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path
from typing import Any

from tests.common import BOUND, PY

CHILD = """
import anyio, os, resource, sys
from meworkd.rpc.accepting import Acceptor

async def main(path):
    listener = await anyio.create_unix_listener(path)
    with Acceptor(listener) as acceptor:
        resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 4, 4096))
        held = []
        while True:  # every descriptor taken, as a daemon at its limit
            try:
                held.append(os.open(os.devnull, os.O_RDONLY))
            except OSError:
                break
        # What the race leaves: the reserve was given up and another thread took the slot ...
        os.close(acceptor._reserve)
        thief = os.open(os.devnull, os.O_RDONLY)
        acceptor._reserve = None
        os.close(thief)  # ... and gave it back once its file was read.
        print("ready", flush=True)
        while True:
            stream = await acceptor.accept()
            await stream.send(b'{"served": true}\\n')  # kept open: its descriptor stays taken

anyio.run(main, sys.argv[1])
"""


def _first_line(path: Path) -> Any:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(BOUND)
        s.connect(str(path))
        s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"daemon.status"}\n')
        return json.loads(s.makefile("rb").readline())


def test_a_reserve_taken_by_another_thread_is_taken_back_before_serving(short_tmp: Path) -> None:
    path = short_tmp / "a.sock"
    child = subprocess.Popen(
        [PY, "-c", CHILD, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == b"ready\n", child.communicate(timeout=BOUND)
        for _ in range(3):  # each is turned away clearly; none waits for nothing
            reply = _first_line(path)
            assert reply["error"]["data"]["kind"] == "resource_exhausted", reply
    finally:
        child.kill()
        child.communicate(timeout=BOUND)
