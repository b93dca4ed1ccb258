"""meworkd.settings: validation per server and field, type aliases, sse refusal, per-entry
fallback to the last good definition, diffing, ${VAR} expansion and masking of secrets."""

import pytest

from meworkd.base.errors import InvalidSettings
from meworkd.settings import (
    CONNECTION_FIELDS,
    ServerConfig,
    Settings,
    UnsetVariable,
    canonical_type,
    decode_document,
    diff_settings,
    duplicate_keys,
    expand,
    expand_server,
    masked_entry,
    parse_mcp_options,
    parse_server,
    parse_settings,
)

# --- transports ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spelling", ["http", "streamable-http", "streamableHttp", "streamable_http"]
)
def test_http_type_aliases_are_accepted(spelling: str) -> None:
    config = parse_server("docs", {"type": spelling, "url": "http://127.0.0.1:3000/mcp"})
    assert config.type == "streamable_http"
    assert config.url == "http://127.0.0.1:3000/mcp"


def test_an_entry_with_url_and_no_type_is_http() -> None:
    assert parse_server("docs", {"url": "https://example.com/mcp"}).type == "streamable_http"


def test_an_entry_with_command_and_no_type_is_stdio() -> None:
    config = parse_server("fs", {"command": "npx", "args": ["-y", "pkg"]})
    assert config.type == "stdio"
    assert config.args == ("-y", "pkg")


@pytest.mark.parametrize("spelling", ["sse", "SSE", "Sse"])
def test_sse_is_refused_with_a_pointer_to_streamable_http(spelling: str) -> None:
    with pytest.raises(InvalidSettings) as caught:
        parse_server("legacy", {"type": spelling, "url": "http://127.0.0.1:3000/sse"})
    message = caught.value.message
    assert message.startswith("legacy.type: ")
    assert "HTTP+SSE" in message
    assert "not supported" in message
    assert "streamable_http" in message
    assert caught.value.kind == "invalid_settings"


def test_an_unknown_transport_is_refused() -> None:
    with pytest.raises(InvalidSettings) as caught:
        parse_server("x", {"type": "websocket", "url": "http://h/"})
    assert caught.value.message.startswith("x.type: unknown transport")
    with pytest.raises(ValueError, match="type: expected a string"):
        canonical_type({"type": 3})


# --- validation names the server and the field ---------------------------------------------


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"command": "x", "timeoutSeconds": 0}, "docs.timeoutSeconds: expected int > 0"),
        ({"command": "x", "timeoutSeconds": -5}, "docs.timeoutSeconds: expected int > 0"),
        ({"command": "x", "timeoutSeconds": "9"}, "docs.timeoutSeconds: expected int, got str"),
        ({"command": "x", "timeoutSeconds": 1.5}, "docs.timeoutSeconds: expected int, got float"),
        ({"command": "x", "timeoutSeconds": True}, "docs.timeoutSeconds: expected int, got bool"),
        ({"command": "x", "args": "-y"}, "docs.args: expected array, got str"),
        ({"command": "x", "args": [1]}, "docs.args[0]: expected str, got int"),
        ({"command": "x", "enabled": "yes"}, "docs.enabled: expected bool, got str"),
        ({"command": "x", "longRunning": 1}, "docs.longRunning: expected bool, got int"),
        ({"command": "x", "disabledTools": "t"}, "docs.disabledTools: expected array, got str"),
        ({"command": "x", "description": 7}, "docs.description: expected str, got int"),
        (
            {"command": "x", "serverInfo": {"name": 3}},
            "docs.serverInfo.name: expected str, got int",
        ),
        ({}, "docs.command: required for a stdio server"),
        ({"type": "stdio", "command": "  "}, "docs.command: required for a stdio server"),
        ({"type": "http"}, "docs.url: required for a streamable_http server"),
        ({"url": "ftp://host/x"}, "docs.url: expected an http:// or https:// URL"),
        (
            {"command": "x", "url": "http://h/"},
            "docs.command: a streamable_http server has a url, not a command",
        ),
        (
            {"type": "stdio", "command": "x", "url": "http://h/"},
            "docs.url: a stdio server has a command, not a url",
        ),
        ([], "docs: expected an object"),
    ],
)
def test_validation_names_server_and_field(raw: object, message: str) -> None:
    with pytest.raises(InvalidSettings) as caught:
        parse_server("docs", raw)
    assert caught.value.message == message
    assert message in caught.value.errors


