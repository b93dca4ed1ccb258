"""servers.import of Claude Code's permission rules (``permissions`` of .claude/settings.json).

The rules are Claude Code's documented examples (code.claude.com/docs/en/permissions, "MCP":
``mcp__puppeteer``, ``mcp__puppeteer__*``, ``mcp__puppeteer__puppeteer_navigate``; its settings
page's ``permissions`` example and ``mcp__github__get_*``). allow becomes alwaysAllowTools, deny
disabledTools, ask disabledAutoApproveTools; each carried over rule is in the reply's ``rules``
(the preview too), each other one a warning; the settings file keeps the user's comments.
"""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mework_client import RpcError
from mework_client.aio import connect

from meworkd.base.errors import InvalidParams
from meworkd.settings.dialects import parse_import, resolve_rules
from tests.daemon_helpers import start_daemon

pytestmark = pytest.mark.anyio

# Claude Code's settings page example, with the MCP rules of its permissions page.
CLAUDE_SETTINGS = {
    "permissions": {
        "allow": [
            "Bash(npm run lint)",
            "Bash(npm run test *)",
            "Read(~/.zshrc)",
            "mcp__puppeteer__puppeteer_navigate",
            "mcp__github__get_*",
        ],
        "deny": [
            "Bash(curl *)",
            "Read(./.env)",
            "Read(./.env.*)",
            "Read(./secrets/**)",
            "mcp__filesystem",
            "mcp__sentry__*",
        ],
        "ask": ["mcp__github__create_pull_request", "mcp__github__delete_*"],
    },
    "env": {"CLAUDE_CODE_ENABLE_TELEMETRY": "1"},
}


def rules_of(reply: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(r["server"], r["field"], r["pattern"]) for r in reply["rules"]]


def test_rules_are_read_by_list_and_held_against_the_server_names() -> None:
    doc = parse_import(json.dumps(CLAUDE_SETTINGS))
    assert doc.format == "claudeSettings"
    assert doc.entries == {}
    # Claude Code's own tools are named in one warning per list, never silently dropped.
    said = {w["field"]: w["message"] for w in doc.warnings}
    assert said["permissions.allow"].startswith("3 rule(s) for Claude Code's own tools (Bash(")
    assert said["permissions.deny"].startswith("4 rule(s)")
    assert said["permissions.deny"].endswith("…) are not about MCP servers; not imported")

    rules, warnings = resolve_rules(doc.permissions, ["puppeteer", "github", "filesystem"])
    assert [(r.server, r.field, r.pattern, r.list) for r in rules] == [
        ("puppeteer", "alwaysAllowTools", "puppeteer_navigate", "allow"),
        ("github", "alwaysAllowTools", "get_*", "allow"),
        ("filesystem", "disabledTools", "*", "deny"),  # mcp__server: every tool
        ("github", "disabledAutoApproveTools", "create_pull_request", "ask"),
    ]
    assert warnings == [
        {
            "name": "sentry",
            "field": "permissions.deny",
            "message": "mcp__sentry__*: no server named 'sentry' is registered or in this "
            "document; not imported",
        },
        {
            "name": "github",
            "field": "permissions.ask",
            "message": "mcp__github__delete_*: not imported: disabledAutoApproveTools takes "
            "tool names, not patterns; list the tools that must ask every time",
        },
    ]


def test_server_names_as_claude_code_spells_them() -> None:
    # Claude Code writes "my docs" as my_docs; a name holding "__" is matched whole.
    rules, warnings = resolve_rules(
        {"allow": ["mcp__my_docs__search", "mcp__a__b__c", "mcp__*__read", "mcp__"]},
        ["my docs", "a", "a__b"],
    )
    assert [(r.server, r.pattern) for r in rules] == [("my docs", "search"), ("a__b", "c")]
    assert [w["message"] for w in warnings] == [
        "mcp__*__read: a pattern in the server's name matches no server in Claude Code "
        "either; not imported",
        "mcp__: no server named '' is registered or in this document; not imported",
    ]


def test_bad_permissions_are_warnings_and_no_rules_is_an_error() -> None:
    doc = parse_import(
        json.dumps(
            {"permissions": {"allow": "mcp__x", "deny": ["mcp__x__[oops"]}, "mcpServers": {}}
        )
    )
    assert doc.warnings == [
        {"name": None, "field": "permissions.allow", "message": "not imported: expected a "
         "list of rules"},
    ]  # fmt: skip
    rules, warnings = resolve_rules(doc.permissions, ["x"])
    assert rules == []
    assert warnings[0]["message"] == (
        "mcp__x__[oops: not imported: '[' at position 1 is never closed by ']'"
    )
    with pytest.raises(InvalidParams, match="permissions with mcp__ rules"):
        parse_import(json.dumps({"permissions": {"allow": ["Bash(ls)"]}}))


