"""The suite's figures: fixed case counts (constants, checked against docs/reliability.md) and
measured values (recorded by the tests, written to ``.last-run.json`` at the end of the session).

Deterministic figures are what the suite is configured to try: hypothesis ``max_examples`` per
strategy, the fixed hostile inputs, the length of the seeded settings-race schedule, the fault
scenarios. ``test_figures.py`` renders them and fails when docs/reliability.md says otherwise.
Measured figures (latencies, RSS, durations) move from run to run; they are written to
``.last-run.json`` and copied into the doc only when ``MEWORKD_WRITE_RELIABILITY=1``.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from pathlib import Path
from typing import Any

__all__ = [
    "CONNECTION_CHURN",
    "DAEMON_FAULTS",
    "DOC",
    "FIXED_HOSTILE_INPUTS",
    "FUZZ_EXAMPLES",
    "FUZZ_GROUPS",
    "FUZZ_SOCKET_EXAMPLES",
    "LAST_RUN",
    "LOAD",
    "RACE",
    "SECURITY_CHECKS",
    "SERVER_FAULTS",
    "SOAK",
    "bump",
    "flush",
    "fuzz_examples",
    "load_seconds",
    "record",
    "render_deterministic",
]

SOAK = os.environ.get("MEWORKD_SOAK") == "1"
HERE = Path(__file__).resolve().parent
DOC = HERE.parents[1] / "docs" / "reliability.md"
LAST_RUN = HERE / ".last-run.json"

# --- 1. server faults (one parametrized case each) ---------------------------------------------
SERVER_FAULTS: dict[str, str] = {
    "exit_at_start": "stdio server exits with code 3 at start-up",
    "crash_mid_call": "stdio server exits (os._exit) in the middle of a tool call",
    "hang_call": "stdio server never answers a tool call (slow 3600 s)",
    "silent_call": "hand-written server silently ignores tools/call",
    "hang_initialize": "stdio server never answers initialize (and ignores stdin EOF)",
    "flood_stderr": "stdio server writes 100 MB to stderr during a call",
    "big_reply": "stdio server answers with a 10 MB text",
    "invalid_json": "server answers tools/call with lines that are not JSON",
    "stdout_junk": "server writes a non-JSON line on stdout at start-up",
    "wrong_id": "server answers tools/call with a response of another id",
    "endless_line": "server writes 48 MiB on stdout without a newline",
    "grandchild": "server ignores SIGTERM and forks SIGTERM-ignoring grandchildren",
    "http_500": "HTTP server answers every request with 500",
    "http_drop": "HTTP server drops the connection in the middle of the SSE reply",
    "http_hang": "HTTP server accepts connections and never answers",
}
FLOOD_BYTES = 100 * 1024 * 1024
BIG_REPLY_BYTES = 10 * 1024 * 1024

# --- 2. daemon faults ----------------------------------------------------------------------------
DAEMON_FAULTS: dict[str, str] = {
    "sigkill_with_live_sessions": "SIGKILL of the daemon with 3 live stdio sessions "
    "(SIGTERM-ignoring servers and a grandchild), then a restart on the same dirs",
    "crash_before_rename": "a settings writer dies (os._exit) between the temp-file write "
    "and the rename",
    "sigkill_during_writes": "a settings writer is SIGKILLed at random points of a write loop",
}
CRASH_BEFORE_RENAME_TRIALS = 5
SIGKILL_WRITE_TRIALS = 20

# --- 3. hostile control input -------------------------------------------------------------------
# Half of what they were before the suite took on issues 26-30's tests: generating a case costs
# about 20 ms of CPU, and the default suite must stay within three minutes on two cores; a soak
# run (MEWORKD_SOAK=1) tries five times as many.
FUZZ_EXAMPLES: dict[str, int] = {
    "random_bytes": 300,
    "invalid_utf8": 150,
    "json_values": 300,
    "request_shapes": 400,
    "batches": 150,
    "half_lines_then_eof": 200,
}
# Of each strategy's cases, these go through the real socket of a meworkd subprocess; the rest
# go to the same daemon code's dispatcher in the test process (much cheaper per case).
FUZZ_SOCKET_EXAMPLES: dict[str, int] = {
    "random_bytes": 50,
    "invalid_utf8": 50,
    "json_values": 50,
    "request_shapes": 50,
    "batches": 50,
    "half_lines_then_eof": 150,
}
# The strategies split into groups, one test file each (test_fuzz_socket_<group>.py), of about
# equal time (seconds measured alone on a busy 2-core machine: random_bytes 8, json_values 24,
# batches 23; request_shapes 43, half_lines_then_eof 14, invalid_utf8 5), so that the suite's
# two pytest-xdist workers (a file each) share the fuzz.
FUZZ_GROUPS: dict[str, tuple[str, ...]] = {
    "values": ("random_bytes", "json_values", "batches"),
    "requests": ("request_shapes", "half_lines_then_eof", "invalid_utf8"),
}
FIXED_HOSTILE_INPUTS: dict[str, str] = {
    "deep_array_100k": "[[[[...]]]] 100 000 deep",
    "deep_object_100k": '{"a":{"a":...}} 100 000 deep',
    "deep_params_900": "a valid servers.add whose entry holds a 900-deep array",
    "huge_float": "1e400 as an id and as a param",
    "huge_int": "10**5000 as text, as an id and as a param",
    "huge_line_9mib": "one 9 MiB line (over the 8 MiB limit), then a request",
    "huge_line_9mib_no_newline": "9 MiB without a newline, then EOF",
    "batch_256_junk": "a batch of 256 junk members",
    "batch_257": "a batch of 257 members (over the limit)",
    "nul_and_controls": "NUL bytes and control characters inside strings and outside",
}
FUZZ_SOAK_FACTOR = 5  # MEWORKD_SOAK=1: five times the examples, random instead of derandomized
CONNECTION_CHURN = 500  # connections opened and dropped (mid-line, unread, subscribed, reset)


def fuzz_examples(strategy: str, path: str | None = None) -> int:
    """The cases of ``strategy``: all of them, or those sent on ``path`` ("socket" or
    "in_process")."""
    total = FUZZ_EXAMPLES[strategy]
    through_socket = FUZZ_SOCKET_EXAMPLES[strategy]
    count = {None: total, "socket": through_socket, "in_process": total - through_socket}[path]
    return count * (FUZZ_SOAK_FACTOR if SOAK else 1)


# --- 4. settings races ---------------------------------------------------------------------------
RACE: dict[str, int] = {"seed": 20261129, "steps": 500, "soak_steps": 3000}

# --- 5. security ---------------------------------------------------------------------------------
SECURITY_CHECKS: dict[str, str] = {
    "modes": "socket dir 0700, socket 0600, settings 0600 (also after an RPC write)",
    "other_uid": "a peer of uid nobody gets one permission_denied line and EOF",
    "secrets": "canary secrets in env/headers never in logs, events, replies",
    "child_env": "a stdio child gets the safe environment only",
    "crafted_names": "tool names that mimic other bindings, mcp__, regex metacharacters",
    "malformed_meta": "requiresUserInteraction of the wrong type asks at full_access",
    "hook_two_decisions": "a hook printing deny then allow does not allow",
}

# --- 6. load -------------------------------------------------------------------------------------
LOAD: dict[str, float] = {
    "conversations": 50,
    "seconds": 15,
    "soak_seconds": 60,
    "crash_every_seconds": 3,
    "rss_growth_bound_mib": 40,
}


def load_seconds() -> float:
    return LOAD["soak_seconds"] if SOAK else LOAD["seconds"]


_measured: dict[str, dict[str, Any]] = {}


def record(section: str, **values: Any) -> None:
    """Keep measured values of ``section`` for ``.last-run.json``."""
    _measured.setdefault(section, {}).update(values)


def measured() -> dict[str, dict[str, Any]]:
    return _measured


def render_deterministic() -> str:
    """The doc's fixed-figures block: what every normal run tries."""
    fuzz_total = sum(FUZZ_EXAMPLES.values())
    lines = [
        "| what | figure |",
        "|---|---|",
        f"| server fault scenarios (each: clear error, memory bounded, others unaffected, "
        f"no process left) | {len(SERVER_FAULTS)} |",
        f"| daemon fault scenarios | {len(DAEMON_FAULTS)} "
        f"({CRASH_BEFORE_RENAME_TRIALS} crashes before rename, "
        f"{SIGKILL_WRITE_TRIALS} SIGKILLs during writes) |",
        f"| hypothesis cases sent to the control API | {fuzz_total} "
        f"({', '.join(f'{k} {v}' for k, v in FUZZ_EXAMPLES.items())}; "
        f"x{FUZZ_SOAK_FACTOR} with MEWORKD_SOAK=1), of them "
        f"{sum(FUZZ_SOCKET_EXAMPLES.values())} through the real socket "
        f"({', '.join(f'{k} {v}' for k, v in FUZZ_SOCKET_EXAMPLES.items())}), "
        "the rest to the dispatcher in process |",
        f"| fixed hostile inputs | {len(FIXED_HOSTILE_INPUTS)} |",
        f"| connections opened and dropped | {CONNECTION_CHURN} |",
        f"| settings-race schedule (seed {RACE['seed']}) | {RACE['steps']} steps "
        f"({RACE['soak_steps']} with MEWORKD_SOAK=1) |",
        f"| security checks | {len(SECURITY_CHECKS)} |",
        f"| load: concurrent conversations | {int(LOAD['conversations'])} for "
        f"{int(LOAD['seconds'])} s ({int(LOAD['soak_seconds'])} s with MEWORKD_SOAK=1), one "
        f"server crashed every {int(LOAD['crash_every_seconds'])} s |",
        f"| load: RSS growth bound after warm-up | {int(LOAD['rss_growth_bound_mib'])} MiB |",
        "| leaks found (processes, fds, connections, lost or duplicated replies) | 0 |",
    ]
    return "\n".join(lines)


