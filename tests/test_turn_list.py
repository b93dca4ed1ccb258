"""Lost turn ids found again: ``turns.list`` / ``meworkctl turn list``, and shell completion of
open turn ids and of a turn's bound tool names (issue 25.5). Against a real daemon and bash.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.test_ctl import (
    MEWORKCTL,
    RUN_TIMEOUT,
    Daemon,
    add_kitchen,
    daemon_fixture,  # noqa: F401  (the daemon fixture: one daemon for this module)
    ok,
    ok_json,
    run_ctl,
)
from tests.test_ctl_edit_and_output import bash_completion


def begin(daemon: Daemon, conversation: str) -> tuple[str, list[str]]:
    begun = ok_json(daemon, "turn", "begin", conversation)
    return begun["turnId"], sorted(begun["bindings"])


def test_turn_list_shows_the_open_turns_and_forgets_ended_ones(daemon: Daemon) -> None:
    add_kitchen(daemon, "tl-k")
    ok(daemon, "conv", "create", "--id", "tl-a", "--server", "tl-k")
    ok(daemon, "conv", "create", "--id", "tl-b", "--server", "tl-k")
    first, tools = begin(daemon, "tl-a")
    second, _ = begin(daemon, "tl-b")
    listed = ok_json(daemon, "turn", "list")["turns"]
    mine = [t for t in listed if t["conversationId"] in ("tl-a", "tl-b")]
    assert [t["turnId"] for t in mine] == [first, second]  # oldest first
    assert sorted(mine[0]["tools"]) == tools
    assert mine[0]["callsInFlight"] == 0
    assert mine[0]["parentTurnId"] is None
    assert mine[0]["began"].endswith("Z")
    assert [t["turnId"] for t in ok_json(daemon, "turn", "list", "tl-b")["turns"]] == [second]
    table = ok(daemon, "turn", "list", "tl-a").splitlines()
    assert table[0].split() == ["TURN", "CONV", "BEGAN", "TOOLS", "CALLS"]
    assert table[1].split()[:2] == [first, "tl-a"]
    assert table[1].split()[-2:] == [str(len(tools)), "0"]
    ok(daemon, "turn", "end", first)
    assert ok(daemon, "turn", "list", "tl-a") == "No open turns.\n"


def test_turn_list_of_an_unknown_conversation_is_an_error(daemon: Daemon) -> None:
    done = run_ctl(daemon, "turn", "list", "tl-nope")
    assert done.returncode == 1
    assert "tl-nope" in done.stderr


def test_completion_offers_open_turns_and_a_turns_tools(daemon: Daemon, tmp_path: Path) -> None:
    add_kitchen(daemon, "tc-k")
    ok(daemon, "conv", "create", "--id", "tc-a", "--server", "tc-k")
    turn, tools = begin(daemon, "tc-a")
    other, _ = begin(daemon, "tc-a")
    env = daemon.env() | {"PATH": f"{MEWORKCTL.parent}:{os.environ['PATH']}"}
    complete = bash_completion(daemon, tmp_path)

    def offered(*words: str) -> list[str]:
        return sorted(complete(*words))

    assert turn in offered("call", "")
    assert {turn, other} <= set(offered("turn", "end", ""))
    assert offered("turn", "cancel", turn[:6]) == [turn]
    assert offered("call", turn, "") == tools
    assert offered("call", turn, tools[0][:-3]) == [tools[0]]
    ok(daemon, "turn", "end", other)
    assert other not in offered("turn", "end", "")
    fish = shutil.which("fish")
    if fish is not None:
        script = tmp_path / "meworkctl.fish"
        script.write_text(ok(daemon, "completion", "fish"))
        done = subprocess.run(
            [fish, "-c", f"source {script}; complete -C'meworkctl call {turn} '"],
            capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT, check=True,
        )  # fmt: skip
        assert sorted(done.stdout.split()) == tools
