"""servers.import dialects: one snippet per MCP host as its documentation publishes it, read into
the right meworkd entry, with every field meworkd does not use listed back as a warning.

Each snippet cites where its shape comes from (placeholders kept or shortened).
"""

import json
import re
import subprocess
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mework_client.aio import connect
from mework_client.ctl.command import CtlError
from mework_client.ctl.servers_import import ask_input

from meworkd.base.errors import InvalidParams
from meworkd.settings.dialects import ImportDocument, parse_import
from tests.common import SERVERS
from tests.daemon_helpers import envdump, serving, start_daemon


def parsed(document: Any, inputs: dict[str, str] | None = None) -> ImportDocument:
    return parse_import(json.dumps(document), inputs)


def warned(doc: ImportDocument) -> list[tuple[str, str]]:
    return [(w["name"], w["field"]) for w in doc.warnings]


def test_every_field_of_meworkds_own_entries_is_kept_without_a_warning() -> None:
    # An export of meworkd's own settings imports back whole, the newest fields included.
    entry = {
        "type": "streamable_http",
        "url": "https://example.com/mcp",
        "oauth": {"clientId": "abc", "scopes": ["read"]},
        "sessionScope": "shared",
        "logLevel": "info",
        "description": "docs",
    }
    doc = parsed({"mcpServers": {"docs": entry}})
    assert doc.entries["docs"] == entry
    assert doc.warnings == []


def test_claude_desktop() -> None:
    # https://modelcontextprotocol.io/docs/develop/connect-local-servers
    # (claude_desktop_config.json)
    doc = parsed(
        {
            "mcpServers": {
                "filesystem": {
                    "command": "npx",
                    "args": [
                        "-y",
                        "@modelcontextprotocol/server-filesystem",
                        "/Users/username/Desktop",
                    ],
                }
            }
        }
    )
    assert doc.format == "mcpServers"
    assert doc.entries["filesystem"]["command"] == "npx"
    assert doc.warnings == []
    assert doc.rejected == []


def test_claude_code_mcp_json() -> None:
    # https://code.claude.com/docs/en/mcp (.mcp.json, "type": "http" / "sse", timeout in ms,
    # headersHelper) via thevibeworks/claude-code-docs@3f1ef7c content/en/docs/claude-code/mcp.md
    doc = parsed(
        {
            "mcpServers": {
                "api-server": {
                    "type": "http",
                    "url": "${API_BASE_URL:-https://api.example.com}/mcp",
                    "headers": {"Authorization": "Bearer ${API_KEY}"},
                    "timeout": 120000,
                },
                "asana": {"type": "sse", "url": "https://mcp.asana.com/sse"},
                "internal": {
                    "type": "http",
                    "url": "https://mcp.internal.example.com",
                    "headersHelper": "/opt/bin/get-mcp-auth-headers.sh",
                },
            }
        }
    )
    api = doc.entries["api-server"]
    assert api["type"] == "http"
    assert api["timeoutSeconds"] == 120
    assert "timeout" not in api
    # type "sse" is refused when stored (normalized); the parser passes it on unchanged
    assert doc.entries["asana"]["type"] == "sse"
    assert warned(doc) == [
        ("api-server", "timeout"),
        ("asana", "url"),
        ("internal", "headersHelper"),
    ]
    assert "milliseconds" in doc.warnings[0]["message"]
    assert "/sse" in doc.warnings[1]["message"]


def test_cursor() -> None:
    # https://cursor.com/docs/context/mcp (mcp.json: stdio with envFile-less env, remote url)
    doc = parsed(
        {
            "mcpServers": {
                "server-name": {
                    "command": "npx",
                    "args": ["-y", "mcp-server"],
                    "env": {"API_KEY": "value"},
                },
                "remote": {"url": "http://localhost:3000/mcp", "headers": {"API_KEY": "value"}},
            }
        }
    )
    assert set(doc.entries) == {"server-name", "remote"}
    assert doc.entries["remote"]["url"] == "http://localhost:3000/mcp"
    assert doc.warnings == []


