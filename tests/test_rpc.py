"""The control socket, byte by byte: JSON-RPC 2.0 framing, concurrency on one connection,
batches, notifications, standard and application error codes, no Python internals in replies,
oversized and malformed input that never takes the daemon down."""

import json
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.daemon_fixture import (
    DEFAULT_MAX_LINE,
    DaemonEnv,
    RawSession,
    assert_clean_error,
    assert_no_leak,
    make_env,
    raw_session,
    read_doc,
    running_daemon,
)

pytestmark = pytest.mark.anyio


def request(id_: object, method: str, params: object = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": id_}
    if params is not None:
        message["params"] = params
    return message


def line(message: object) -> bytes:
    return json.dumps(message).encode() + b"\n"


async def still_answers(env: DaemonEnv, raw: RawSession | None = None) -> None:
    """The daemon (and, if given, this connection) still serves requests."""
    if raw is not None:
        reply = await raw.exchange(line(request("alive", "daemon.status")))
        assert reply["id"] == "alive"
        assert "result" in reply
    async with raw_session(env.socket) as fresh:
        reply = await fresh.exchange(line(request("fresh", "daemon.status")))
        assert reply["result"]["pid"] > 0


@pytest.fixture
def env(short_tmp: Path) -> DaemonEnv:
    return make_env(short_tmp, {"assets": {"mcpServers": {"fs": {"command": "srv"}}}})


# --- standard errors -----------------------------------------------------------------------


PARSE_ERRORS = [
    (b'{"jsonrpc": "2.0", "method": ', "column"),
    (b"{'single': 'quotes'}", "column"),
    (b"\xff\xfe\x00garbage", "not UTF-8"),
    (b"[" * 100_000, "nested too deeply"),
    (b"nul\x00l", "column"),
]


async def test_parse_errors(env: DaemonEnv) -> None:
    async with running_daemon(env), raw_session(env.socket) as raw:
        for data, detail in PARSE_ERRORS:
            reply = await raw.exchange(data + b"\n")
            assert_clean_error(reply, code=-32700, kind="parse_error")
            assert reply["id"] is None
            assert detail in reply["error"]["data"]["detail"], data[:40]
        await still_answers(env, raw)


INVALID_REQUESTS = [
    {"jsonrpc": "1.0", "method": "daemon.status", "id": 1},
    {"method": "daemon.status", "id": 1},
    {"jsonrpc": "2.0", "id": 1},
    {"jsonrpc": "2.0", "method": 42, "id": 1},
    {"jsonrpc": "2.0", "method": "daemon.status", "id": {"an": "object"}},
    {"jsonrpc": "2.0", "method": "daemon.status", "id": [1]},
    {"jsonrpc": "2.0", "method": "daemon.status", "params": "a string", "id": 1},
    {"jsonrpc": "2.0", "method": "daemon.status", "id": 1, "unexpected": True},
    42,
    "a string",
    None,
    True,
]


async def test_invalid_requests(env: DaemonEnv) -> None:
    async with running_daemon(env), raw_session(env.socket) as raw:
        for message in INVALID_REQUESTS:
            reply = await raw.exchange(line(message))
            assert_clean_error(reply, code=-32600, kind="invalid_request")
            assert reply["id"] is None, message
        reply = await raw.exchange(b"[]\n")
        assert_clean_error(reply, code=-32600, kind="invalid_request")
        await still_answers(env, raw)


async def test_unknown_method(env: DaemonEnv) -> None:
    async with running_daemon(env), raw_session(env.socket) as raw:
        for method in ("no.such.method", "rpc.discover", "", "daemon.status "):
            reply = await raw.exchange(line(request(3, method)))
            assert_clean_error(reply, code=-32601, kind="method_not_found")
            assert reply["id"] == 3


INVALID_PARAMS = [
    ("daemon.status", [1]),
    ("daemon.status", {"unexpected": 1}),
    ("servers.get", {}),
    ("servers.get", {"name": 5}),
    ("servers.get", {"name": "fs", "reveal": "yes"}),
    ("servers.add", {"name": "x", "server": "not an object"}),
    ("servers.add", {"name": "x", "server": {"command": "c"}, "typo": 1}),
    ("servers.rename", {"name": "fs", "new_name": "snake_case_is_not_the_contract"}),
    ("servers.import", {"text": "{}", "onConflict": "merge"}),
    ("servers.setToolEnabled", {"name": "fs", "tool": "t"}),
    ("settings.setMcpOptions", {"maxReplyBytes": 1}),
    ("settings.setMcpOptions", {}),
    ("events.subscribe", {"topics": ["no.such.topic"]}),
    ("events.subscribe", {"topics": "settings.reloaded"}),
    ("servers.add", {"name": "", "server": {"command": "c"}}),
    ("servers.add", {"name": "a\nb", "server": {"command": "c"}}),
]


async def test_invalid_params(env: DaemonEnv) -> None:
    async with running_daemon(env), raw_session(env.socket) as raw:
        before = env.settings.read_bytes()
        for method, params in INVALID_PARAMS:
            reply = await raw.exchange(line(request("p", method, params)))
            assert_clean_error(reply, code=-32602, kind="invalid_params")
            assert reply["id"] == "p"
            assert env.settings.read_bytes() == before, (method, params)


# --- application errors --------------------------------------------------------------------


APPLICATION_ERRORS = [
    ("servers.get", {"name": "nope"}, -32060, "server_not_found"),
    ("servers.update", {"name": "nope", "patch": {}}, -32060, "server_not_found"),
    ("servers.remove", {"name": "nope"}, -32060, "server_not_found"),
    ("servers.rename", {"name": "nope", "newName": "x"}, -32060, "server_not_found"),
    (
        "servers.setToolEnabled",
        {"name": "nope", "tool": "t", "enabled": False},
        -32060,
        "server_not_found",
    ),
    (
        "servers.setToolAutoApprove",
        {"name": "nope", "tool": "t", "autoApprove": False},
        -32060,
        "server_not_found",
    ),
    ("presets.remove", {"name": "nope"}, -32060, "preset_not_found"),
    ("servers.add", {"name": "fs", "server": {"command": "c"}}, -32061, "conflict"),
    (
        "servers.add",
        {"name": "x", "server": {"command": "c", "timeoutSeconds": 0}},
        -32062,
        "invalid_settings",
    ),
    (
        "servers.add",
        {"name": "x", "server": {"type": "sse", "url": "http://h/sse"}},
        -32062,
        "invalid_settings",
    ),
    (
        "servers.update",
        {"name": "fs", "patch": {"args": "not a list"}},
        -32062,
        "invalid_settings",
    ),
    ("settings.setMcpOptions", {"max_reply_bytes": 0}, -32062, "invalid_settings"),
    ("presets.set", {"name": "p", "preset": {"approvalLevel": "yolo"}}, -32062, "invalid_settings"),
]


async def test_application_errors_have_a_stable_kind(env: DaemonEnv) -> None:
    async with running_daemon(env), raw_session(env.socket) as raw:
        before = env.settings.read_bytes()
        for method, params, code, kind in APPLICATION_ERRORS:
            reply = await raw.exchange(line(request(9, method, params)))
            assert_clean_error(reply, code=code, kind=kind)
            assert reply["id"] == 9
            # A failed mutation writes nothing.
            assert env.settings.read_bytes() == before, (method, params)


async def test_validation_errors_name_the_server_and_the_field(env: DaemonEnv) -> None:
    async with running_daemon(env), raw_session(env.socket) as raw:
        reply = await raw.exchange(
            line(
                request(
                    1,
                    "servers.add",
                    {"name": "docs", "server": {"url": "http://h/mcp", "timeoutSeconds": -1}},
                )
            )
        )
        assert_clean_error(reply, kind="invalid_settings")
        assert reply["error"]["message"] == "docs.timeoutSeconds: expected int > 0"
        assert reply["error"]["data"]["errors"] == ["docs.timeoutSeconds: expected int > 0"]
        reply = await raw.exchange(
            line(
                request(
                    2, "servers.add", {"name": "old", "server": {"type": "sse", "url": "http://h"}}
                )
            )
        )
        assert "HTTP+SSE" in reply["error"]["message"]
        assert "streamable_http" in reply["error"]["message"]


# --- notifications and batches -------------------------------------------------------------


async def test_notifications_get_no_reply(env: DaemonEnv) -> None:
    async with running_daemon(env), raw_session(env.socket) as raw:
        sub = await raw.exchange(
            line(request(1, "events.subscribe", {"topics": ["settings.reloaded"]}))
        )
        assert "result" in sub
        await raw.send(line({"jsonrpc": "2.0", "method": "daemon.status"}))
        await raw.send(line({"jsonrpc": "2.0", "method": "no.such.method"}))
        await raw.send(line({"jsonrpc": "2.0", "method": "servers.get", "params": {"name": "x"}}))
        await raw.send(
            line(
                {
                    "jsonrpc": "2.0",
                    "method": "servers.add",
                    "params": {"name": "by-notification", "server": {"command": "n"}},
                }
            )
        )
        # The notification's effect is visible (an event), but no reply ever came for any of them.
        with anyio.fail_after(5):
            while True:
                message = await raw.receive_any()
                assert message.get("method") == "event", message
                if message["params"]["data"]["added"] == ["by-notification"]:
                    break
        reply = await raw.exchange(line(request("after", "daemon.status")))
        assert reply["id"] == "after"
        assert "by-notification" in read_doc(env.settings)["assets"]["mcpServers"]


async def test_a_batch_answers_each_member(env: DaemonEnv) -> None:
    async with running_daemon(env), raw_session(env.socket) as raw:
        batch = [
            request(1, "daemon.status"),
            request(2, "no.such.method"),
            {"jsonrpc": "2.0", "method": "daemon.status"},  # a notification: no reply
            request(3, "servers.get", {"name": "nope"}),
            request(4, "servers.get", {"name": 4}),
            {"jsonrpc": "1.0", "method": "daemon.status", "id": 5},
            17,
            request(6, "servers.get", {"name": "fs"}),
            request(7, "servers.add", {"name": "b1", "server": {"command": "b"}}),
        ]
        replies = await raw.exchange(line(batch))
        assert isinstance(replies, list)
        by_id = {r["id"]: r for r in replies if r["id"] is not None}
        assert sorted(by_id) == [1, 2, 3, 4, 6, 7]
        assert len(replies) == 8  # the two invalid members are answered with id null
        assert "result" in by_id[1]
        assert_clean_error(by_id[2], code=-32601, kind="method_not_found")
        assert_clean_error(by_id[3], code=-32060, kind="server_not_found")
        assert_clean_error(by_id[4], code=-32602, kind="invalid_params")
        for nameless in (r for r in replies if r["id"] is None):
            assert_clean_error(nameless, code=-32600, kind="invalid_request")
        assert by_id[6]["result"]["command"] == "srv"
        assert by_id[7]["result"]["name"] == "b1"
        assert "b1" in read_doc(env.settings)["assets"]["mcpServers"]


async def test_a_batch_of_notifications_gets_no_reply(env: DaemonEnv) -> None:
    async with running_daemon(env), raw_session(env.socket) as raw:
        await raw.send(line([{"jsonrpc": "2.0", "method": "daemon.status"}] * 3))
        reply = await raw.exchange(line(request("next", "daemon.status")))
        assert reply["id"] == "next"  # the first line back is this reply, not a batch reply


async def test_a_large_batch_and_many_pipelined_requests(env: DaemonEnv) -> None:
    async with running_daemon(env), raw_session(env.socket) as raw:
        batch = [
            request(
                i, "servers.get" if i % 2 else "daemon.status", {"name": "fs"} if i % 2 else None
            )
            for i in range(256)
        ]
        replies = await raw.exchange(line(batch))
        assert sorted(r["id"] for r in replies) == list(range(256))
        assert all("result" in r for r in replies)

        too_big = await raw.exchange(line([request(i, "daemon.status") for i in range(257)]))
        assert_clean_error(too_big, code=-32600, kind="invalid_request")

        # 600 requests in one write: more than may run at once; every one is answered.
        await raw.send(b"".join(line(request(i, "servers.list")) for i in range(600)))
        ids = [(await raw.receive())["id"] for _ in range(600)]
        assert sorted(ids) == list(range(600))


async def test_requests_on_one_connection_run_concurrently(env: DaemonEnv) -> None:
    async with running_daemon(env) as daemon, raw_session(env.socket) as raw:
        writing, release = threading.Event(), threading.Event()

        def hold(_tmp: Path) -> None:  # runs in meworkd's write, in a worker thread
            writing.set()
            release.wait(10)

        daemon.store.before_rename = hold
        await raw.send(
            line(request("slow", "servers.add", {"name": "s", "server": {"command": "c"}}))
        )
        with anyio.fail_after(5):
            assert await anyio.to_thread.run_sync(writing.wait, 5)
        try:
            # The slow request is in flight; a fast one on the same connection overtakes it.
            fast = await raw.exchange(line(request("fast", "daemon.status")))
            assert fast["id"] == "fast"
            listed = await raw.exchange(line(request("list", "servers.list")))
            assert listed["id"] == "list"
            assert [s["name"] for s in listed["result"]["servers"]] == ["fs"]
        finally:
            release.set()
        slow = await raw.receive()
        assert slow["id"] == "slow"
        assert slow["result"]["name"] == "s"


async def test_a_client_that_leaves_mid_request_does_not_hurt(env: DaemonEnv) -> None:
    async with running_daemon(env) as daemon, raw_session(env.socket) as watcher:
        subscribed = await watcher.exchange(
            line(request(0, "events.subscribe", {"topics": ["settings.reloaded"]}))
        )
        assert "result" in subscribed
        writing, release = threading.Event(), threading.Event()

        def hold(_tmp: Path) -> None:
            writing.set()
            release.wait(10)

        daemon.store.before_rename = hold
        async with raw_session(env.socket) as raw:
            await raw.send(
                line(request(1, "servers.add", {"name": "s", "server": {"command": "c"}}))
            )
            with anyio.fail_after(5):
                assert await anyio.to_thread.run_sync(writing.wait, 5)
        release.set()  # the client is gone; the write still completes
        with anyio.fail_after(5):
            event = await watcher.receive_any()
        assert event["params"]["data"]["added"] == ["s"]
        assert list(read_doc(env.settings)["assets"]["mcpServers"]) == ["fs", "s"]
        await still_answers(env, watcher)


# --- size limit and hostile input ----------------------------------------------------------


async def test_a_line_over_8_mib_gets_an_error_and_the_connection_survives(env: DaemonEnv) -> None:
    async with running_daemon(env) as daemon, raw_session(env.socket) as raw:
        assert daemon.rpc.max_line == DEFAULT_MAX_LINE == 8 * 1024 * 1024
        padding = "x" * DEFAULT_MAX_LINE
        oversized = line(request(1, "servers.get", {"name": padding}))
        reply = await raw.exchange(oversized)
        assert_clean_error(reply, code=-32600, kind="message_too_large")
        assert str(DEFAULT_MAX_LINE) in reply["error"]["data"]["detail"]
        # Just under the limit is an ordinary request.
        envelope = len(line(request(2, "servers.get", {"name": ""}))) - 1
        fits = line(request(2, "servers.get", {"name": "y" * (DEFAULT_MAX_LINE - envelope)}))
        assert len(fits) - 1 == DEFAULT_MAX_LINE
        reply = await raw.exchange(fits)
        assert_clean_error(reply, code=-32060, kind="server_not_found")
        assert reply["id"] == 2
        await still_answers(env, raw)


async def test_hostile_input_never_takes_the_daemon_down(env: DaemonEnv) -> None:
    async with running_daemon(env):
        # Half a message, then the peer goes away.
        async with raw_session(env.socket) as raw:
            await raw.send(b'{"jsonrpc": "2.0", "method": "daemon.sta')
        # Blank lines are ignored; CRLF line ends work.
        async with raw_session(env.socket) as raw:
            await raw.send(b"\n\n   \n")
            reply = await raw.exchange(json.dumps(request(1, "daemon.status")).encode() + b"\r\n")
            assert reply["id"] == 1
        # A deeply nested document to import.
        async with raw_session(env.socket) as raw:
            deep = '{"mcpServers": {"d": {"command": "c", "x": ' + "[" * 900 + "]" * 900 + "}}}"
            reply = await raw.exchange(line(request(2, "servers.import", {"text": deep})))
            assert reply["result"]["added"] == []
            assert reply["result"]["rejected"] == [
                {"name": "d", "reason": "the entry is nested too deeply"}
            ]
            await still_answers(env, raw)
        # Binary noise over many lines and chunks.
        async with raw_session(env.socket) as raw:
            noise = bytes(range(256)).replace(b"\n", b"") * 64
            await raw.send(noise + b"\n")
            reply = await raw.receive()
            assert_clean_error(reply, code=-32700)
            await still_answers(env, raw)
        await still_answers(env)


async def test_no_reply_leaks_python_internals(env: DaemonEnv) -> None:
    """Every error path above in one pass, each reply scanned for tracebacks, class names and
    source paths."""
    payloads: list[bytes] = [
        b"{",
        b"\xff\n",
        line(INVALID_REQUESTS[0]),
        line(request(1, "nope")),
        line(request(2, "servers.get", [1])),
        line(request(3, "servers.get", {"name": None})),
        line(request(4, "servers.add", {"name": "x", "server": {"command": 5}})),
        line(request(5, "servers.update", {"name": "fs", "patch": {"env": {"A": 1}}})),
        line(request(6, "servers.import", {"text": "[1,"})),
        line(request(7, "servers.import", {"text": '{"command": "x"}'})),
        line(request(8, "presets.set", {"name": "", "preset": {}})),
        line(request(9, "settings.setMcpOptions", {"session_idle_minutes": -1})),
        line([request(10, "nope"), request(11, "servers.remove", {"name": "nope"})]),
    ]
    async with running_daemon(env), raw_session(env.socket) as raw:
        for payload in payloads:
            reply = await raw.exchange(payload if payload.endswith(b"\n") else payload + b"\n")
            for one in reply if isinstance(reply, list) else [reply]:
                assert_clean_error(one)
            assert_no_leak(json.dumps(reply))
