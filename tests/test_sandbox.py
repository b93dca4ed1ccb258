"""Sandboxed stdio servers (issue 28, section 1): bubblewrap, for real.

A fixture server (tests/servers/prober.py) tries to read a file outside its sandbox (a private
key under ``$HOME/.ssh``, a file beside the test), to write outside what it may write, to open a
TCP connection to a listener on the host's 127.0.0.1 and to list the processes: each attempt
fails inside the server, which keeps working. The real filesystem server works sandboxed.
``bwrap`` missing, or refusing to build namespaces, fails the server as ``sandbox_unavailable``
with what to do. These tests say why they skip where bubblewrap cannot run (scripts/test
installs it where it can).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mework_client.aio import connect
from mework_client.ctl.servers_probe import format_test

from tests.common import PY, SERVERS, text_of
from tests.daemon_helpers import PEERS, begin_turn, call_tool, start_daemon

pytestmark = pytest.mark.anyio

PROBER = str(SERVERS / "prober.py")
FILESYSTEM = PEERS / ".bin" / "mcp-server-filesystem"
# Somewhere on the real disk that the sandbox does not show: not under /tmp (its own, private
# there), wherever the checkout is (a clone under /tmp would put the suite's folders there).
ESCAPED = Path("/var/tmp") / f"meworkd-escaped-{os.getpid()}.txt"


def _bwrap_runs() -> str | None:
    """Why bubblewrap cannot run here, or None when it can."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bwrap is not installed (apt install bubblewrap; scripts/test does where it can)"
    probe = subprocess.run(
        [bwrap, "--unshare-all", "--ro-bind", "/", "/", "true"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if probe.returncode != 0:
        return f"bwrap cannot build a sandbox here: {probe.stderr.strip()}"
    return None


WHY_NOT = _bwrap_runs()
needs_bwrap = pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT))


def prober(**sandbox: Any) -> dict[str, Any]:
    return {"command": PY, "args": [PROBER], "sandbox": sandbox}


def environ(home: Path, path: str | None = None) -> dict[str, str]:
    return {"PATH": path if path is not None else os.environ["PATH"], "HOME": str(home)}


async def attempt(c: Any, turn: Any, tool: str, **arguments: Any) -> str:
    text = text_of(await call_tool(c, turn, "p", tool, arguments))
    # The server keeps working after each attempt.
    assert text_of(await call_tool(c, turn, "p", "echo", {"text": "still here"})) == "still here"
    return text


@needs_bwrap
async def test_a_sandboxed_server_reaches_nothing_outside(short_tmp: Path) -> None:
    home = short_tmp / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    outside = short_tmp / "outside.txt"
    outside.write_text("not yours")
    allowed = short_tmp / "allowed"
    allowed.mkdir()
    servers = {"p": prober(filesystem={"write": [str(allowed)]}, network=False)}
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        async with (
            start_daemon(short_tmp, servers, environ=environ(home)) as (_d, sock),
            connect(sock) as c,
        ):
            turn = await begin_turn(c, ["p"])
            key = await attempt(c, turn, "read", path=str(home / ".ssh" / "id_ed25519"))
            assert key.startswith("refused: "), key
            assert (await attempt(c, turn, "read", path=str(outside))).startswith("refused: ")
            written = await attempt(c, turn, "write", path=str(ESCAPED))
            assert written.startswith("refused: "), written
            at_home = await attempt(c, turn, "write", path=str(home / "escaped.txt"))
            assert at_home.startswith("refused: "), at_home
            assert (await attempt(c, turn, "write", path="/etc/escaped")).startswith("refused: ")
            inside = await attempt(c, turn, "write", path=str(allowed / "ok.txt"))
            assert inside == "ok: written"
            reached = await attempt(c, turn, "connect", port=port)
            assert reached.startswith("refused: "), reached
            seen = json.loads((await attempt(c, turn, "processes")).removeprefix("ok: "))
            assert os.getpid() not in seen, seen
            assert len(seen) <= 3, seen  # bwrap's own init and the server
            tested = await c.call("servers.test", {"name": "p"})
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing reached the host's listener
    assert (allowed / "ok.txt").read_text() == "probe"
    assert not ESCAPED.exists()
    assert not (home / "escaped.txt").exists()
    assert not Path("/etc/escaped").exists()
    assert tested["ok"] is True, tested
    assert tested["sandbox"]["network"] is False
    assert tested["sandbox"]["write"] == [str(allowed)]
    assert "/usr" in tested["sandbox"]["read"]
    # Neither the home nor /tmp as a whole, nor anything of the test's own folder (the command's
    # own install is there when the checkout itself is under /tmp).
    read = tested["sandbox"]["read"]
    assert "/tmp" not in read
    assert not any(p == str(home) or p.startswith(str(short_tmp)) for p in read), read
    said = format_test(tested)
    assert f"Sandboxed (bubblewrap): no network; writes {allowed}" in said, said


