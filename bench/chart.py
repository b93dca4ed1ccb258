"""Draw bench/results.png from bench/results.json (runs in bench/.venv-tools: matplotlib, Agg).

``python bench/chart.py bench/results.json bench/results.png``

Left: every verdict as a fraction of its target (value / target; for "at least" targets
target / value), so 1.0 is the line to stay under and all bars read the same way; a stretch
goal (issue 19: B1 1.1x) is a dotted mark on its bar, met when the bar ends left of it. Right: the
medians behind B1-B3, meworkd and mcp-use relative to the bare SDK (= 1), absolute ms on top.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def fmt_ms(ms: float) -> str:
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}" if ms >= 10 else f"{ms:.2f}"


def main() -> None:
    src, dst = Path(sys.argv[1]), Path(sys.argv[2])
    data = json.loads(src.read_text())
    rows = [r for r in data["rows"] if r["target"] is not None]
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(13, 5.2), gridspec_kw={"width_ratios": [1, 1.2]}
    )

    names, fracs, colours = [], [], []
    for r in rows:
        v, t = r["value"], r["target"]
        frac = v / t if r["op"] == "<=" else (t / v if v else float("inf"))
        names.append(f"{r['id']}  {v:.2f}{'x' if r['unit'] == 'x' else ' ' + r['unit']}")
        fracs.append(frac)
        colours.append("#2e7d32" if r["pass"] else "#c62828")
    y = range(len(rows))
    left.barh(list(y), fracs, color=colours)
    left.axvline(1.0, color="black", linestyle="--", linewidth=1)
    for i, r in enumerate(rows):
        stretch = r.get("stretch")
        if stretch:
            at = stretch / r["target"] if r["op"] == "<=" else r["target"] / stretch
            left.plot([at, at], [i - 0.42, i + 0.42], color="black", linestyle=":", linewidth=1.5)
            left.annotate(f"stretch {stretch:g}", (at, i - 0.42), fontsize=7, ha="right")
    left.set_yticks(list(y), names)
    left.invert_yaxis()
    left.set_xlabel("value / target  (at most 1.0 meets the target)")
    left.set_title("Verdicts (green: met, red: missed)")

    groups = []
    by_id = {r["id"]: r for r in data["rows"]}
    for bid, key_a, key_b, key_c in (
        ("B1", "meworkd_ms", "sdk_ms", "mcpuse_ms"),
        ("B2", "meworkd_ms", "sdk_ms", None),
    ):
        r = by_id.get(bid)
        if r is None:
            continue
        d = r["details"]
        c = d.get(key_c, {}).get("median") if key_c else None
        groups.append((bid, d[key_a]["median"], d[key_b]["median"], c))
    r3, p3 = by_id.get("B3"), by_id.get("P3")
    if r3 is not None:
        med = sorted(r3["details"]["meworkd_ms"])[len(r3["details"]["meworkd_ms"]) // 2]
        sdk = sorted(r3["details"]["sdk_ms"])[len(r3["details"]["sdk_ms"]) // 2]
        use = None
        if p3 is not None:
            u = sorted(p3["details"]["mcpuse_ms"])
            use = u[len(u) // 2]
        groups.append(("B3", med, sdk, use))
    width = 0.36
    for i, (_bid, a, b, c) in enumerate(groups):
        bars = [(a / b, a, "#1565c0", "meworkd")]
        if c is not None:
            bars.append((c / b, c, "#ef6c00", "mcp-use"))
        for j, (rel, ms, colour, label) in enumerate(bars):
            x = i + (j - (len(bars) - 1) / 2) * width
            right.bar(x, rel, width, color=colour, label=label if i == 0 else None)
            right.annotate(
                f"{fmt_ms(ms)} ms",
                (x, rel),
                ha="center",
                va="bottom",
                fontsize=8,
                xytext=(0, 2),
                textcoords="offset points",
            )
    right.axhline(1.0, color="#555555", linestyle="--", linewidth=1, label="bare mcp SDK = 1")
    right.set_xticks(range(len(groups)), [f"{g[0]}\n(bare SDK {fmt_ms(g[2])} ms)" for g in groups])
    right.set_ylabel("median time relative to the bare SDK")
    right.set_title("B1 call, B2 warm and B3 cold turn start (medians)")
    right.legend(loc="upper right")
    m = data["machine"]
    fig.suptitle(
        f"meworkd benchmarks - {data['generated']} - {m['cpus']} CPUs, load "
        f"{m['loadavg_start'][0]:.1f}->{m['loadavg_end'][0]:.1f}"
        + (" - QUICK RUN" if data.get("quick") else "")
    )
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
    print(f"wrote {dst}")


if __name__ == "__main__":
    main()
