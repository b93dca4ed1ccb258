"""Summarise a py-spy ``--format raw`` profile (collapsed stacks): inclusive and self shares.

``python bench/profsum.py bench/profiles/B1-daemon.txt [--top 30] [--grep meworkd/]``

Inclusive = share of samples with the function anywhere on the stack (counted once per sample);
self = share of samples where it is the innermost frame. Samples of the idle event loop
(``select``/``epoll`` waits) are counted separately and left out of the shares.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

IDLE = ("select (selectors.py", "_run_once (asyncio/base_events.py")

# --buckets: a sample belongs to the first of these owners found walking out from the innermost
# frame; samples with none of them on the stack are the event loop's own scheduling.
BUCKETS = (
    ("RPC layer (meworkd/rpc, jsonrpcserver)", ("meworkd/rpc/", "jsonrpcserver/", "oslash/")),
    (
        "turn logic (turns, approvals, state/SQLite, redaction)",
        ("meworkd/core/", "meworkd/base/log.py", "meworkd/mcp/pool.py"),
    ),
    (
        "MCP client (SDK ClientSession + meworkd transport)",
        ("mcp/", "mcp_types/", "meworkd/mcp/", "pydantic"),
    ),
    (
        "events, settings, logs",
        ("meworkd/base/events.py", "meworkd/settings/", "structlog/"),
    ),
)


def frame_name(frame: str) -> str:
    """``func (file.py:123)`` -> ``func (file.py)``: lines of one function are merged."""
    if " (" in frame and frame.endswith(")"):
        func, loc = frame[:-1].split(" (", 1)
        return f"{func} ({loc.rsplit(':', 1)[0]})"
    return frame


def _bucket(frames: list[str]) -> str:
    for frame in reversed(frames):
        for name, needles in BUCKETS:
            if any(needle in frame for needle in needles):
                return name
    return "event loop, anyio scheduling"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("profile", type=Path)
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--grep", default="", help="only functions whose location contains this")
    p.add_argument("--buckets", action="store_true", help="shares per owner (see BUCKETS)")
    args = p.parse_args()
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = idle = 0
    buckets: Counter[str] = Counter()
    for line in args.profile.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        frames = [frame_name(f) for f in stack.split(";")]
        if frames[-1].startswith(IDLE):
            idle += n
            continue
        total += n
        for f in set(frames):
            inclusive[f] += n
        own[frames[-1]] += n
        buckets[_bucket(frames)] += n
    print(f"{total} busy samples ({idle} idle samples left out)")
    if args.buckets:
        for name, n in buckets.most_common():
            print(f"{100 * n / max(1, total):6.1f}%  {name}")
        return
    for title, counter in (("inclusive", inclusive), ("self", own)):
        print(f"\n--- top {args.top} by {title} share of busy samples")
        shown = 0
        for f, n in counter.most_common():
            if args.grep and args.grep not in f:
                continue
            print(f"{100 * n / max(1, total):6.1f}%  {f}")
            shown += 1
            if shown >= args.top:
                break


if __name__ == "__main__":
    main()