def test_windsurf_server_url() -> None:
    # https://docs.windsurf.com/windsurf/cascade/mcp (mcp_config.json: serverUrl for remote)
    doc = parsed(
        {
            "mcpServers": {
                "figma": {
                    "serverUrl": "https://mcp.figma.com/mcp",
                    "headers": {"Authorization": "Bearer ${env:FIGMA_TOKEN}"},
                    "disabledTools": ["get_image"],
                }
            }
        }
    )
    assert doc.entries["figma"] == {
        "url": "https://mcp.figma.com/mcp",
        "headers": {"Authorization": "Bearer ${env:FIGMA_TOKEN}"},
        "disabledTools": ["get_image"],
    }


def test_vscode_inputs_and_envfile() -> None:
    # https://code.visualstudio.com/docs/copilot/reference/mcp-configuration (.vscode/mcp.json)
    document = {
        "inputs": [
            {
                "type": "promptString",
                "id": "perplexity-key",
                "description": "Perplexity API Key",
                "password": True,
            }
        ],
        "servers": {
            "perplexity": {
                "type": "stdio",
                "command": "npx",
                "args": ["-y", "server-perplexity-ask"],
                "env": {"PERPLEXITY_API_KEY": "${input:perplexity-key}"},
                "envFile": "${workspaceFolder}/.env",
            },
            "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"},
            "dev-server": {
                "type": "stdio",
                "command": "node",
                "args": ["build/index.js"],
                "dev": {"watch": "build/**/*.js", "debug": {"type": "node"}},
            },
        },
    }
    doc = parsed(document)
    assert doc.format == "vscode"
    assert set(doc.entries) == {"github", "dev-server"}  # perplexity waits for its key
    assert doc.needs_inputs == [
        {
            "id": "perplexity-key",
            "description": "Perplexity API Key",
            "password": True,
            "servers": ["perplexity"],
        }
    ]
    assert warned(doc) == [("perplexity", "envFile"), ("dev-server", "dev")]
    assert "workspaceFolder" in doc.warnings[0]["message"]

    doc = parsed(document, {"perplexity-key": "${PERPLEXITY_API_KEY}"})  # a reference, stored
    assert doc.needs_inputs == []
    assert doc.entries["perplexity"]["env"] == {"PERPLEXITY_API_KEY": "${PERPLEXITY_API_KEY}"}
    assert doc.entries["perplexity"]["envFile"] == "${workspaceFolder}/.env"

    # VS Code's user settings.json keeps the same under "mcp".
    nested = parsed({"mcp": document}, {"perplexity-key": "pplx-123"})
    assert nested.entries["perplexity"]["env"] == {"PERPLEXITY_API_KEY": "pplx-123"}


def test_gemini_cli_http_url_and_sse_url() -> None:
    # google-gemini/gemini-cli docs/tools/mcp-server.md (settings.json: httpUrl is Streamable
    # HTTP, url is SSE; timeout in ms; trust, includeTools, excludeTools)
    doc = parsed(
        {
            "mcpServers": {
                "pythonTools": {
                    "command": "python",
                    "args": ["-m", "my_mcp_server", "--port", "8080"],
                    "cwd": "./mcp-servers/python",
                    "env": {"DATABASE_URL": "$DB_CONNECTION_STRING"},
                    "timeout": 15000,
                    "trust": False,
                    "includeTools": ["safe_tool"],
                    "excludeTools": ["dangerous_tool"],
                },
                "httpServer": {"httpUrl": "http://localhost:3000/mcp", "timeout": 5000},
                "sseServer": {"url": "http://localhost:8080/sse", "timeout": 30000},
            }
        }
    )
    tools = doc.entries["pythonTools"]
    assert tools["timeoutSeconds"] == 15
    assert tools["disabledTools"] == ["dangerous_tool"]
    assert doc.entries["httpServer"] == {
        "url": "http://localhost:3000/mcp",
        "type": "streamable_http",
        "timeoutSeconds": 5,
    }
    assert doc.rejected == [{"name": "sseServer", "reason": doc.rejected[0]["reason"]}]
    assert "HTTP+SSE" in doc.rejected[0]["reason"]
    assert "httpUrl" in doc.rejected[0]["reason"]
    fields = warned(doc)
    assert ("pythonTools", "trust") in fields
    assert ("pythonTools", "includeTools") in fields