def test_several_problems_of_one_entry_are_all_named() -> None:
    with pytest.raises(InvalidSettings) as caught:
        parse_server("s", {"type": "stdio", "url": "http://h/", "timeoutSeconds": 0})
    assert caught.value.errors == [
        "s.command: required for a stdio server",
        "s.url: a stdio server has a command, not a url",
        "s.timeoutSeconds: expected int > 0",
    ]


def test_unknown_keys_of_an_entry_are_allowed() -> None:
    config = parse_server("fs", {"command": "x", "x-note": {"a": 1}, "autoApprove": []})
    assert config.command == "x"


def test_a_url_made_of_a_variable_is_allowed() -> None:
    assert parse_server("docs", {"url": "${DOCS_URL}"}).url == "${DOCS_URL}"


def test_defaults() -> None:
    config = parse_server("fs", {"command": "x"})
    assert config.enabled is True
    assert config.timeout == 60.0
    assert config.long_running is False
    assert config.disabled_tools == ()
    assert parse_server("fs", {"command": "x", "timeoutSeconds": 5}).timeout == 5.0


# --- the document --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (b'{"a": 1 /* never closed', "line 1, column 9"),  # a trailing comma is JSONC
        (b'{\n  "a": 1\n  "b": 2\n}', "line 3, column 3"),
        (b"", "line 1, column 1"),
    ],
)
def test_a_file_that_is_not_json_says_where_it_broke(data: bytes, where: str) -> None:
    with pytest.raises(InvalidSettings) as caught:
        decode_document(data)
    assert "not valid JSON" in caught.value.message
    assert where in caught.value.message


def test_the_top_level_must_be_an_object() -> None:
    with pytest.raises(InvalidSettings, match="JSON object at the top level"):
        decode_document(b"[1, 2]")


def test_decoding_keeps_key_order() -> None:
    doc = decode_document(b'{"z": 1, "a": {"y": 2, "b": 3}, "m": 4}')
    assert list(doc) == ["z", "a", "m"]
    assert list(doc["a"]) == ["y", "b"]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"max_reply_bytes": 0}, "mcp.max_reply_bytes: expected a number > 0"),
        ({"session_idle_minutes": -1}, "mcp.session_idle_minutes: expected a number > 0"),
        ({"session_idle_minutes": "x"}, "mcp.session_idle_minutes: expected float, got str"),
        (3, "mcp: expected an object"),
    ],
)
def test_mcp_options_are_validated(raw: object, message: str) -> None:
    with pytest.raises(InvalidSettings) as caught:
        parse_mcp_options(raw)
    assert caught.value.message == message


def test_one_invalid_server_among_valid_ones() -> None:
    doc = {
        "assets": {
            "mcpServers": {
                "a": {"command": "a"},
                "bad": {"command": "b", "timeoutSeconds": 0},
                "c": {"url": "http://c/mcp"},
            }
        }
    }
    settings = parse_settings(doc)
    assert list(settings.servers) == ["a", "c"]
    assert settings.server_errors == {"bad": "bad.timeoutSeconds: expected int > 0"}


def test_an_invalid_entry_keeps_its_last_good_definition() -> None:
    good = parse_settings({"assets": {"mcpServers": {"s": {"command": "old", "args": ["1"]}}}})
    broken = parse_settings(
        {"assets": {"mcpServers": {"s": {"command": "new", "timeoutSeconds": "x"}}}}, good
    )
    assert broken.servers["s"] == good.servers["s"]
    assert broken.servers["s"].command == "old"
    assert "s.timeoutSeconds" in broken.server_errors["s"]
    # A new server that is invalid from the start has no definition, only its error.
    fresh = parse_settings({"assets": {"mcpServers": {"n": {"type": "sse", "url": "http://h"}}}})
    assert "n" not in fresh.servers
    assert "HTTP+SSE" in fresh.server_errors["n"]


def test_invalid_sections_keep_the_previous_ones() -> None:
    good = parse_settings(
        {"mcp": {"max_reply_bytes": 1000}, "presets": {"p": {"mcpServers": ["a"]}}}
    )
    bad = parse_settings(
        {
            "assets": {"mcpServers": []},
            "mcp": {"max_reply_bytes": -1},
            "presets": {"p": {"mcpServers": "a"}},
        },
        good,
    )
    assert bad.mcp.max_reply_bytes == 1000
    assert bad.presets == good.presets
    assert "assets.mcpServers: expected an object" in bad.errors
    assert "mcp.max_reply_bytes: expected a number > 0" in bad.errors
    assert any(e.startswith("presets.p.mcpServers") for e in bad.errors)