SETTINGS_TEXT = """{
  // my servers
  "assets": {
    "mcpServers": {
      "puppeteer": {"command": "npx", "args": ["-y", "puppeteer-mcp"]}, // the browser
      "filesystem": {"command": "fs", "alwaysAllowTools": ["read_file"]}
    }
  }
}
"""


async def test_the_preview_shows_every_rule_and_the_import_writes_them(short_tmp: Path) -> None:
    async with start_daemon(short_tmp, {}) as running:
        settings = short_tmp / "settings.json"
        settings.write_text(SETTINGS_TEXT)
        async with connect(running.socket) as client:
            await client.call("settings.reload")
            document = {
                **CLAUDE_SETTINGS,
                # A document may bring servers too: its rules reach them.
                "mcpServers": {"github": {"type": "http", "url": "https://api.example.com/mcp"}},
            }
            params = {"text": json.dumps(document), "dryRun": True}
            preview = await client.call("servers.import", params)
            assert settings.read_text() == SETTINGS_TEXT  # a preview writes nothing
            expected = [
                ("puppeteer", "alwaysAllowTools", "puppeteer_navigate"),
                ("github", "alwaysAllowTools", "get_*"),
                ("filesystem", "disabledTools", "*"),
                ("github", "disabledAutoApproveTools", "create_pull_request"),
            ]
            assert preview["format"] == "mcpServers"
            assert preview["added"] == ["github"]
            assert rules_of(preview) == expected
            assert preview["rules"][0]["rule"] == "mcp__puppeteer__puppeteer_navigate"
            assert preview["rules"][0]["list"] == "allow"
            unregistered = [w for w in preview["warnings"] if w["name"] == "sentry"]
            assert "no server named 'sentry' is registered" in unregistered[0]["message"]

            done = await client.call("servers.import", {"text": json.dumps(document)})
            assert rules_of(done) == expected
            text = settings.read_text()
            assert "// my servers" in text  # a minimal edit: the comments stay
            assert "// the browser" in text
            servers = (await client.call("servers.list"))["servers"]
            by_name = {s["name"]: s for s in servers}
            assert by_name["puppeteer"]["alwaysAllowTools"] == ["puppeteer_navigate"]
            assert by_name["filesystem"]["disabledTools"] == ["*"]
            assert by_name["filesystem"]["alwaysAllowTools"] == ["read_file"]
            assert by_name["github"]["alwaysAllowTools"] == ["get_*"]
            assert by_name["github"]["disabledAutoApproveTools"] == ["create_pull_request"]

            # Imported again: nothing new to add, so no rule is listed as added.
            again = await client.call(
                "servers.import", {"text": json.dumps(CLAUDE_SETTINGS), "dryRun": True}
            )
            assert again["format"] == "claudeSettings"
            assert again["rules"] == []

            with pytest.raises(RpcError, match="found no servers"):
                await client.call("servers.import", {"text": '{"permissions": {"deny": []}}'})


async def test_meworkctl_previews_the_rules_in_words(short_tmp: Path) -> None:
    async with start_daemon(short_tmp, {"puppeteer": {"command": "npx"}}) as running:
        done = await anyio.run_process(
            [
                str(Path(sys.executable).parent / "meworkctl"),
                "--socket",
                str(running.socket),
                "servers",
                "import",
                "-",
                "--dry-run",
            ],
            input=json.dumps(CLAUDE_SETTINGS).encode(),
            check=False,
            stderr=subprocess.PIPE,
        )
        out = done.stdout.decode()
        assert done.returncode == 0, done.stderr
        assert "Nothing would be imported" not in out
        assert (
            "rule: puppeteer: 'puppeteer_navigate' runs without asking (puppeteer_navigate "
            "would join alwaysAllowTools; from permissions.allow "
            "mcp__puppeteer__puppeteer_navigate)" in out
        )
        assert (
            "warning: filesystem.permissions.deny: mcp__filesystem: no server named "
            "'filesystem' is registered or in this document; not imported" in out
        )
        assert "warning: permissions.allow: 3 rule(s) for Claude Code's own tools" in out
        assert out.rstrip().endswith(
            "dry run: 0 added, 0 replaced, 0 skipped, 0 rejected, 1 tool rule "
            "(format: claudeSettings)"
        )