def test_zed_both_command_shapes() -> None:
    # https://zed.dev/docs/ai/mcp and zed_extension_api ContextServerSettings: "command" as
    # {path, args, env}; the flat shape from fancier21/mcp-local-server's README.
    doc = parsed(
        {
            "context_servers": {
                "nested": {
                    "command": {
                        "path": "some-command",
                        "args": ["arg-1", "arg-2"],
                        "env": {"KEY": "value"},
                    },
                    "settings": {},
                },
                "mcp-local-server": {
                    "enabled": True,
                    "source": "custom",
                    "command": "uv",
                    "args": ["run", "/home/f/Dev/MCPs/mcp-local-server/main.py"],
                    "env": {},
                },
                "remote": {"url": "https://example.com/mcp", "headers": {"X-Key": "k"}},
            }
        }
    )
    assert doc.format == "zed"
    assert doc.entries["nested"] == {
        "command": "some-command",
        "args": ["arg-1", "arg-2"],
        "env": {"KEY": "value"},
    }
    assert doc.entries["mcp-local-server"]["command"] == "uv"
    assert doc.entries["mcp-local-server"]["enabled"] is True
    assert warned(doc) == [("nested", "settings"), ("mcp-local-server", "source")]


def test_cline() -> None:
    # cline/cline docs/mcp/mcp-overview.mdx (cline_mcp_settings.json: timeout in seconds)
    doc = parsed(
        {
            "mcpServers": {
                "local-server": {
                    "command": "node",
                    "args": ["/path/to/server.js"],
                    "env": {"API_KEY": "your_api_key"},
                    "alwaysAllow": [],
                    "autoApprove": ["tool1", "tool2"],
                    "disabled": False,
                    "timeout": 60,
                }
            }
        }
    )
    entry = doc.entries["local-server"]
    assert entry["enabled"] is True
    assert entry["timeoutSeconds"] == 60
    # Cline's auto-approved tools run without asking here too, said in the preview; an
    # empty alwaysAllow allows nothing and needs no word.
    assert entry["alwaysAllowTools"] == ["tool1", "tool2"]
    assert warned(doc) == [("local-server", "autoApprove")]
    assert "imported as alwaysAllowTools: tool1, tool2" in doc.warnings[0]["message"]


def test_roo_code() -> None:
    # https://docs.roocode.com/features/mcp/using-mcp-in-roo (mcp_settings.json, .roo/mcp.json)
    doc = parsed(
        {
            "mcpServers": {
                "my-server": {
                    "command": "python",
                    "args": ["/path/to/server.py"],
                    "env": {"API_KEY": "your_api_key"},
                    "alwaysAllow": ["tool1", "tool2"],
                    "disabled": True,
                    "timeout": 3000,  # seconds here, although it is >= 1000
                    "watchPaths": ["/path/to/watch"],
                },
                "remote": {
                    "type": "streamable-http",
                    "url": "https://your-server-url.com/mcp",
                    "headers": {"Authorization": "Bearer your-token"},
                },
            }
        }
    )
    entry = doc.entries["my-server"]
    assert entry["enabled"] is False
    assert entry["timeoutSeconds"] == 3000
    assert warned(doc) == [("my-server", "alwaysAllow"), ("my-server", "watchPaths")]
    assert doc.entries["remote"]["type"] == "streamable-http"


def test_goose_extensions_as_json() -> None:
    # block/goose documentation/docs/guides/config-files.md (config.yaml "extensions:"), as JSON
    # (`yq -o json`): Goose's YAML carries the same facts, meworkd reads JSON.
    doc = parsed(
        {
            "extensions": {
                "github": {
                    "name": "GitHub",
                    "cmd": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-github"],
                    "enabled": True,
                    "envs": {"GITHUB_PERSONAL_ACCESS_TOKEN": "<TOKEN>"},
                    "env_keys": ["GITHUB_API_URL"],
                    "type": "stdio",
                    "timeout": 300,
                },
                "developer": {
                    "bundled": True,
                    "enabled": True,
                    "name": "developer",
                    "timeout": 300,
                    "type": "builtin",
                },
                "remote": {
                    "name": "Remote docs",  # not the key: reported
                    "type": "streamable_http",
                    "uri": "https://example.com/mcp",
                },
            }
        }
    )
    assert doc.format == "goose"
    assert doc.entries["github"] == {
        "command": "npx",
        "args": ["-y", "@modelcontextprotocol/server-github"],
        "enabled": True,
        "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "<TOKEN>"},
        "type": "stdio",
        "timeoutSeconds": 300,
    }
    assert doc.entries["remote"]["url"] == "https://example.com/mcp"
    assert [r["name"] for r in doc.rejected] == ["developer"]
    assert warned(doc) == [("github", "env_keys"), ("remote", "name")]