def test_an_empty_document_is_valid() -> None:
    settings = parse_settings({})
    assert settings.servers == {}
    assert settings.errors == ()


# --- diffing -------------------------------------------------------------------------------


def _settings(servers: dict[str, object]) -> Settings:
    return parse_settings({"assets": {"mcpServers": servers}})


def test_diff_separates_connection_and_policy_changes() -> None:
    base = {"command": "c", "args": ["1"], "env": {"A": "1"}}
    old = _settings(
        {
            "keep": dict(base),
            "gone": dict(base),
            "cmd": dict(base),
            "args": dict(base),
            "env": dict(base),
            "cwd": dict(base),
            "type": {"url": "http://h/mcp"},
            "url": {"url": "http://h/mcp"},
            "headers": {"url": "http://h/mcp", "headers": {"A": "1"}},
            "enabled": dict(base),
            "descr": dict(base),
            "tools": dict(base),
            "timeout": dict(base),
            "long": dict(base),
        }
    )
    new = _settings(
        {
            "keep": dict(base),
            "cmd": {**base, "command": "d"},
            "args": {**base, "args": ["2"]},
            "env": {**base, "env": {"A": "2"}},
            "cwd": {**base, "cwd": "/tmp"},
            "type": {"type": "stdio", "command": "x"},
            "url": {"url": "http://h/other"},
            "headers": {"url": "http://h/mcp", "headers": {"A": "2"}},
            "enabled": {**base, "enabled": False},
            "descr": {**base, "description": "d"},
            "tools": {**base, "disabledTools": ["t"], "disabledAutoApproveTools": ["u"]},
            "timeout": {**base, "timeoutSeconds": 5},
            "long": {**base, "longRunning": True},
            "new": dict(base),
        }
    )
    diff = diff_settings(old, new)
    assert diff.added == ("new",)
    assert diff.removed == ("gone",)
    assert set(diff.connection_changed) == {"cmd", "args", "env", "cwd", "type", "url", "headers"}
    assert set(diff.policy_changed) == {"enabled", "descr", "tools", "timeout", "long"}
    assert diff.invalid == ()
    assert set(diff.as_event()) == {
        "added",
        "removed",
        "connectionChanged",
        "policyChanged",
        "invalid",
    }
    assert set(CONNECTION_FIELDS) == {
        "type",
        "command",
        "args",
        "env",
        "envFile",
        "cwd",
        "url",
        "headers",
        "oauth",
        "limits",
        "sandbox",
    }


def test_diff_of_equal_settings_is_empty() -> None:
    one = _settings({"a": {"command": "a", "x-unknown": 1}})
    two = _settings({"a": {"command": "a", "x-unknown": 2}})
    assert not diff_settings(one, two)


def test_diff_reports_newly_invalid_servers_once() -> None:
    good = _settings({"s": {"command": "c"}})
    bad = parse_settings({"assets": {"mcpServers": {"s": {"command": ""}}}}, good)
    diff = diff_settings(good, bad)
    assert diff.invalid == ("s",)
    assert diff.removed == ()  # it keeps its last good definition
    same_error = parse_settings({"assets": {"mcpServers": {"s": {"command": ""}}}}, bad)
    assert diff_settings(bad, same_error).invalid == ()


def test_recording_server_info_is_not_a_change() -> None:
    one = _settings({"a": {"command": "a"}})
    two = _settings({"a": {"command": "a", "serverInfo": {"name": "n", "version": "1"}}})
    assert not diff_settings(one, two)


# --- ${VAR} expansion ----------------------------------------------------------------------

ENV = {"HOME": "/home/me", "TOKEN": "s3cret", "EMPTY": ""}


@pytest.mark.parametrize(
    ("value", "expanded"),
    [
        ("plain", "plain"),
        ("${HOME}/x", "/home/me/x"),
        ("${HOME}${HOME}", "/home/me/home/me"),
        ("Bearer ${TOKEN}", "Bearer s3cret"),
        ("${MISSING:-fallback}", "fallback"),
        ("${MISSING:-}", ""),
        ("${HOME:-fallback}", "/home/me"),
        ("${EMPTY:-fallback}", "fallback"),
        ("${EMPTY}", ""),
        ("${env:TOKEN}", "s3cret"),
        ("$HOME", "$HOME"),  # only the braced form is a reference
        ("${not a var}", "${not a var}"),
    ],
)
def test_expand(value: str, expanded: str) -> None:
    assert expand(value, ENV) == expanded


