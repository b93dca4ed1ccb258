"""servers.import: the documents of other MCP clients, transports and aliases, the fields that
are read, duplicates inside the document, conflicts with existing names, and invalid JSON.

The rules run in-process on the core (``core.servers.import_``, tests/core_parts.py); the last
test sends servers.import over the real socket: its params, a dry run, a refusal's wire shape.
"""

import json
from pathlib import Path
from typing import Any

import pytest
from mework_client import RpcError

from meworkd.base.errors import InvalidParams, MeworkError
from meworkd.settings.dialects import parse_import
from meworkd.settings.edits import OnConflict
from tests.core_parts import Core, core
from tests.daemon_fixture import DaemonEnv, daemon_and_client, make_env, read_doc

__all__ = ["core"]  # the fixture, used by name

CLAUDE_DESKTOP = {
    "mcpServers": {
        "filesystem": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me"],
            "env": {"LOG_LEVEL": "info"},
        },
        "remote": {"url": "https://mcp.example.com/mcp"},
    }
}
VSCODE = {
    "inputs": [{"type": "promptString", "id": "token", "password": True}],
    "servers": {
        "github": {
            "type": "http",
            "url": "https://api.githubcopilot.com/mcp/",
            "headers": {"Authorization": "Bearer ${input:token}"},
        },
        "local": {
            "type": "stdio",
            "command": "uvx",
            "args": ["mcp-server-time"],
            "envFile": ".env",
        },
    },
}
CLAUDE_CODE = {
    "mcpServers": {
        "sentry": {"type": "http", "url": "https://mcp.sentry.dev/mcp"},
        "db": {
            "type": "stdio",
            "command": "npx",
            "args": ["-y", "@bytebase/dbhub"],
            "env": {"DSN": "${DB_DSN:-postgres://localhost}"},
        },
    }
}
BARE_MAP = {
    "time": {"command": "uvx", "args": ["mcp-server-time"]},
    "docs": {"type": "streamable-http", "url": "http://127.0.0.1:3000/mcp"},
}


INITIAL = {
    "other": "kept",
    "assets": {
        "mcpServers": {
            "existing": {"command": "old", "x-mine": 1},
            "tail": {"command": "t"},
        }
    },
}


async def do_import(core: Core, text: str, on_conflict: OnConflict = "error") -> Any:
    """What servers.import calls (the last test here covers its params on the wire)."""
    return await core.servers.import_(text, None, on_conflict, dry_run=False)


def servers_on_disk(where: Core | DaemonEnv) -> dict[str, Any]:
    path = where.path if isinstance(where, Core) else where.settings
    return read_doc(path)["assets"]["mcpServers"]  # type: ignore[no-any-return]


@pytest.fixture(name="core")
async def core_with_two_servers(core: Core) -> Core:
    """The core (tests.core_parts) with INITIAL as its settings file."""
    await core.write(INITIAL)
    return core


@pytest.fixture
def env(short_tmp: Path) -> DaemonEnv:
    return make_env(short_tmp, INITIAL)


