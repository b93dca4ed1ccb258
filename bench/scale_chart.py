"""Draw bench/scale.png from bench/scale-results.json (runs in bench/.venv-tools: matplotlib, Agg).

``python bench/scale_chart.py bench/scale-results.json bench/scale.png``

Left: memory against conversations (3 servers each), per-conversation sessions against shared
ones. Middle: memory against servers (one conversation). Right: turn start against servers,
cold (spawns + handshakes + tools/list) and warm (pooled sessions).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def main() -> None:
    src, dst = Path(sys.argv[1]), Path(sys.argv[2])
    data = json.loads(src.read_text())
    fig, (mem_n, mem_m, turn_m) = plt.subplots(1, 3, figsize=(15, 4.6))

    for scope, style in (("conversation", "-o"), ("shared", "--s")):
        rows = [r for r in data["S1"] if r["scope"] == scope]
        n = [r["conversations"] for r in rows]
        mem_n.plot(n, [r["children_pss_mib"] for r in rows], style, label=f"servers PSS ({scope})")
        mem_n.plot(n, [r["daemon_rss_mib"] for r in rows], style, label=f"daemon RSS ({scope})")
    mem_n.set(xlabel="conversations (3 servers each)", ylabel="MiB")
    mem_n.set_title("memory vs conversations")
    mem_n.legend(fontsize=8)

    rows = data["S2"]
    m = [r["servers"] for r in rows]
    mem_m.plot(m, [r["children_pss_mib"] for r in rows], "-o", label="servers PSS")
    mem_m.plot(m, [r["children_rss_mib"] for r in rows], "-^", label="servers RSS")
    mem_m.plot(m, [r["daemon_rss_mib"] for r in rows], "-s", label="daemon RSS")
    mem_m.set(xlabel="servers (one conversation)", ylabel="MiB", title="memory vs servers")
    mem_m.legend(fontsize=8)

    turn_m.plot(m, [r["cold_turn_ms"] for r in rows], "-o", label="cold turns.begin")
    turn_m.plot(m, [r["warm_turn_ms"] for r in rows], "-s", label="warm turns.begin")
    turn_m.set(xlabel="servers (one conversation)", ylabel="ms", title="turn start vs servers")
    turn_m.set_yscale("log")
    turn_m.legend(fontsize=8)

    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main()