def test_an_unset_variable_without_default_is_an_error_naming_it() -> None:
    with pytest.raises(UnsetVariable) as caught:
        expand("a ${NOPE} b", ENV, "docs.headers.Authorization")
    assert caught.value.variable == "NOPE"
    message = caught.value.message
    assert message.startswith(
        "docs.headers.Authorization: environment variable ${NOPE} is not set in meworkd's "
        "environment"
    )
    # It says how to set it for a user service, not only that it is missing.
    assert "systemctl --user set-environment NOPE=" in message
    assert "EnvironmentFile=" in message
    assert "envFile" in message
    assert caught.value.kind == "unset_variable"
    assert isinstance(caught.value, InvalidSettings)


def test_expand_server_expands_every_connection_field_and_nothing_else() -> None:
    config = parse_server(
        "fs",
        {
            "command": "${HOME}/bin/srv",
            "args": ["--token", "${TOKEN}", "${MISSING:-d}"],
            "env": {"T": "${TOKEN}"},
            "cwd": "${HOME}",
            "description": "${TOKEN}",
            "disabledTools": ["${TOKEN}"],
        },
    )
    out = expand_server("fs", config, ENV)
    assert out.command == "/home/me/bin/srv"
    assert out.args == ("--token", "s3cret", "d")
    assert out.env == {"T": "s3cret"}
    assert out.cwd == "/home/me"
    assert out.description == "${TOKEN}"
    assert out.disabled_tools == ("${TOKEN}",)
    # The configuration itself is untouched (expansion is never written back).
    assert config.command == "${HOME}/bin/srv"
    assert config.env == {"T": "${TOKEN}"}

    http = parse_server(
        "docs", {"url": "${BASE:-http://h}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
    )
    out = expand_server("docs", http, ENV)
    assert out.url == "http://h/mcp"
    assert out.headers == {"Authorization": "Bearer s3cret"}


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        ({"command": "${NOPE}"}, "fs.command"),
        ({"command": "x", "args": ["${NOPE}"]}, "fs.args"),
        ({"command": "x", "env": {"K": "${NOPE}"}}, "fs.env.K"),
        ({"command": "x", "cwd": "${NOPE}"}, "fs.cwd"),
        ({"url": "${NOPE}"}, "fs.url"),
        ({"url": "http://h", "headers": {"X-Key": "${NOPE}"}}, "fs.headers.X-Key"),
    ],
)
def test_expand_server_names_server_field_and_variable(raw: dict[str, object], where: str) -> None:
    with pytest.raises(UnsetVariable) as caught:
        expand_server("fs", parse_server("fs", raw), {})
    assert caught.value.message.startswith(f"{where}: environment variable ${{NOPE}} is not set")


def test_server_config_is_hashable_by_connection_key() -> None:
    one = parse_server("a", {"command": "x", "env": {"B": "2", "A": "1"}})
    two = parse_server("a", {"command": "x", "env": {"A": "1", "B": "2"}, "enabled": False})
    assert one.connection_key() == two.connection_key()
    assert isinstance(one, ServerConfig)


# --- secrets -------------------------------------------------------------------------------


def test_masked_entry_hides_env_and_header_values_but_not_references() -> None:
    raw = {
        "command": "x",
        "env": {"A_TOKEN": "literal-secret", "B": "${TOKEN}", "C": "Bearer ${TOKEN}", "D": 5},
        "headers": {"Authorization": "Bearer abc", "X": "${T1}${T2}"},
        "x-unknown": "kept",
    }
    masked = masked_entry(raw)
    assert masked["env"] == {
        "A_TOKEN": "********",
        "B": "${TOKEN}",
        "C": "Bearer ${TOKEN}",
        "D": "********",
    }
    assert masked["headers"] == {"Authorization": "********", "X": "${T1}${T2}"}
    assert masked["x-unknown"] == "kept"
    assert list(masked) == list(raw)
    assert raw["env"]["A_TOKEN"] == "literal-secret"  # a copy


def test_duplicate_keys_are_found_at_any_depth_with_their_place() -> None:
    text = (
        b'{"x": 1, "x": 2, "assets": {"mcpServers": {"s": {"env": {"K": "1", "K": "2"}}}},'
        b' "hooks": {"PermissionRequest": [{"matcher": "a", "matcher": "b"}]}}'
    )
    found = duplicate_keys(text)
    assert [m.split(":")[0] for m in found] == [
        "the top level",
        "assets.mcpServers.s.env",
        "hooks.PermissionRequest[0]",
    ]
    assert duplicate_keys(b'{"a": {"b": 1}, "c": [1, {"d": 2}]}') == []
