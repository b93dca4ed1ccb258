"""Two daemons side by side: B1's echo call, interleaved in short blocks, paired block by block.

``.venv/bin/python bench/pair.py OLD_SRC NEW_SRC [--blocks 40] [--calls 100] [--old-path DIR]``

Each ``*_SRC`` is a tree holding ``meworkd/`` (``git archive COMMIT meworkd | tar -x -C DIR``);
each daemon imports meworkd from there (PYTHONPATH), as ``bench.py --daemon-src`` does.
``--old-path`` is put first on the old daemon's PYTHONPATH (e.g. a directory whose
``sniffio.py`` raises ModuleNotFoundError, to run it without a dependency added since).

Why: on a loaded machine (other suites running) B1's ratio moves by ±0.1 from run to run, more
than one change to the call path is worth. Here the two daemons take turns every ``--calls``
calls (about a tenth of a second), so both see the same load; each block's daemon CPU comes
from ``/proc/PID/task/*/schedstat`` (nanoseconds, every thread), and each adjacent pair of
blocks gives one new/old ratio. The median ratio over the pairs, with its quartiles, is the
result; it says how much the daemon's own work per call changed, not what B1 will read.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from harness import MINIMAL, PYTHON, DaemonProc, remove_tree, short_tmpdir
from mework_client.aio import AsyncClient, connect


class SrcDaemon(DaemonProc):
    """A daemon importing meworkd from ``src``, with ``first`` ahead of it on the path."""

    def __init__(self, root: Path, src: Path, first: str | None = None) -> None:
        super().__init__(root, src)
        self.first = first

    def environ(self) -> dict[str, str]:
        env = super().environ()
        if self.first:
            env["PYTHONPATH"] = f"{self.first}:{env['PYTHONPATH']}"
        return env


def on_cpu(pid: int) -> float:
    """Seconds the process's threads have run (schedstat: nanoseconds, unlike cpu_times)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
        except OSError:
            pass  # a thread that ended meanwhile
    return total / 1e9


async def prepare(daemon: DaemonProc, stack: AsyncExitStack) -> tuple[AsyncClient, dict[str, Any]]:
    client = await stack.enter_async_context(connect(daemon.socket))
    entry = {"command": PYTHON, "args": [MINIMAL]}
    await client.call("servers.add", {"name": "echo", "server": entry})
    conversation = {"id": "b1", "mcpServers": ["echo"], "approvalLevel": "full_access"}
    await client.call("conversations.create", conversation)
    turn = await client.call("turns.begin", {"conversationId": "b1"})
    name = next(n for n, b in turn["bindings"].items() if b["tool"] == "echo")
    return client, {"turnId": turn["turnId"], "name": name, "arguments": {"text": "x"}}


async def block(client: AsyncClient, params: dict[str, Any], calls: int) -> float:
    """The median latency of ``calls`` sequential calls, in seconds."""
    latencies = []
    for _ in range(calls):
        started = time.perf_counter()
        reply = await client.call("turns.callTool", params)
        latencies.append(time.perf_counter() - started)
    assert reply["content"][0]["text"] == "x", reply
    return statistics.median(latencies)


def quartiles(values: list[float]) -> str:
    v = sorted(values)
    return f"{statistics.median(v):.3f} [{v[len(v) // 4]:.3f}-{v[(3 * len(v)) // 4]:.3f}]"


async def run(args: argparse.Namespace) -> None:
    roots = {"old": short_tmpdir("mwp-"), "new": short_tmpdir("mwp-")}
    daemons = {
        "old": SrcDaemon(roots["old"], args.old, args.old_path),
        "new": SrcDaemon(roots["new"], args.new),
    }
    try:
        for daemon in daemons.values():
            daemon.start()
        async with AsyncExitStack() as stack:
            ready = {k: await prepare(d, stack) for k, d in daemons.items()}
            cpu = dict.fromkeys(daemons, 0.0)
            pairs: list[tuple[float, float]] = []  # (CPU new/old, median latency new/old)
            for rnd in range(-1, args.blocks):  # round -1 warms both up
                this: dict[str, tuple[float, float]] = {}
                for key in ("old", "new") if rnd % 2 else ("new", "old"):
                    before = on_cpu(daemons[key].pid)
                    median = await block(*ready[key], args.calls)
                    this[key] = (on_cpu(daemons[key].pid) - before, median)
                if rnd >= 0:
                    for key, (used, _median) in this.items():
                        cpu[key] += used
                    new, old = this["new"], this["old"]
                    pairs.append((new[0] / old[0], new[1] / old[1]))
    finally:
        for daemon in daemons.values():
            daemon.stop()
        for root in roots.values():
            remove_tree(root)
    calls = args.blocks * args.calls
    per_call = {k: v / calls * 1e6 for k, v in cpu.items()}
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"{len(pairs)} pairs of {args.calls} calls, load {load}: daemon CPU per call "
        f"old {per_call['old']:.0f} us, new {per_call['new']:.0f} us; new/old per pair, median "
        f"[quartiles]: CPU {quartiles([p[0] for p in pairs])}, "
        f"latency {quartiles([p[1] for p in pairs])}"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("old", type=Path)
    p.add_argument("new", type=Path)
    p.add_argument("--blocks", type=int, default=40)
    p.add_argument("--calls", type=int, default=100)
    p.add_argument("--old-path", help="put first on the old daemon's PYTHONPATH")
    anyio.run(run, p.parse_args())


if __name__ == "__main__":
    main()
