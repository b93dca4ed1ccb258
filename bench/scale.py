"""Scale benchmarks (issue 19): what N conversations x M servers cost, and turn start after prepare.

``.venv/bin/python bench/scale.py [--quick] [--out bench/scale-results.json]``

* S1 memory: N conversations (N = 1, 10, 50) each selecting a Node.js server (server-filesystem
  from .peers), a Python server (mcp-server-time) and the bench fixture (bench/servers/minimal.py);
  after one ``turns.begin`` each, the daemon's RSS, the children's RSS and PSS
  (/proc/PID/smaps_rollup), the process count and the open descriptors, per live session. The
  same with every server ``"sessionScope": "shared"`` shows what sharing saves.
* S2 servers: one conversation with M fixture servers (M = 1, 5, 10, 20): memory and the cold
  and warm turn start.
* S3 prepare: ``conversations.prepare`` then (once every server is connected) ``turns.begin``,
  against a warm ``turns.begin`` on the same conversation, interleaved; ratio of medians.

Like bench.py: the daemon is a subprocess in a private XDG tree; every process is stopped at the
end. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import psutil
from harness import (
    BENCH,
    MINIMAL,
    PYTHON,
    DaemonProc,
    dump_json,
    install_cleanup,
    interleave,
    kill_everything,
    leftovers,
    log,
    median,
    remove_tree,
    short_tmpdir,
)
from mework_client.aio import AsyncClient, connect

ROOT = BENCH.parent
NODE_FS = ROOT / ".peers" / "node_modules" / ".bin" / "mcp-server-filesystem"
TIME = ROOT / ".venv" / "bin" / "mcp-server-time"
KINDS = ("node", "time", "fixture")
BIG_BUDGET = 10_000  # the budget must not close what is being measured


def entry(kind: str, scope: str, data: Path) -> dict[str, Any]:
    if kind == "node":
        e: dict[str, Any] = {"command": str(NODE_FS), "args": [str(data)]}
    elif kind == "time":
        e = {"command": str(TIME), "args": []}
    else:
        e = {"command": PYTHON, "args": [MINIMAL]}
    return {"type": "stdio", **e, "sessionScope": scope}


def write_settings(daemon: DaemonProc, servers: dict[str, Any]) -> None:
    daemon.settings.parent.mkdir(parents=True, exist_ok=True)
    doc = {"assets": {"mcpServers": servers}, "mcp": {"max_live_sessions": BIG_BUDGET}}
    daemon.settings.write_text(json.dumps(doc, indent=2))
    daemon.settings.chmod(0o600)


def pss(proc: psutil.Process) -> int:
    """PSS from /proc/PID/smaps_rollup (shared pages split among their users), else RSS."""
    try:
        for line in Path(f"/proc/{proc.pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(proc.memory_info().rss)


def footprint(daemon: DaemonProc) -> dict[str, float]:
    me = psutil.Process(daemon.pid)
    kids = daemon.children()
    rss = pss_sum = fds = 0
    for k in kids:
        try:
            rss += k.memory_info().rss
            pss_sum += pss(k)
            fds += k.num_fds()
        except psutil.Error:
            continue
    return {
        "daemon_rss_mib": me.memory_info().rss / 2**20,
        "daemon_fds": me.num_fds(),
        "children": len(kids),
        "children_rss_mib": rss / 2**20,
        "children_pss_mib": pss_sum / 2**20,
        "children_fds": fds,
    }


async def settle(daemon: DaemonProc, count: int, bound: float = 60.0) -> None:
    """Wait (polling, bounded) until the daemon has ``count`` children: exits send no event."""
    with anyio.fail_after(bound):
        while len(daemon.children()) != count:
            await anyio.sleep(0.05)


async def open_conversations(
    c: AsyncClient, prefix: str, n: int, servers: list[str], parallel: int = 5
) -> list[float]:
    """Create ``n`` conversations and begin a turn in each; the turn-start seconds, in order."""
    times: list[float] = [0.0] * n
    limiter = anyio.CapacityLimiter(parallel)

    async def one(i: int) -> None:
        async with limiter:
            cid = f"{prefix}-{i}"
            await c.call("conversations.create", {"id": cid, "mcpServers": servers})
            t = time.perf_counter()
            turn = await c.call("turns.begin", {"conversationId": cid})
            times[i] = time.perf_counter() - t
            assert not turn["failures"], turn["failures"]

    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(one, i)
    return times


async def delete_conversations(c: AsyncClient, daemon: DaemonProc, prefix: str, n: int) -> None:
    for i in range(n):
        await c.call("conversations.delete", {"id": f"{prefix}-{i}"})


async def s1_memory(c: AsyncClient, daemon: DaemonProc, counts: list[int]) -> list[dict]:
    rows = []
    base = footprint(daemon)
    for scope in ("conversation", "shared"):
        servers = [f"{k}-{scope}" for k in KINDS]
        for n in counts:
            prefix = f"s1-{scope}-{n}"
            turn_s = await open_conversations(c, prefix, n, servers)
            sessions = (await c.call("daemon.status"))["sessions"]
            fp = footprint(daemon)
            rows.append(
                {
                    "scope": scope,
                    "conversations": n,
                    "servers": len(servers),
                    "sessions": sessions,
                    **fp,
                    "daemon_growth_mib": fp["daemon_rss_mib"] - base["daemon_rss_mib"],
                    "turn_start_median_ms": median(turn_s) * 1e3,
                }
            )
            log(f"  S1 {scope} N={n}: {rows[-1]}")
            await delete_conversations(c, daemon, prefix, n)
            await settle(daemon, len(servers) if scope == "shared" else 0)
    return rows


async def s1_per_kind(c: AsyncClient, daemon: DaemonProc, n: int) -> dict[str, dict[str, float]]:
    """What one session of each kind costs: N conversations with only that server."""
    out = {}
    for kind in KINDS:
        prefix = f"s1k-{kind}"
        await open_conversations(c, prefix, n, [f"{kind}-conversation"])
        fp = footprint(daemon)
        out[kind] = {
            "children_per_session": fp["children"] / n,
            "rss_mib_per_session": fp["children_rss_mib"] / n,
            "pss_mib_per_session": fp["children_pss_mib"] / n,
            "fds_per_session": fp["children_fds"] / n,
        }
        log(f"  S1 per kind {kind}: {out[kind]}")
        await delete_conversations(c, daemon, prefix, n)
        await settle(daemon, 0)
    return out


async def s2_servers(c: AsyncClient, daemon: DaemonProc, ms: list[int]) -> list[dict]:
    rows = []
    for m in ms:
        servers = [f"fx{i}" for i in range(m)]
        cold = await open_conversations(c, f"s2-{m}", 1, servers)
        warm = []
        for _ in range(5):
            t = time.perf_counter()
            await c.call("turns.begin", {"conversationId": f"s2-{m}-0"})
            warm.append(time.perf_counter() - t)
        fp = footprint(daemon)
        rows.append(
            {
                "servers": m,
                "cold_turn_ms": cold[0] * 1e3,
                "warm_turn_ms": median(warm) * 1e3,
                **fp,
            }
        )
        log(f"  S2 M={m}: {rows[-1]}")
        await delete_conversations(c, daemon, f"s2-{m}", 1)
        await settle(daemon, 0)
    return rows


async def s3_prepare(c: AsyncClient, ev: AsyncClient, daemon: DaemonProc, rounds: int) -> dict:
    servers = [f"fx{i}" for i in range(10)]
    counter = iter(range(1_000_000))
    warm_conv = "s3-warm"
    await c.call("conversations.create", {"id": warm_conv, "mcpServers": servers})
    await c.call("turns.begin", {"conversationId": warm_conv})
    prepare_ms: list[float] = []

    async def prepared(_r: int) -> list[float]:
        cid = f"s3-{next(counter)}"
        await c.call("conversations.create", {"id": cid, "mcpServers": servers})
        t0 = time.perf_counter()
        reply = await c.call("conversations.prepare", {"conversationId": cid})
        pending = set(reply["connecting"])
        with anyio.fail_after(60):
            while pending:  # the user is still typing: the servers connect meanwhile
                _topic, data = await ev.next_event("server.status")
                if data["conversation"] == cid and data["status"] == "connected":
                    pending.discard(data["server"])
        prepare_ms.append((time.perf_counter() - t0) * 1e3)
        t = time.perf_counter()
        await c.call("turns.begin", {"conversationId": cid})
        dt = time.perf_counter() - t
        await c.call("conversations.delete", {"id": cid})
        await settle(daemon, len(servers))
        return [dt]

    async def warm(_r: int) -> list[float]:
        t = time.perf_counter()
        await c.call("turns.begin", {"conversationId": warm_conv})
        return [time.perf_counter() - t]

    p, w = await interleave(rounds, [prepared, warm])
    await c.call("conversations.delete", {"id": warm_conv})
    await settle(daemon, 0)
    return {
        "ratio": median(p) / median(w),
        "prepared_turn_ms": [x * 1e3 for x in p],
        "warm_turn_ms": [x * 1e3 for x in w],
        "prepare_to_connected_ms": prepare_ms,
    }


async def run_all(args: argparse.Namespace) -> dict[str, Any]:
    root = short_tmpdir("mws-")
    daemon = DaemonProc(root)
    data = root / "fsdata"
    data.mkdir()
    servers: dict[str, Any] = {}
    for scope in ("conversation", "shared"):
        for kind in KINDS:
            servers[f"{kind}-{scope}"] = entry(kind, scope, data)
    for i in range(20):
        servers[f"fx{i}"] = {"type": "stdio", "command": PYTHON, "args": [MINIMAL]}
    write_settings(daemon, servers)
    counts = [1, 10] if args.quick else [1, 10, 25, 50]
    out: dict[str, Any] = {"loadavg_start": os.getloadavg()}
    t_all = time.perf_counter()
    try:
        daemon.start()
        async with connect(daemon.socket) as c, connect(daemon.socket) as ev:
            await ev.subscribe(["server.status"])
            # Shared sessions outlive the conversations (until idle): S1 runs last.
            out["S1_per_kind"] = await s1_per_kind(c, daemon, 10)
            out["S2"] = await s2_servers(c, daemon, [1, 5, 10, 20])
            out["S3"] = await s3_prepare(c, ev, daemon, 3 if args.quick else 9)
            log(f"  S3 prepared/warm: {out['S3']['ratio']:.2f}x")
            out["S1"] = await s1_memory(c, daemon, counts)
    finally:
        daemon.stop()
    out["leftover_processes"] = leftovers()
    kill_everything()
    remove_tree(root)
    out["loadavg_end"] = os.getloadavg()
    out["wall_seconds"] = round(time.perf_counter() - t_all, 1)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description="meworkd scale benchmarks (see bench/README.md)")
    p.add_argument("--out", type=Path, default=BENCH / "scale-results.json")
    p.add_argument("--quick", action="store_true", help="N = 1, 10 only; fewer S3 rounds")
    args = p.parse_args()
    install_cleanup()
    result = anyio.run(run_all, args)
    dump_json(args.out, result)
    print(json.dumps(result, indent=1)[:4000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