def test_continue_list_form() -> None:
    # https://docs.continue.dev/customize/deep-dives/mcp (config.yaml "mcpServers:" list), as JSON
    doc = parsed(
        {
            "name": "My Config",
            "version": "0.0.1",
            "schema": "v1",
            "mcpServers": [
                {
                    "name": "SQLite MCP",
                    "command": "npx",
                    "args": ["-y", "mcp-sqlite", "/path/to/your/database.db"],
                },
                {"name": "remote", "type": "streamable-http", "url": "https://x.example/mcp"},
                {"command": "nameless"},
                {"name": "remote", "command": "again"},
            ],
        }
    )
    assert doc.format == "continue"
    assert list(doc.entries) == ["SQLite MCP"]
    assert doc.duplicates == ["remote"]
    assert {r["name"] for r in doc.rejected} == {"#3", "remote"}


def test_timeouts_that_are_not_numbers_are_reported() -> None:
    doc = parsed({"mcpServers": {"a": {"command": "x", "timeout": "60"}}})
    assert "timeoutSeconds" not in doc.entries["a"]
    assert doc.warnings == [
        {"name": "a", "field": "timeout", "message": "not imported: expected a number > 0"}
    ]


def test_an_env_file_on_an_http_server_is_pointed_out() -> None:
    doc = parsed({"servers": {"h": {"type": "http", "url": "https://h/mcp", "envFile": ".env"}}})
    assert doc.entries["h"]["envFile"] == ".env"
    assert warned(doc) == [("h", "envFile")]
    assert "stdio servers only" in doc.warnings[0]["message"]


def test_pasted_yaml_is_explained() -> None:
    # Goose's config.yaml, pasted as it is.
    with pytest.raises(InvalidParams) as caught:
        parse_import("extensions:\n  github:\n    cmd: npx\n    type: stdio\n")
    assert "not valid JSON" in caught.value.message
    assert "yq -o json" in caught.value.message


def test_an_unknown_container_is_explained() -> None:
    with pytest.raises(InvalidParams) as caught:
        parsed({"servers": []})
    assert "context_servers" in caught.value.message


# --- what the imported fields do at connect time ----------------------------------------------


def legacy_sse_server() -> AbstractAsyncContextManager[str]:
    """Run ``tests/servers/legacy_sse.py``; its base address."""
    return serving(str(SERVERS / "legacy_sse.py"))


@pytest.mark.anyio
async def test_env_file_and_legacy_sse_at_connect_time(short_tmp: Path) -> None:
    env_file = short_tmp / "server.env"
    env_file.write_text(
        "# comment\nexport FROM_FILE='file value'\nBOTH=from-file\nPLAIN=x # trailing comment\n"
        'API_TOKEN="canary-envfile-0123456789"\n'
    )
    show = ("--stderr-env", "FROM_FILE", "--stderr-env", "BOTH", "--stderr-env", "PLAIN")
    show += ("--stderr-env", "API_TOKEN")
    async with legacy_sse_server() as base:
        servers = {
            "dotenv": envdump(*show, envFile=str(env_file), env={"BOTH": "from-env"}),
            "relative": envdump(*show, envFile="server.env", cwd=str(short_tmp)),
            "missing": envdump(envFile=str(short_tmp / "nope.env")),
            "sse-path": {"type": "streamable_http", "url": f"{base}/sse"},
            "sse-speaker": {
                "type": "streamable_http",
                "url": f"{base}/events",
                "timeoutSeconds": 5,
            },
        }
        async with start_daemon(short_tmp, servers) as (_d, sock), connect(sock) as c:
            tested = await c.call("servers.test", {"name": "dotenv"})
            assert tested["ok"] is True
            # The entry's env wins over the file's.
            for line in ("FROM_FILE=file value", "BOTH=from-env", "PLAIN=x"):
                assert f"envdump: {line}" in tested["stderrTail"]
            # The file's secrets are redacted like those under env.
            assert "envdump: API_TOKEN=[redacted]" in tested["stderrTail"]
            tested = await c.call("servers.test", {"name": "relative"})
            assert "envdump: BOTH=from-file" in tested["stderrTail"]

            tested = await c.call("servers.test", {"name": "missing"})
            assert tested["ok"] is False
            assert tested["reason"] == "env_file_unreadable"
            assert (
                tested["error"] == f"could not read envFile {short_tmp / 'nope.env'}: no such file"
            )

            for name in ("sse-path", "sse-speaker"):
                tested = await c.call("servers.test", {"name": name})
                assert tested["ok"] is False, name
                assert tested["reason"] == "legacy_sse", name
                assert "HTTP+SSE" in tested["error"], name
                assert "/mcp" in tested["error"], name
                # (the status line, not the random port: ":34055" once failed this)
                assert not re.search(r"(?<![\d:])405(?!\d)", tested["error"]), name


