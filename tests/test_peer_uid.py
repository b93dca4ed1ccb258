"""A process of another user is refused even where it can reach the socket (SO_PEERCRED)."""

import json
import os
import pwd
import socket
from pathlib import Path

import anyio
import pytest

from tests.daemon_fixture import make_env, running_daemon

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="needs root to run a client as nobody")


def run_as_nobody(socket_path: Path) -> str:
    """Fork a client that drops to ``nobody``, sends a request and reads until EOF."""
    nobody = pwd.getpwnam("nobody")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: only system calls, then _exit
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(10)
                s.connect(str(socket_path))
                s.sendall(b'{"jsonrpc": "2.0", "method": "daemon.status", "id": 1}\n')
                while chunk := s.recv(65536):
                    os.write(write_end, chunk)
        finally:
            os._exit(0)
    os.close(write_end)
    data = b""
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    return data.decode()


@pytest.mark.anyio
async def test_a_client_of_another_uid_is_refused_and_the_daemon_keeps_serving(
    short_tmp: Path,
) -> None:
    env = make_env(short_tmp)
    async with running_daemon(env):
        # Open up the filesystem on purpose: the peer check must hold on its own.
        for path in (env.socket.parent, *env.socket.parent.parents):
            if path == short_tmp.parent:
                break
            path.chmod(0o755)
        env.socket.chmod(0o777)
        output = await anyio.to_thread.run_sync(run_as_nobody, env.socket)
        lines = [json.loads(line) for line in output.splitlines()]
        assert len(lines) == 1, output
        assert lines[0]["error"]["data"]["kind"] == "permission_denied"
        assert "result" not in lines[0]
        # The refused peer got nothing but the refusal, and the daemon still serves its user
        # (whose client connects only through a private directory again).
        env.socket.parent.chmod(0o700)
        assert await anyio.to_thread.run_sync(_status, env.socket) == os.getpid()


def _status(socket_path: Path) -> int:
    from mework_client import Client

    with Client(socket_path, timeout=10) as client:
        return int(client.call("daemon.status")["pid"])