# --- formats -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_every_document_format(core: Core) -> None:
    reply = await do_import(core, json.dumps(CLAUDE_DESKTOP))
    assert reply["format"] == "mcpServers"
    assert reply["added"] == ["filesystem", "remote"]
    on_disk = servers_on_disk(core)  # written before the reply
    assert on_disk["filesystem"] == {
        "type": "stdio",
        **CLAUDE_DESKTOP["mcpServers"]["filesystem"],
    }
    assert on_disk["remote"] == {
        "type": "streamable_http",
        "url": "https://mcp.example.com/mcp",
    }

    reply = await do_import(core, json.dumps(VSCODE, indent=4))
    assert reply["format"] == "vscode"
    assert reply["added"] == ["local"]  # github waits for its ${input:token}
    assert reply["needsInputs"] == [
        {"id": "token", "description": "", "password": True, "servers": ["github"]}
    ]
    on_disk = servers_on_disk(core)
    assert "github" not in on_disk
    assert on_disk["local"] == {
        "type": "stdio",
        "command": "uvx",
        "args": ["mcp-server-time"],
        "envFile": ".env",
    }
    reply = await core.servers.import_(
        json.dumps(VSCODE), {"token": "${GH_TOKEN}"}, "skip", dry_run=False
    )
    assert reply["added"] == ["github"]
    assert reply["needsInputs"] == []
    on_disk = servers_on_disk(core)
    assert on_disk["github"]["type"] == "streamable_http"
    assert on_disk["github"]["headers"] == {"Authorization": "Bearer ${GH_TOKEN}"}

    reply = await do_import(core, json.dumps(CLAUDE_CODE))
    assert reply["format"] == "mcpServers"
    assert reply["added"] == ["sentry", "db"]
    on_disk = servers_on_disk(core)
    assert on_disk["sentry"] == {"type": "streamable_http", "url": "https://mcp.sentry.dev/mcp"}
    assert on_disk["db"]["env"] == {"DSN": "${DB_DSN:-postgres://localhost}"}  # not expanded

    reply = await do_import(core, json.dumps(BARE_MAP))
    assert reply["format"] == "map"
    assert reply["added"] == ["time", "docs"]
    assert servers_on_disk(core)["docs"]["type"] == "streamable_http"

    doc = read_doc(core.path)
    assert doc["other"] == "kept"
    assert list(doc["assets"]["mcpServers"]) == [
        "existing",
        "tail",
        "filesystem",
        "remote",
        "local",
        "github",
        "sentry",
        "db",
        "time",
        "docs",
    ]
    listed = {s["name"]: s for s in core.servers.listing()["servers"]}
    assert listed["time"]["type"] == "stdio"
    assert "error" not in listed["github"]


@pytest.mark.anyio
async def test_transports_aliases_and_fields_read(core: Core) -> None:
    document = {
        "mcpServers": {
            "a-http": {"type": "http", "url": "http://h/a"},
            "a-dash": {"type": "streamable-http", "url": "http://h/b"},
            "a-camel": {"type": "streamableHttp", "url": "http://h/c"},
            "a-canon": {"type": "streamable_http", "url": "http://h/d"},
            "a-url": {"url": "http://h/e"},
            "a-stdio": {"command": "x"},
            "a-sse": {"type": "sse", "url": "http://h/sse"},
            "a-nourl": {"type": "http"},
            "a-nocmd": {"args": ["x"]},
            "fields": {
                "command": "srv",
                "description": "What it does",
                "timeoutSeconds": 120,
                "longRunning": True,
                "disabledTools": ["rm"],
                "disabledAutoApproveTools": ["mv"],
                "autoApprove": ["ls"],
                "disabled": True,
            },
            "bad-timeout": {"command": "x", "timeoutSeconds": 0},
            "not-object": ["command", "x"],
            "": {"command": "x"},
        }
    }
    reply = await do_import(core, json.dumps(document))
    assert reply["added"] == [
        "a-http",
        "a-dash",
        "a-camel",
        "a-canon",
        "a-url",
        "a-stdio",
        "fields",
    ]
    rejected = {r["name"]: r["reason"] for r in reply["rejected"]}
    assert set(rejected) == {"a-sse", "a-nourl", "a-nocmd", "bad-timeout", "not-object", ""}
    assert "HTTP+SSE" in rejected["a-sse"]
    assert "streamable_http" in rejected["a-sse"]
    assert rejected["a-nourl"] == "a-nourl.url: required for a streamable_http server"
    assert rejected["a-nocmd"] == "a-nocmd.command: required for a stdio server"
    assert rejected["bad-timeout"] == "bad-timeout.timeoutSeconds: expected int > 0"
    assert rejected["not-object"] == "expected an object"
    assert "name" in rejected[""]
    assert reply["replaced"] == []
    assert reply["skipped"] == []
    assert reply["duplicates"] == []

    on_disk = servers_on_disk(core)
    for name in ("a-http", "a-dash", "a-camel", "a-canon", "a-url"):
        assert on_disk[name]["type"] == "streamable_http", name
    assert on_disk["a-stdio"]["type"] == "stdio"
    for name in rejected:
        assert name not in on_disk
    fields = core.servers.get("fields", reveal=False)
    assert fields["description"] == "What it does"
    assert fields["timeoutSeconds"] == 120
    assert fields["longRunning"] is True
    assert fields["disabledTools"] == ["rm"]
    assert fields["disabledAutoApproveTools"] == ["mv"]
    assert fields["enabled"] is False  # Cline's "disabled": true
    assert "autoApprove" not in on_disk["fields"]  # carried over, and said so
    assert on_disk["fields"]["alwaysAllowTools"] == ["ls"]
    assert [(w["name"], w["field"]) for w in reply["warnings"]] == [("fields", "autoApprove")]
    assert "imported as alwaysAllowTools: ls" in reply["warnings"][0]["message"]
    assert "disabled" not in on_disk["fields"]