@needs_bwrap
async def test_network_true_reaches_the_host(short_tmp: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        servers = {"p": prober(network=True)}
        async with (
            start_daemon(short_tmp, servers, environ=environ(short_tmp)) as (_d, sock),
            connect(sock) as c,
        ):
            turn = await begin_turn(c, ["p"])
            assert await attempt(c, turn, "connect", port=port) == "ok: connected"


@needs_bwrap
@pytest.mark.skipif(not FILESYSTEM.exists(), reason="scripts/test installs the npm test peers")
async def test_the_filesystem_server_works_sandboxed_to_one_directory(short_tmp: Path) -> None:
    shared = short_tmp / "shared"
    shared.mkdir()
    (shared / "note.txt").write_text("hello from the sandbox")
    (short_tmp / "secret.txt").write_text("outside")
    entry = {
        "command": str(FILESYSTEM),
        "args": [str(shared)],
        "sandbox": {"filesystem": {"write": [str(shared)]}},
        "timeoutSeconds": 60,
    }
    async with (
        start_daemon(short_tmp, {"p": entry}, environ=environ(short_tmp / "home")) as (_d, sock),
        connect(sock) as c,
    ):
        turn = await begin_turn(c, ["p"])
        note = await call_tool(c, turn, "p", "read_text_file", {"path": str(shared / "note.txt")})
        assert "hello from the sandbox" in text_of(note), note
        outside = await call_tool(
            c, turn, "p", "read_text_file", {"path": str(short_tmp / "secret.txt")}
        )
        assert outside.get("isError") is True, outside


async def test_missing_bwrap_is_sandbox_unavailable_and_says_how_to_fix(short_tmp: Path) -> None:
    empty = short_tmp / "bin"
    empty.mkdir()
    servers = {"p": prober()}
    async with (
        start_daemon(short_tmp, servers, environ=environ(short_tmp, str(empty))) as (_d, sock),
        connect(sock) as c,
    ):
        result = await c.call("servers.test", {"name": "p"})
    assert result["ok"] is False, result
    assert result["kind"] == "sandbox_unavailable", result
    assert "bwrap is missing" in result["error"]
    assert "apt install bubblewrap" in result["error"]
    assert "turn this entry's sandbox off" in result["error"]


FAKE_BWRAP = """#!/bin/sh
echo "bwrap: No permissions to create new namespace, likely because the kernel does not allow \
non-privileged user namespaces." >&2
exit 1
"""


async def test_namespaces_refused_is_sandbox_unavailable_and_says_how_to_fix(
    short_tmp: Path,
) -> None:
    """What bwrap prints where unprivileged user namespaces are off (a stand-in ``bwrap`` says
    it, since this machine allows them): never run unsandboxed, the sysctls named."""
    bin_dir = short_tmp / "bin"
    bin_dir.mkdir()
    (bin_dir / "bwrap").write_text(FAKE_BWRAP)
    (bin_dir / "bwrap").chmod(0o755)
    path = f"{bin_dir}:{os.environ['PATH']}"
    async with (
        start_daemon(short_tmp, {"p": prober()}, environ=environ(short_tmp, path)) as (_d, sock),
        connect(sock) as c,
    ):
        result = await c.call("servers.test", {"name": "p"})
    assert result["kind"] == "sandbox_unavailable", result
    assert "kernel.unprivileged_userns_clone" in result["error"], result
    assert "kernel.apparmor_restrict_unprivileged_userns" in result["error"], result


async def test_sandbox_default_sandboxes_new_entries_only(short_tmp: Path) -> None:
    existing = {"command": PY, "args": [PROBER]}
    async with start_daemon(short_tmp, {"old": existing}) as (_d, sock), connect(sock) as c:
        await c.call("settings.setMcpOptions", {"sandbox_default": True})
        await c.call("servers.add", {"name": "new", "server": {"command": PY, "args": [PROBER]}})
        await c.call("servers.import", {"text": json.dumps({"mcpServers": {"imp": existing}})})
        remote = {"url": "https://example.com/mcp"}
        await c.call("servers.add", {"name": "web", "server": remote})
        off = {"command": PY, "sandbox": {"enabled": False}}
        await c.call("servers.add", {"name": "off", "server": off})
    doc = json.loads((short_tmp / "settings.json").read_text())["assets"]["mcpServers"]
    assert "sandbox" not in doc["old"]
    assert doc["new"]["sandbox"] == {"enabled": True}
    assert doc["imp"]["sandbox"] == {"enabled": True}
    assert "sandbox" not in doc["web"]
    assert doc["off"]["sandbox"] == {"enabled": False}


@pytest.mark.parametrize(
    ("sandbox", "error"),
    [
        ({"filesystem": {"read": ["relative/path"]}}, "p.sandbox.filesystem.read[0]: expected"),
        ({"enabled": "yes"}, "p.sandbox.enabled: expected bool, got str"),
        ({"network": 1}, "p.sandbox.network: expected bool, got int"),
        ({"filesystem": {"reed": []}}, "p.sandbox.filesystem: object contains unknown field"),
    ],
)
async def test_bad_sandboxes_are_refused_with_a_clear_error(
    short_tmp: Path, sandbox: object, error: str
) -> None:
    async with start_daemon(short_tmp, {}) as (_d, sock), connect(sock) as c:
        with pytest.raises(Exception) as caught:
            await c.call("servers.add", {"name": "p", "server": prober(**sandbox)})  # type: ignore[arg-type]
        assert error in str(caught.value), caught.value
        remote = {"url": "https://example.com/mcp", "sandbox": {"enabled": True}}
        with pytest.raises(Exception) as caught:
            await c.call("servers.add", {"name": "r", "server": remote})
        assert "r.sandbox: only a stdio server runs in a sandbox" in str(caught.value)


@needs_bwrap
@pytest.mark.parametrize(
    ("what", "key", "value"), [("cpu", "cpuSeconds", 1), ("memory", "memoryMiB", 64)]
)
async def test_limits_hold_inside_the_sandbox(
    short_tmp: Path, what: str, key: str, value: int
) -> None:
    """A sandboxed server gets its limits too (set inside the sandbox), and dying on one is
    recognised through bwrap (which exits with 128 + the signal)."""
    entry = {
        "command": PY,
        "args": [str(SERVERS / "greedy.py"), "--exceed", what],
        "limits": {key: value},
        "sandbox": {},
        "timeoutSeconds": 30,
    }
    async with (
        start_daemon(short_tmp, {"g": entry}, environ=environ(short_tmp)) as (_d, sock),
        connect(sock) as c,
    ):
        result = await c.call("servers.test", {"name": "g"})
    assert result["kind"] == "resource_limit", result
    assert result["limit"] == key, result
