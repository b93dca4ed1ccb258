"""tests/servers/fake.py answers as the SDK-based kitchen.py does, and apps_fake.py as
apps_view.py does, so tests may use either.

The same requests go to both servers one at a time (each reply read before the next request)
and the replies must be equal, byte for byte once parsed. What only the fake does on threads
(``slow``, ``progress``, a cancel) and its start-up options are checked on the raw protocol.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.common import APPS_FAKE, APPS_VIEW, FAKE, KITCHEN, PY

HANDSHAKE_VERSION = "2025-11-25"
CLIENT_INFO = {"name": "fake-test", "version": "0"}
REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("tools/list", {}),
    ("tools/list", {"cursor": "4"}),
    ("tools/list", {"cursor": "x"}),
    ("tools/call", {"name": "echo", "arguments": {"text": "hi"}}),
    ("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2.5}}),
    ("tools/call", {"name": "add", "arguments": {"a": 1}}),
    ("tools/call", {"name": "bad_output", "arguments": {}}),
    ("tools/call", {"name": "big", "arguments": {"bytes": 5}}),
    ("tools/call", {"name": "error", "arguments": {}}),
    ("tools/call", {"name": "rpc_error", "arguments": {}}),
    ("tools/call", {"name": "interactive_object", "arguments": {}}),
    ("tools/call", {"name": "t1", "arguments": {"b": 1, "a": [2]}}),
    ("tools/call", {"name": "nope", "arguments": {}}),
    ("tools/call", {"name": "progress", "arguments": {"steps": 2, "interval": 0}}),
    ("prompts/list", {}),
    ("prompts/get", {"name": "greet", "arguments": {"name": "Ada"}}),
    ("prompts/get", {"name": "nope"}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("resources/read", {"uri": "mem://hello"}),
    ("resources/read", {"uri": "mem://item/7"}),
    ("resources/read", {"uri": "mem://nope"}),
    ("server/discover", {}),
]


class Peer:
    """A fixture server on pipes, spoken to one request at a time."""

    def __init__(self, script: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            [PY, script, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.proc.stdin.flush()

    def receive(self) -> Any:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # a server that hangs fails the suite's timeout
        assert line, "the server closed its stdout"
        return json.loads(line)

    def request(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        return self.receive()

    def start(self, capabilities: dict[str, Any] | None = None) -> Any:
        reply = self.request(
            "initialize",
            {
                "protocolVersion": HANDSHAKE_VERSION,
                "capabilities": capabilities or {},
                "clientInfo": CLIENT_INFO,
            },
        )
        self.send({"method": "notifications/initialized"})
        return reply

    def close(self) -> None:
        self.proc.kill()
        self.proc.communicate()


@pytest.fixture
def peers() -> Iterator[tuple[Peer, Peer]]:
    args = ("--tools", "2", "--page-size", "4", "--name", "chef")
    fake, kitchen = Peer(FAKE, *args), Peer(KITCHEN, *args)
    try:
        yield fake, kitchen
    finally:
        fake.close()
        kitchen.close()


def _without_data(reply: Any) -> Any:
    """The SDK adds the method name as ``data`` to -32601; the fake does too, but SDK versions
    differ in it: compare the code and message."""
    if "error" in reply and reply["error"]["code"] == -32601:
        reply = {**reply, "error": {k: v for k, v in reply["error"].items() if k != "data"}}
    return reply


def test_the_fake_answers_what_kitchen_answers(peers: tuple[Peer, Peer]) -> None:
    fake, kitchen = peers
    assert fake.start() == kitchen.start()
    for method, params in REQUESTS:
        expected = _without_data(kitchen.request(method, params))
        assert _without_data(fake.request(method, params)) == expected, (method, params)


APPS_REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("tools/list", {}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("prompts/list", {}),
    *(("resources/read", {"uri": f"ui://counter/{v}.html"}) for v in ("view", "huge", "wrong")),
    ("resources/read", {"uri": "ui://counter/nope.html"}),
    ("tools/call", {"name": "show_counter", "arguments": {"start": 3}}),
    ("tools/call", {"name": "show_counter", "arguments": {"start": "4"}}),
    ("tools/call", {"name": "show_counter"}),
    ("tools/call", {"name": "bump", "arguments": {}}),
    ("tools/call", {"name": "bump", "arguments": {}}),
    *(
        ("tools/call", {"name": name, "arguments": {}})
        for name in ("model_only", "supports_apps", "wrong_mime", "huge_view", "not_ui", "nope")
    ),
    ("ping", {}),
    ("server/discover", {}),
]
APPS_CAPABILITIES = {
    "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}
}


def test_the_apps_fake_answers_what_apps_view_answers() -> None:
    fake, sdk = Peer(APPS_FAKE), Peer(APPS_VIEW)
    try:
        assert fake.start(APPS_CAPABILITIES) == sdk.start(APPS_CAPABILITIES)
        for method, params in APPS_REQUESTS:
            expected = _without_data(sdk.request(method, params))
            assert _without_data(fake.request(method, params)) == expected, (method, params)
    finally:
        fake.close()
        sdk.close()
    # Without the extension advertised: what apps_view answers then (test_apps.py, apps off).
    fake = Peer(APPS_FAKE)
    try:
        fake.start()
        reply = fake.request("tools/call", {"name": "supports_apps", "arguments": {}})
        assert reply["result"]["structuredContent"] == {"result": "apps: no"}, reply
    finally:
        fake.close()


def test_the_fake_reports_progress_and_ends_a_cancelled_call_unanswered() -> None:
    peer = Peer(FAKE)
    try:
        peer.start()
        meta = {"_meta": {"progressToken": "p"}}
        peer.send({"id": "s", "method": "tools/call", "params": {"name": "slow", **meta,
                   "arguments": {"seconds": 600}}})  # fmt: skip
        started = peer.receive()
        assert started["method"] == "notifications/progress", started
        assert started["params"]["progressToken"] == "p"
        # Another request is answered while the slow call runs; then the cancel ends it.
        assert peer.request("ping", {}) == {"jsonrpc": "2.0", "id": 1 + 1, "result": {}}
        peer.send({"method": "notifications/cancelled", "params": {"requestId": "s"}})
        assert peer.request("tools/call", {"name": "add_tool", "arguments": {"name": "new"}}) == {
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
        }
        added = peer.receive()
        assert added["result"]["content"][0]["text"] == "added new", added
        assert "new" in [t["name"] for t in peer.request("tools/list", {})["result"]["tools"]]
    finally:
        peer.close()


def test_the_fake_takes_kitchens_start_up_options() -> None:
    done = subprocess.run(
        [PY, FAKE, "--exit-at-start", "7"], capture_output=True, timeout=30, check=False
    )
    assert done.returncode == 7
    assert b"kitchen: fatal: cannot start" in done.stderr