# --- meworkctl servers import: inputs asked or given -------------------------------------------

VSCODE_WITH_INPUT = json.dumps(
    {
        "inputs": [
            {"type": "promptString", "id": "api-key", "description": "API key", "password": True}
        ],
        "servers": {"keyed": {"command": "srv", "env": {"KEY": "${input:api-key}"}, "dev": {}}},
    }
)


async def meworkctl(sock: Path, *args: str, stdin: str) -> subprocess.CompletedProcess[bytes]:
    return await anyio.run_process(
        [str(Path(sys.executable).parent / "meworkctl"), "--socket", str(sock), *args],
        input=stdin.encode(),
        check=False,
    )


@pytest.mark.anyio
async def test_meworkctl_import_takes_inputs_or_says_which_are_missing(short_tmp: Path) -> None:
    async with start_daemon(short_tmp, {}) as (_d, sock):
        done = await meworkctl(sock, "servers", "import", "-", stdin=VSCODE_WITH_INPUT)
        assert done.returncode == 1
        err = done.stderr.decode()
        assert "api-key (API key; for keyed)" in err
        assert "--input ID=VALUE" in err
        assert "Traceback" not in err

        done = await meworkctl(
            sock,
            "servers",
            "import",
            "-",
            "--dry-run",
            "--input",
            "api-key=${KEY_VAR}",
            stdin=VSCODE_WITH_INPUT,
        )
        out = done.stdout.decode()
        assert done.returncode == 0
        assert "dry run: 1 added" in out
        assert "warning: keyed.dev: not used by meworkd; not imported" in out

        done = await meworkctl(
            sock, "servers", "import", "-", "--input", "api-key=${KEY_VAR}", stdin=VSCODE_WITH_INPUT
        )
        assert done.returncode == 0, done.stderr
        async with connect(sock) as c:
            shown = await c.call("servers.get", {"name": "keyed", "reveal": True})
        assert shown["server"]["env"] == {"KEY": "${KEY_VAR}"}


def test_asking_for_an_input_on_the_terminal() -> None:
    need = {"id": "api-key", "description": "API key", "password": True, "servers": ["keyed"]}
    notes: list[str] = []
    prompts: list[str] = []

    def answers(*replies: str | None) -> Callable[[str], str | None]:
        queue = list(replies)

        def ask(prompt: str) -> str | None:
            prompts.append(prompt)
            return queue.pop(0)

        return ask

    # A password is read hidden; a wrong choice and an empty value are asked again.
    value = ask_input(need, notes.append, answers("x", "v", "v"), answers("", "s3cret"))
    assert value == "s3cret"
    assert "  value (hidden): " in prompts
    assert notes[0] == "input api-key: API key (used by keyed)"
    assert "  answer v or r" in notes
    # A reference is stored as ${NAME}, whichever way it is typed.
    assert (
        ask_input(need, notes.append, answers("r", "not a name", "R", "${API_KEY}")) == "${API_KEY}"
    )
    assert ask_input(need, notes.append, answers("reference", "API_KEY")) == "${API_KEY}"
    with pytest.raises(CtlError, match="cancelled"):
        ask_input(need, notes.append, answers(None))
