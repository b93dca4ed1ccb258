"""meworkctl speaks to a person in its own words; ``--json`` keeps the wire's (issue 25.7).

The daemon's messages serve every frontend: they may name a request parameter (``onConflict``),
a JSON type (``expected float, got str``) or carry a kind for programs (``invalid_params``,
``unset_variable``). What meworkctl prints for a person says its own option, plain words and no
kinds; ``--json`` prints what the daemon said. Against a real daemon.
"""

from __future__ import annotations

import json
import re

from mework_client import RpcError
from mework_client.ctl import describe_rpc_error
from mework_client.ctl.servers_probe import format_test
from mework_client.ctl.turn import format_turn
from mework_client.ctl.words import in_own_words

from tests.test_ctl import (
    Daemon,
    daemon_fixture,  # noqa: F401  (the daemon fixture: one daemon for this module)
    ok,
    run_ctl,
)

# What only the wire says: error and failure kinds, request parameters, JSON Schema's types.
WIRE = re.compile(
    r"\((invalid_params|turn_not_found|[a-z]+_[a-z_]+)(: [a-z_]+)?\)|\[[a-z]+_[a-z_]+\]"
    r"|onConflict|expected (float|int|str|bool|array|object)\b"
)


def test_an_error_is_said_without_its_kind_and_json_keeps_it(daemon: Daemon) -> None:
    done = run_ctl(daemon, "turn", "end", "no-such-turn")
    assert done.returncode == 1
    assert done.stderr == "meworkctl: no active turn 'no-such-turn' (it ended or never began)\n"
    done = run_ctl(daemon, "--json", "turn", "end", "no-such-turn")
    assert done.stderr.rstrip().endswith("(turn_not_found)")


def test_an_import_conflict_names_meworkctls_option(daemon: Daemon) -> None:
    ok(daemon, "servers", "add", "dup", "--", "sh")
    document = json.dumps({"mcpServers": {"dup": {"command": "sh"}}})
    done = run_ctl(daemon, "servers", "import", "-", input=document)
    assert done.returncode == 1
    assert "import again with --on-conflict replace or --on-conflict skip" in done.stdout
    assert not WIRE.search(done.stdout + done.stderr), done.stdout + done.stderr
    done = run_ctl(daemon, "--json", "servers", "import", "-", input=document)
    assert 'onConflict \\"replace\\"' in done.stdout


def test_a_wrongly_typed_option_in_the_file_is_said_in_plain_words(daemon: Daemon) -> None:
    good = daemon.settings.read_text()
    document = json.loads(good)
    document["mcp"] = {**document.get("mcp", {}), "session_idle_minutes": "thirty"}
    daemon.settings.write_text(json.dumps(document))
    try:
        run_ctl(daemon, "settings", "reload")
        status = ok(daemon, "status")
        listed = ok(daemon, "servers", "list")
        wire = run_ctl(daemon, "--json", "status").stdout
    finally:
        daemon.settings.write_text(good)
        run_ctl(daemon, "settings", "reload")
    said = "settings error: mcp.session_idle_minutes: expected a number, got a string"
    assert said in status.splitlines()
    assert said in listed.splitlines()
    assert not WIRE.search(status + listed)
    assert "expected float, got str" in wire


def test_a_servers_failure_is_said_without_its_kind() -> None:
    failure = {
        "server": "docs",
        "kind": "unset_variable",
        "error": "docs.url: environment variable ${HOST} is not set in meworkd's environment",
    }
    tested = format_test({"ok": False, **failure})
    begun = format_turn({"turnId": "t-1", "tools": [], "bindings": {}, "failures": [failure]})
    for text in (tested, begun):
        assert "docs: docs.url: environment variable ${HOST} is not set" in text
        assert not WIRE.search(text), text


def test_a_tools_problem_is_said_without_its_code() -> None:
    problem = {"tool": "read", "problem": "name_shortened", "detail": "offered to the model as x"}
    tested = format_test({"ok": True, "serverInfo": {"name": "fs"}, "problems": [problem]})
    assert "read: offered to the model as x" in tested
    assert not WIRE.search(tested), tested


def test_describe_rpc_error_for_a_person_and_for_a_script() -> None:
    error = RpcError(
        -32602,
        'a server named \'x\' already exists (import again with onConflict "replace" or "skip")',
        {"kind": "conflict"},
    )
    assert describe_rpc_error(error) == (
        "a server named 'x' already exists "
        "(import again with --on-conflict replace or --on-conflict skip)"
    )
    assert describe_rpc_error(error, wire=True).endswith('"skip") (conflict)')


def test_in_own_words_types() -> None:
    assert in_own_words("t.timeoutSeconds: expected int > 0") == (
        "t.timeoutSeconds: expected a whole number > 0"
    )
    assert in_own_words("a: expected array, got object; b: expected bool, got null") == (
        "a: expected a list, got an object; b: expected true or false, got null"
    )
    assert in_own_words("an integer was expected, got nothing") == (
        "an integer was expected, got nothing"
    )