def bump(section: str, key: str) -> None:
    """Count one more of ``key`` in ``section`` (a scenario that passed, say)."""
    values = _measured.setdefault(section, {})
    values[key] = int(values.get(key, 0)) + 1


def render_measured(data: dict[str, Any]) -> str:
    """The doc's measured block: a headline table, then every recorded value."""
    if not data:
        return "_No run recorded yet: run the suite with `MEWORKD_WRITE_RELIABILITY=1`._"
    sf = data.get("server_faults", {})
    df = data.get("daemon_faults", {})
    hi = data.get("hostile_input", {})
    fuzz_runs = [
        data.get(f"fuzz_{group}_{path}", {}).get("cases_run")
        for group in FUZZ_GROUPS
        for path in ("socket", "in_process")
    ]
    fuzz_run = "?" if None in fuzz_runs else sum(fuzz_runs)
    sr = data.get("settings_races", {})
    ld = data.get("load", {})
    sec = data.get("security", {})
    leaks = sum(
        [
            int(sf.get("daemon_fds_end", 0) > sf.get("daemon_fds_start", 0)),
            int(hi.get("churn_fds_after", 0) > hi.get("churn_fds_before", 0)),
            int(sr.get("rpc_writes_lost", 0)),
        ]
    )
    answer_times = [v for k, v in sf.items() if k.endswith("_seconds") and "close" not in k]
    rows = [
        (
            "cases tried",
            f"{fuzz_run} hypothesis cases, "
            f"{len(FIXED_HOSTILE_INPUTS)} fixed hostile inputs, "
            f"{hi.get('churn_connections', '?')} dropped connections, "
            f"{sr.get('steps', '?')} settings-race steps, "
            f"{ld.get('calls', '?')} tool calls under load",
        ),
        (
            "faults survived",
            f"server faults {sf.get('scenarios_survived', '?')}/"
            f"{len(SERVER_FAULTS)}, daemon faults {df.get('scenarios_survived', '?')}/"
            f"{len(DAEMON_FAULTS)} ({df.get('sigkill_leftovers_reaped', '?')} leftover processes "
            f"reaped after SIGKILL)",
        ),
        (
            "leaks found",
            f"{leaks} (daemon fds {sf.get('daemon_fds_start', '?')} -> "
            f"{sf.get('daemon_fds_end', '?')} over the fault module, "
            f"{hi.get('churn_fds_before', '?')} -> {hi.get('churn_fds_after', '?')} "
            "over the churn; "
            f"acknowledged RPC writes lost {sr.get('rpc_writes_lost', '?')}; replies missing or "
            f"duplicated 0 of {ld.get('calls', '?')})",
        ),
        (
            "load latency",
            f"p50 {ld.get('p50_ms', '?')} ms, p99 {ld.get('p99_ms', '?')} ms, "
            f"max {ld.get('max_ms', '?')} ms ({ld.get('calls_per_second', '?')} calls/s, "
            f"{ld.get('conversations', '?')} conversations, "
            f"{ld.get('crashes_caused', '?')} crashes)",
        ),
        (
            "daemon RSS under load",
            f"{ld.get('rss_after_warmup_mib', '?')} MiB after warm-up, "
            f"{ld.get('rss_end_mib', '?')} MiB at the end "
            f"(+{ld.get('rss_growth_after_warmup_mib', '?')} MiB)",
        ),
        (
            "daemon RSS over the fault module",
            f"{sf.get('daemon_rss_start_mib', '?')} -> {sf.get('daemon_rss_end_mib', '?')} MiB",
        ),
        (
            "slowest fault answer",
            f"{max(answer_times, default='?')} s (timeoutSeconds 2; "
            f"hang_initialize {sf.get('hang_initialize_seconds', '?')} s)",
        ),
        (
            "100 MB stderr flood",
            f"{sf.get('flood_lines_through_ring', '?')} lines through the "
            f"ring, call {sf.get('flood_outcome', '?')} at {sf.get('flood_stderr_seconds', '?')} s",
        ),
        (
            "hand edits lost",
            f"{sr.get('hand_edits_lost', '?')} "
            f"of {sr.get('hand_edits', '?')} ({sr.get('rpc_writes_acknowledged', '?')} RPC writes "
            f"in flight alongside)",
        ),
        (
            "approvals asked (none bypassed)",
            f"{sec.get('crafted_names_asked', '?')} crafted names, "
            f"{sec.get('malformed_meta_asked', '?')} malformed flags, "
            f"{sec.get('hook_variants_asked', '?')} two-decision hooks",
        ),
    ]
    lines = ["| figure | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in rows]
    run = data.get("_run", {})
    lines += [
        "",
        f"Recorded {run.get('when', '?')} on {run.get('host', '?')}"
        f"{' (soak)' if run.get('soak') else ''}.",
        "",
        "<details><summary>Every recorded value</summary>",
        "",
        "| section | figure | value |",
        "|---|---|---|",
    ]
    for section in sorted(k for k in data if not k.startswith("_")):
        for key, value in sorted(data[section].items()):
            lines.append(f"| {section} | {key} | {value} |")
    lines += ["", "</details>"]
    return "\n".join(lines)


BLOCK = re.compile(r"(<!-- figures:(\w+):begin -->\n)(.*?)(\n<!-- figures:\2:end -->)", re.S)


def replace_block(text: str, name: str, body: str) -> str:
    def sub(m: re.Match[str]) -> str:
        return m.group(1) + body + m.group(4) if m.group(2) == name else m.group(0)

    return BLOCK.sub(sub, text)


def read_block(text: str, name: str) -> str | None:
    for m in BLOCK.finditer(text):
        if m.group(2) == name:
            return m.group(3)
    return None


def flush(*, write_doc: bool) -> None:
    """Merge this session's measurements into ``.last-run.json``; maybe regenerate the doc.

    Under pytest-xdist every worker flushes its own share: the merge (and the doc written from
    it) holds a lock on the file, so no worker's figures are lost and the last doc has them all.
    """
    import datetime
    import platform

    with LAST_RUN.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _measured:
            data = _read_last_run()
            data.update(_measured)
            data["_run"] = {
                "when": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "host": f"{os.cpu_count()} CPUs, {platform.python_implementation()} "
                f"{platform.python_version()}",
                "soak": SOAK,
            }
            LAST_RUN.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        if write_doc:
            text = DOC.read_text()
            text = replace_block(text, "fixed", render_deterministic())
            text = replace_block(text, "measured", render_measured(_read_last_run()))
            DOC.write_text(text)


def _read_last_run() -> dict[str, Any]:
    try:
        data = json.loads(LAST_RUN.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
