"""What each server costs a turn, where a person looks: servers.list's ``cost``, meworkctl
``servers list``/``show`` and ``turn begin`` (issue 26, point 3).

``cost`` is computed from the tools the server last reported (a turn's discovery or a Test
connection) exactly as turns.begin measures its ``costs``: the same tools, the same bytes. The
turns here stay under the default tool search threshold (40 tools), so every tool is offered.
"""

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mework_client.ctl.turn import format_costs

from tests.common import fake
from tests.turn_helpers import Harness, document, mw_fixture  # noqa: F401  (the mw fixture)

pytestmark = pytest.mark.anyio


async def listed_costs(mw: Harness) -> dict[str, Any]:
    return {s["name"]: s["cost"] for s in (await mw.call("servers.list"))["servers"]}


async def meworkctl(mw: Harness, *args: str) -> str:
    done = await anyio.run_process(
        [str(Path(sys.executable).parent / "meworkctl"), "--socket", str(mw.paths.socket), *args],
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.decode()


async def test_servers_list_says_what_a_turn_would_cost(mw: Harness) -> None:
    await mw.start(
        document(
            {
                "cs-a": fake(
                    "--tools", "5", disabledTools=["echo", "t1*"], disabledAutoApproveTools=["add"]
                ),
                "cs-b": fake(),
            }
        )
    )
    # Nothing reported yet: nothing known, and said so rather than a zero.
    assert await listed_costs(mw) == {"cs-a": None, "cs-b": None}
    before = await meworkctl(mw, "servers", "list")
    assert next(r.split() for r in before.splitlines() if r.startswith("cs-a "))[4:6] == ["-", "-"]

    conv = await mw.conversation(["cs-a", "cs-b"])
    turn = await mw.begin(conv)
    costs = await listed_costs(mw)
    for spent in turn["costs"]:
        cost = costs[spent["server"]]
        # The same tools and bytes the turn was sent (the mandatory prefix of "add" included).
        assert cost["tools"] == spent["tools"]
        assert cost["bytes"] == spent["bytes"]
        assert cost["tokensEstimate"] == spent["tokensEstimate"] == spent["bytes"] // 4
        assert cost["reported"]["source"] == "turn"
    assert costs["cs-a"]["disabled"] == 2  # echo, t1
    assert costs["cs-b"]["disabled"] == 0

    # Test connection's listing measures the same (it is the server's latest word).
    tested = await mw.call("servers.test", {"name": "cs-b"})
    assert tested["ok"] is True
    again = (await listed_costs(mw))["cs-b"]
    assert again["reported"]["source"] == "test"
    assert again["bytes"] == costs["cs-b"]["bytes"]

    listing = await meworkctl(mw, "servers", "list")
    row = next(line.split() for line in listing.splitlines() if line.startswith("cs-a "))
    assert row[4] == str(costs["cs-a"]["tools"])
    assert row[5:7] == f"{costs['cs-a']['bytes'] / 1024:.1f} KiB".split()
    assert "from the tools each last reported" in listing
    shown = await meworkctl(mw, "servers", "show", "cs-a")
    kib = f"{costs['cs-a']['bytes'] / 1024:.1f} KiB"
    tokens = f"~{costs['cs-a']['tokensEstimate']:,} tokens (estimate)"
    assert f"{costs['cs-a']['tools']} tools offered, {kib} of definitions, {tokens}" in shown
    assert "2 switched off" in shown


async def test_turn_begin_shows_each_servers_cost(mw: Harness) -> None:
    await mw.start(document({"tb-big": fake("--tools", "5"), "tb-small": fake()}))
    await mw.call("conversations.create", {"id": "tb-c", "mcpServers": ["tb-big", "tb-small"]})
    out = await meworkctl(mw, "turn", "begin", "tb-c")
    begun = json.loads(await meworkctl(mw, "turn", "begin", "tb-c", "--json"))
    lines = out.splitlines()
    at = lines.index("Cost per server (2):")
    assert lines[at + 1].split() == [
        "SERVER",
        "OFFERED",
        "DEFERRED",
        "DEFINITIONS",
        "EST.",
        "TOKENS",
    ]
    big = begun["costs"][0]  # the costliest first
    assert big["server"] == "tb-big"
    assert lines[at + 2].split() == [
        "tb-big",
        str(big["tools"]),
        "0",
        *f"{big['bytes'] / 1024:.1f} KiB".split(),
        f"~{big['tokensEstimate']:,}",
    ]
    assert lines[at + 4] == "(tokens: bytes / 4, an estimate; the model's tokenizer differs)"


def test_costs_read_offered_and_deferred_when_sent() -> None:
    # A daemon that defers tools says how many were offered and deferred; one that does not
    # may send neither: both read.
    searched = [
        {
            "server": "s",
            "tools": 50,
            "offered": 3,
            "deferred": 47,
            "bytes": 900,
            "tokensEstimate": 225,
        }
    ]
    assert format_costs(searched).splitlines()[2].split() == ["s", "3", "47", "900", "B", "~225"]
    plain = [{"server": "s", "tools": 2, "bytes": 2048, "tokensEstimate": 512}]
    lines = format_costs(plain).splitlines()
    assert lines[1].split() == ["SERVER", "OFFERED", "DEFINITIONS", "EST.", "TOKENS"]
    assert lines[2].split() == ["s", "2", "2.0", "KiB", "~512"]
