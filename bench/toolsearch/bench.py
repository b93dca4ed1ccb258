"""Tool search bench: recall@5 on real tools, search time over 1,000 tools, turns.begin on/off.

    .venv/bin/python bench/toolsearch/bench.py          # everything (~1 min here)
    .venv/bin/python bench/toolsearch/bench.py --quick  # fewer repetitions

Not a test (no timing is asserted anywhere); it prints a table and writes
bench/toolsearch/results.json. The corpus (bench/toolsearch/corpus/*.json) is what real servers
answered to ``tools/list`` (record.py re-records it); queries.json holds questions as a user
would ask them, each with the tools that answer it (any of them in the top 5 is a hit).

1. recall@5: every query against the whole corpus, through the same ``TurnSearch`` the daemon
   uses (bound names, the model-facing definitions).
2. search time: the corpus copied with varied server names until it holds 1,000 tools; every
   query searched many times; p50/p95/p99 of one search (the index is built before, and its
   build time is reported on its own).
3. turns.begin: a real daemon (subprocess, own XDG directories) with the corpus served by the
   stdlib fake server (``--tools-file``), 12 servers over 400 tools; ``turns.begin`` timed with
   ``mcp.tool_search`` "on" and "off", interleaved, sessions warm. The verdict is the ratio of
   the medians (this machine is shared: absolute times are printed, not judged).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

from mework_client import Client  # noqa: E402

from meworkd.core.catalog import Binding, tool_name  # noqa: E402
from meworkd.core.toolsearch import TurnSearch  # noqa: E402

CORPUS = HERE / "corpus"
FAKE = ROOT / "tests" / "servers" / "fake.py"
BEGIN_SERVERS = (
    "word", "powerpoint", "ea-playwright", "chrome-devtools", "mongodb", "github",
    "desktop-commander", "playwright", "notion", "kubernetes", "hubspot", "arxiv",
)  # fmt: skip


def load_corpus() -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(CORPUS.glob("*.json"))}


def turn_search(corpus: dict[str, dict[str, Any]], copies: int = 1) -> TurnSearch:
    """The corpus bound as one turn (``copies`` > 1: again under varied server names)."""
    tools: list[dict[str, Any]] = []
    bindings: dict[str, Binding] = {}
    for copy in range(copies):
        for server, document in corpus.items():
            name = server if copy == 0 else f"{server}-{copy}"
            for tool in document["tools"]:
                bound = tool_name(name, tool["name"])
                bindings[bound] = Binding(name, tool["name"], None, False)
                tools.append({**tool, "name": bound})
    return TurnSearch(tools, bindings)


def recall(corpus: dict[str, dict[str, Any]]) -> dict[str, Any]:
    search = turn_search(corpus)
    queries = json.loads((HERE / "queries.json").read_text())
    misses: list[dict[str, Any]] = []
    for q in queries:
        expected = {tool_name(*e.split("/", 1)) for e in q["expect"]}
        found = [tool["name"] for tool, _ in search.find(q["query"], 5, lambda _b: True)]
        if not expected & set(found):
            shown = [f"{search.bindings[n].server}/{search.bindings[n].tool}" for n in found]
            misses.append({"query": q["query"], "expect": q["expect"], "got": shown})
    hits = len(queries) - len(misses)
    return {
        "queries": len(queries),
        "hits": hits,
        "recall@5": hits / len(queries),
        "misses": misses,
    }


def search_times(corpus: dict[str, dict[str, Any]], rounds: int) -> dict[str, Any]:
    size = sum(len(d["tools"]) for d in corpus.values())
    copies = -(-1000 // size)
    search = turn_search(corpus, copies)
    search.tools = search.tools[:1000]  # exactly 1,000 (bindings beyond are unused)
    started = time.perf_counter()
    search.find("warm up", 5, lambda _b: True)  # builds the index
    build_ms = (time.perf_counter() - started) * 1000
    queries = [q["query"] for q in json.loads((HERE / "queries.json").read_text())]
    samples: list[float] = []
    for _ in range(rounds):
        for query in queries:
            t0 = time.perf_counter()
            search.find(query, 5, lambda _b: True)
            samples.append((time.perf_counter() - t0) * 1000)
    cuts = statistics.quantiles(samples, n=100)
    return {
        "tools": len(search.tools),
        "searches": len(samples),
        "index_build_ms": round(build_ms, 2),
        "p50_ms": round(cuts[49], 3),
        "p95_ms": round(cuts[94], 3),
        "p99_ms": round(cuts[98], 3),
    }


def _settings(mode: str) -> dict[str, Any]:
    servers = {
        s: {
            "command": sys.executable,
            "args": [str(FAKE), "--tools-file", str(CORPUS / f"{s}.json"), "--tools", "5"],
        }
        for s in BEGIN_SERVERS
    }
    return {"assets": {"mcpServers": servers}, "mcp": {"tool_search": mode}}


def begin_times(repetitions: int) -> dict[str, Any]:
    """turns.begin with tool search on and off: two daemons, requests interleaved."""
    root = Path(tempfile.mkdtemp(prefix="mwts-", dir="/tmp"))
    daemons: list[subprocess.Popen[bytes]] = []
    clients: dict[str, tuple[Client, str]] = {}
    try:
        for mode in ("on", "off"):
            home = root / mode
            (home / "cfg" / "mework").mkdir(parents=True)
            (home / "run").mkdir(mode=0o700)
            settings = home / "cfg" / "mework" / "settings.json"
            settings.write_text(json.dumps(_settings(mode)))
            settings.chmod(0o600)
            env = {
                **os.environ,
                "XDG_CONFIG_HOME": str(home / "cfg"),
                "XDG_RUNTIME_DIR": str(home / "run"),
                "XDG_STATE_HOME": str(home / "state"),
            }
            meworkd = str(Path(sys.executable).parent / "meworkd")
            quiet = subprocess.DEVNULL
            daemons.append(subprocess.Popen([meworkd], env=env, stdout=quiet, stderr=quiet))
            socket = home / "run" / "mework" / "meworkd.sock"
            deadline = time.monotonic() + 30
            while not socket.exists():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the {mode} daemon did not start")
                time.sleep(0.05)
            client = Client(str(socket))
            conversation = client.call("conversations.create", {"mcpServers": list(BEGIN_SERVERS)})
            clients[mode] = (client, conversation["id"])
        times: dict[str, list[float]] = {"on": [], "off": []}
        counts: dict[str, int] = {}
        for round_ in range(repetitions + 3):
            order = ("on", "off") if round_ % 2 == 0 else ("off", "on")
            for mode in order:
                client, conversation = clients[mode]
                t0 = time.perf_counter()
                turn = client.call("turns.begin", {"conversationId": conversation})
                elapsed = (time.perf_counter() - t0) * 1000
                client.call("turns.end", {"turnId": turn["turnId"]})
                counts[mode] = len(turn["tools"])
                counts["bound"] = len(turn["allTools"])
                if round_ >= 3:  # the first rounds open the sessions
                    times[mode].append(elapsed)
        on, off = statistics.median(times["on"]), statistics.median(times["off"])
        return {
            "servers": len(BEGIN_SERVERS),
            "tools_bound": counts["bound"],
            "offered_on": counts["on"],
            "offered_off": counts["off"],
            "repetitions": repetitions,
            "median_on_ms": round(on, 2),
            "median_off_ms": round(off, 2),
            "ratio_on_over_off": round(on / off, 3),
        }
    finally:
        for client, _ in clients.values():
            client.close()
        for proc in daemons:
            proc.terminate()
            proc.wait(timeout=15)
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-daemon", action="store_true", help="skip the turns.begin part")
    args = parser.parse_args()
    corpus = load_corpus()
    sources = {s: d["source"] for s, d in corpus.items()}
    results: dict[str, Any] = {
        "corpus": {"servers": len(corpus), "tools": sum(len(d["tools"]) for d in corpus.values())},
        "sources": sources,
        "recall": recall(corpus),
        "search": search_times(corpus, 5 if args.quick else 40),
    }
    if not args.no_daemon:
        results["begin"] = begin_times(10 if args.quick else 40)
    (HERE / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    r, s = results["recall"], results["search"]
    print(f"corpus        {results['corpus']['tools']} tools from {len(corpus)} servers")
    print(f"recall@5      {r['recall@5']:.3f} ({r['hits']}/{r['queries']})   target >= 0.9")
    for miss in r["misses"]:
        print(f"  missed: {miss['query']!r} -> {miss['got'][:3]}")
    print(
        f"search        p50 {s['p50_ms']} ms, p95 {s['p95_ms']} ms, p99 {s['p99_ms']} ms over "
        f"{s['tools']} tools ({s['searches']} searches; index built in {s['index_build_ms']} ms)"
        "   target p95 <= 5 ms"
    )
    if "begin" in results:
        b = results["begin"]
        print(
            f"turns.begin   on {b['median_on_ms']} ms ({b['offered_on']} offered), off "
            f"{b['median_off_ms']} ms ({b['offered_off']} offered), {b['tools_bound']} tools "
            f"bound: ratio {b['ratio_on_over_off']}   target <= 1.0 (within noise)"
        )


if __name__ == "__main__":
    main()