# --- duplicates and conflicts --------------------------------------------------------------


@pytest.mark.anyio
async def test_duplicates_are_reported_and_conflicts_resolved_as_asked(core: Core) -> None:
    text = """{"mcpServers": {
        "dup": {"command": "first"},
        "ok": {"command": "ok"},
        "dup": {"command": "second"},
        "twice": {"url": "http://h/1"},
        "twice": {"url": "http://h/2"},
        "dup": {"command": "third"}
    }}"""
    reply = await do_import(core, text)
    assert reply["duplicates"] == ["dup", "twice"]
    assert reply["added"] == ["ok"]
    assert reply["rejected"] == [
        {"name": "dup", "reason": "the name appears more than once in the document"},
        {"name": "twice", "reason": "the name appears more than once in the document"},
    ]
    assert "dup" not in servers_on_disk(core)
    assert "twice" not in servers_on_disk(core)

    # Duplicates in a bare map and in VS Code's document are found the same way.
    reply = await do_import(core, '{"m": {"command": "a"}, "m": {"command": "b"}}')
    assert reply["duplicates"] == ["m"]
    assert reply["added"] == []
    reply = await do_import(core, '{"servers": {"v": {"command": "a"}, "v": {"url": "http://h"}}}')
    assert reply["duplicates"] == ["v"]
    # Two mcpServers blocks: the first would be lost silently, so nothing is imported.
    with pytest.raises(MeworkError) as caught:
        await do_import(
            core,
            '{"mcpServers": {"p": {"command": "p"}}, "mcpServers": {"q": {"command": "q"}}}',
        )
    assert caught.value.kind == "invalid_params"
    assert "more than once" in caught.value.message
    assert "p" not in servers_on_disk(core)

    incoming = json.dumps(
        {
            "mcpServers": {
                "existing": {"command": "new", "args": ["--flag"]},
                "fresh": {"command": "fresh"},
            }
        }
    )
    before = servers_on_disk(core)["existing"]
    reply = await do_import(core, incoming)  # onConflict defaults to "error"
    assert reply["added"] == ["fresh"]
    assert [r["name"] for r in reply["rejected"]] == ["existing"]
    assert "onConflict" in reply["rejected"][0]["reason"]
    assert servers_on_disk(core)["existing"] == before

    reply = await do_import(core, incoming, "skip")
    assert reply["skipped"] == [
        {"name": "existing", "reason": "a server with this name exists"},
        {"name": "fresh", "reason": "a server with this name exists"},
    ]
    assert reply["added"] == []
    assert servers_on_disk(core)["existing"] == before

    reply = await do_import(core, incoming, "replace")
    assert reply["replaced"] == ["existing", "fresh"]
    on_disk = servers_on_disk(core)
    assert on_disk["existing"] == {"type": "stdio", "command": "new", "args": ["--flag"]}
    assert list(on_disk)[:2] == ["existing", "tail"]  # replaced in place
    got = core.servers.get("existing", reveal=False)
    assert got["args"] == ["--flag"]


