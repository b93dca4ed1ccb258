"""What hostile local clients can make the daemon hold (issue 28, section 3): RSS growth of a
``meworkd`` subprocess under two attacks, while another client is served throughout.

- ``unread-batches``: one connection sends batches of 256 ``settings.get`` (the settings file
  padded to about 3.5 MiB, so each member's reply is the largest a method gives) and never reads.
  Target: at most 64 MiB of growth.
- ``partial-lines``: 1,000 connections each send the start of a line (up to 8 MiB of it, as much
  as the daemon takes) and never finish it. Target: at most 128 MiB of growth.

Growth is the kernel's high-water mark (``VmHWM``, reset through ``/proc/PID/clear_refs`` once
the daemon is started and idle) minus the RSS then: a buffer held for a moment counts too. A
second connection calls ``daemon.status`` over and over during the attack; every call must be
answered. Run with the project's venv::

    .venv/bin/python bench/rpc_memory.py                   # both attacks on this tree
    .venv/bin/python bench/rpc_memory.py --src /path/tree  # a daemon imported from another tree
    .venv/bin/python bench/rpc_memory.py --only partial-lines --seconds 20
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import DaemonProc, install_cleanup, kill_everything, remove_tree, short_tmpdir

MIB = 1024 * 1024
TARGETS = {"unread-batches": 64 * MIB, "partial-lines": 128 * MIB}
PADDING = 3_500_000  # bytes of the settings file's padding: settings.get replies ~3.5 MB


def vm(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field}")


class Served:
    """Another client, asking ``daemon.status`` over and over on its own connection."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.answered = 0
        self.failed: list[str] = []
        self.worst = 0.0
        self.last: dict[str, Any] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Served:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(30)
            s.connect(str(self.path))
            reader = s.makefile("rb")
            n = 0
            while not self._stop.is_set():
                n += 1
                t0 = time.perf_counter()
                try:
                    s.sendall(b'{"jsonrpc":"2.0","id":%d,"method":"daemon.status"}\n' % n)
                    reply = json.loads(reader.readline())
                except (OSError, ValueError) as exc:
                    self.failed.append(repr(exc))
                    return
                self.worst = max(self.worst, time.perf_counter() - t0)
                if reply.get("id") != n or "result" not in reply:
                    self.failed.append(str(reply)[:200])
                    return
                self.answered += 1
                self.last = reply["result"]
                time.sleep(0.05)


def push(sock: socket.socket, data: bytes | memoryview) -> int:
    """What the socket takes now; -1 once the daemon has closed it."""
    try:
        return sock.send(data)
    except BlockingIOError:
        return 0
    except OSError:
        return -1


def unread_batches(d: DaemonProc, seconds: float) -> dict[str, Any]:
    batch = [{"jsonrpc": "2.0", "id": i, "method": "settings.get"} for i in range(256)]
    line = json.dumps(batch).encode() + b"\n"
    sent = 0
    closed = False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(d.socket))
        s.setblocking(False)
        view = memoryview(b"")
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not view:
                view = memoryview(line)
            n = push(s, view)
            if n < 0:
                closed = True
                break
            sent += n
            view = view[n:]
            if not n:
                time.sleep(0.01)
    return {"bytes_sent": sent, "batches_sent": sent // len(line), "cut_by_the_daemon": closed}


def partial_lines(d: DaemonProc, seconds: float, count: int = 1000) -> dict[str, Any]:
    head = b'{"jsonrpc":"2.0","id":1,"method":"daemon.status","params":{"p":"'
    body = memoryview(head + b"q" * (8 * MIB - len(head) - 100))
    socks: list[socket.socket] = []
    offsets: list[int] = []
    closed = 0
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(d.socket))
            s.setblocking(False)
            socks.append(s)
            offsets.append(0)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            moved = 0
            for i, s in enumerate(socks):
                if offsets[i] < 0 or offsets[i] >= len(body):
                    continue
                n = push(s, body[offsets[i] : offsets[i] + 256 * 1024])
                if n < 0:
                    offsets[i] = -1
                    closed += 1
                else:
                    offsets[i] += n
                    moved += n
            if not moved:
                time.sleep(0.05)
        sent = sum(o for o in offsets if o > 0)
    finally:
        for s in socks:
            s.close()
    return {"connections": count, "bytes_sent": sent, "connections_cut_seen": closed}


ATTACKS = {"unread-batches": unread_batches, "partial-lines": partial_lines}


class TreeDaemon(DaemonProc):
    """The daemon, imported from another source tree when ``src`` is given (both its packages:
    ``meworkd`` and, under ``clients/``, ``mework_protocol``)."""

    def environ(self) -> dict[str, str]:
        env = super().environ()
        if self.src is not None:
            env["PYTHONPATH"] = f"{self.src}:{self.src / 'clients'}"
        return env


def run(name: str, seconds: float, src: Path | None) -> dict[str, Any]:
    root = short_tmpdir("mwm-")
    d = TreeDaemon(root, src)
    try:
        d.settings.parent.mkdir(parents=True, exist_ok=True)
        d.settings.write_text(json.dumps({"servers": {}, "x-pad": "x" * PADDING}))
        d.start()
        time.sleep(1.0)  # let start-up settle before the baseline
        Path(f"/proc/{d.pid}/clear_refs").write_text("5")
        base = d.rss()
        with Served(d.socket) as served:
            detail = ATTACKS[name](d, seconds)
            time.sleep(1.0)
        growth = vm(d.pid, "VmHWM") - base
        result = {
            "attack": name,
            "peak_rss_growth_mib": round(growth / MIB, 1),
            "target_mib": TARGETS[name] // MIB,
            "within_target": growth <= TARGETS[name],
            "other_client_answered": served.answered,
            "other_client_failed": served.failed,
            "other_client_worst_s": round(served.worst, 3),
            "daemon_alive": d.proc is not None and d.proc.poll() is None,
            "rpc_memory": served.last.get("rpcMemory"),
            **detail,
        }
    finally:
        d.stop()
        remove_tree(root)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=sorted(ATTACKS), action="append")
    parser.add_argument("--seconds", type=float, default=15.0, help="length of each attack")
    parser.add_argument("--src", type=Path, help="import meworkd from this source tree")
    args = parser.parse_args()
    install_cleanup()
    ok = True
    try:
        for name in args.only or list(ATTACKS):
            result = run(name, args.seconds, args.src)
            print(json.dumps(result), flush=True)
            ok &= bool(result["within_target"] and not result["other_client_failed"])
            ok &= bool(result["daemon_alive"] and result["other_client_answered"])
    finally:
        kill_everything()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
