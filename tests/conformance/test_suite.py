"""Every client scenario of the official MCP conformance suite, with meworkd as the client.

Each scenario is its own run of ``conformance client --scenario NAME`` with
:mod:`tests.conformance.adapter` as the client command: the suite starts its servers (and
authorization servers), runs the adapter, and judges what it saw on the wire. A scenario passes
when the suite says so. ``known-failures.txt`` lists the few that cannot pass, each with the
upstream reason; a listed scenario that passes fails here too, so the list cannot go stale.

The suite and Node 22 are installed by ``scripts/conformance`` into ``.peers/conformance``
(ignored, like the other test peers). Run alone: ``scripts/conformance`` (pytest arguments
follow, e.g. ``-k auth/``).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / ".peers" / "conformance" / "node_modules" / ".bin"
SUITE = PEERS / "conformance"
ADAPTER = Path(__file__).resolve().parent / "adapter.py"
KNOWN_FAILURES = Path(__file__).resolve().parent / "known-failures.txt"
# The suite's own limit for one client run is 30 s; one scenario here takes 2-5 s.
SCENARIO_TIMEOUT_MS = 60_000


def _environ() -> dict[str, str]:
    """This environment with the suite's Node first on PATH (it may be newer than the machine's)."""
    return {**os.environ, "PATH": f"{PEERS}{os.pathsep}{os.environ.get('PATH', '')}"}


def client_scenarios() -> list[str]:
    """The client scenarios the installed suite lists; none when it is not installed (the test
    below then fails and says how to install it)."""
    if not SUITE.exists():
        return []
    listing = subprocess.run(
        [str(SUITE), "list", "--client"],
        env=_environ(),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    names = []
    for line in listing.splitlines():
        line = line.strip()
        if line.startswith("- "):
            names.append(line[2:].split()[0])
    return names


def known_failures() -> dict[str, str]:
    """``scenario  # why`` lines: the scenarios expected to fail, with the reason."""
    found: dict[str, str] = {}
    for line in KNOWN_FAILURES.read_text().splitlines():
        name, _, why = line.partition("#")
        if name.strip():
            found[name.strip()] = why.strip()
    return found


SCENARIOS = client_scenarios()


def test_the_suite_is_installed() -> None:
    assert SUITE.exists(), "the conformance suite is not installed: run scripts/conformance"
    assert len(SCENARIOS) >= 48, f"the suite lists {len(SCENARIOS)} client scenarios"


def test_every_known_failure_names_a_scenario_and_a_reason() -> None:
    for name, why in known_failures().items():
        assert name in SCENARIOS, f"known-failures.txt names {name}, which the suite lacks"
        assert why, f"known-failures.txt gives no reason for {name}"


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario(scenario: str, tmp_path: Path) -> None:
    command = f"{sys.executable} {ADAPTER}"
    run = subprocess.run(
        [
            str(SUITE),
            "client",
            "--command",
            command,
            "--scenario",
            scenario,
            "--timeout",
            str(SCENARIO_TIMEOUT_MS),
            "-o",
            str(tmp_path),
        ],
        env=_environ(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=SCENARIO_TIMEOUT_MS / 1000 + 60,
    )
    expected = known_failures().get(scenario)
    if expected is not None:
        assert run.returncode != 0, f"{scenario} passes now: remove it from known-failures.txt"
        return
    assert run.returncode == 0, _report(scenario, tmp_path, run.stdout)


def _report(scenario: str, results: Path, output: str) -> str:
    """The failed checks and the adapter's own lines: enough to see what went wrong."""
    lines = [f"{scenario} failed"]
    for checks in results.rglob("checks.json"):
        for check in json.loads(checks.read_text()):
            if check.get("status") in ("FAILURE", "WARNING"):
                lines.append(f"  {check['status']} {check['id']}: {check.get('description')}")
                if check.get("details"):
                    lines.append(f"      {json.dumps(check['details'])[:400]}")
        stderr = checks.parent / "stderr.txt"
        if stderr.exists():
            lines += [
                f"  | {line}"
                for line in stderr.read_text().splitlines()
                if line.startswith("[adapter]")
            ][:20]
    if len(lines) == 1:
        lines.append(output[-3000:])
    return "\n".join(lines)