@pytest.mark.anyio
async def test_invalid_documents_write_nothing(core: Core) -> None:
    before = core.path.read_bytes()
    cases = [
        # (a trailing comma is JSONC now: an unterminated comment is what breaks here)
        ('{"mcpServers": {\n  "a": {"command": "x",/*}\n}}', "line 2, column 24", (2, 24)),
        ('{"mcpServers": ', "line 1, column 16", (1, 16)),
        ("", "line 1, column 1", (1, 1)),
    ]
    for text, where, (line, column) in cases:
        with pytest.raises(MeworkError) as caught:
            await do_import(core, text)
        assert caught.value.kind == "invalid_params"
        assert caught.value.code == -32602
        assert "not valid JSON" in caught.value.message
        assert where in caught.value.message
        assert caught.value.data["line"] == line
        assert caught.value.data["column"] == column
    for text, message in [
        ("[1, 2]", "expected a JSON object"),
        ('{"command": "npx", "args": []}', "single server definition"),
        ('{"name": "x"}', "found no servers"),
        ("{}", "found no servers"),
    ]:
        with pytest.raises(MeworkError) as caught:
            await do_import(core, text)
        assert caught.value.kind == "invalid_params"
        assert message in caught.value.message
    assert core.path.read_bytes() == before


# --- the parser on its own -----------------------------------------------------------------


def test_parse_import_keeps_entries_plain_and_reads_envfile() -> None:
    parsed = parse_import(json.dumps(VSCODE), {"token": "t0ken"})
    assert parsed.format == "vscode"
    assert type(parsed.entries["local"]) is dict
    assert parsed.entries["local"]["envFile"] == ".env"
    assert parsed.entries["github"]["headers"] == {"Authorization": "Bearer t0ken"}


def test_parse_import_reports_where_the_json_broke() -> None:
    with pytest.raises(InvalidParams) as caught:
        parse_import('{\n\n   "a": tru }')
    assert caught.value.data == {"line": 3, "column": 9}


def test_an_empty_server_map_imports_nothing() -> None:
    parsed = parse_import('{"mcpServers": {}}')
    assert parsed.entries == {}
    assert parsed.rejected == []


# --- dry runs, inputs and warnings over RPC ------------------------------------------------


@pytest.mark.anyio
async def test_dry_run_writes_nothing_and_names_the_inputs_needed(env: DaemonEnv) -> None:
    document = json.dumps(
        {
            "inputs": [{"type": "promptString", "id": "key", "description": "API key"}],
            "servers": {
                "keyed": {"command": "srv", "env": {"KEY": "${input:key}"}, "dev": {}},
                "existing": {"command": "other"},
                "sse": {"type": "sse", "url": "http://h/sse"},
            },
        }
    )
    async with daemon_and_client(env) as (_daemon, client):
        before = env.settings.read_bytes()
        preview = await client.call(
            "servers.import", {"text": document, "dryRun": True, "onConflict": "replace"}
        )
        assert preview["dryRun"] is True
        assert preview["added"] == []
        assert preview["replaced"] == ["existing"]
        assert [r["name"] for r in preview["rejected"]] == ["sse"]
        assert preview["needsInputs"] == [
            {"id": "key", "description": "API key", "password": False, "servers": ["keyed"]}
        ]
        # What keyed will lose is said before its input is asked for; sse's is moot.
        assert preview["warnings"] == [
            {"name": "keyed", "field": "dev", "message": "not used by meworkd; not imported"}
        ]
        assert env.settings.read_bytes() == before

        reply = await client.call(
            "servers.import", {"text": document, "inputs": {"key": "k-1"}, "onConflict": "skip"}
        )
        assert reply["dryRun"] is False
        assert reply["added"] == ["keyed"]
        assert reply["warnings"] == [
            {"name": "keyed", "field": "dev", "message": "not used by meworkd; not imported"}
        ]
        assert servers_on_disk(env)["keyed"] == {
            "type": "stdio",
            "command": "srv",
            "env": {"KEY": "k-1"},
        }
        with pytest.raises(RpcError) as caught:
            await client.call("servers.import", {"text": document, "inputs": {"key": 1}})
        assert caught.value.kind == "invalid_params"
        # Where the JSON broke reaches the client as data, beside the message.
        before = env.settings.read_bytes()
        with pytest.raises(RpcError) as caught:
            await client.call("servers.import", {"text": '{"mcpServers": '})
        assert (caught.value.kind, caught.value.code) == ("invalid_params", -32602)
        assert (caught.value.data["line"], caught.value.data["column"]) == (1, 16)
        assert env.settings.read_bytes() == before
