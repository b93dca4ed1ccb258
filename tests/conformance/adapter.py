"""The official conformance suite's client: a private meworkd, driven as the chat app and its user.

``conformance client --command "python tests/conformance/adapter.py"`` runs this once per
scenario with the scenario's server URL as the last argument. It starts its own ``meworkd``
(private XDG folders), registers the URL as a Streamable HTTP server, opens a conversation at
``full_access``, begins a turn and calls the scenario's tools through their bound names, as
the chat app would. It also plays the person at a frontend: it follows every authorization URL
meworkd publishes like a browser (GET, each redirect followed to meworkd's loopback callback)
and accepts every form a server shows with its defaults.

``MCP_CONFORMANCE_CONTEXT`` is read only for what a user would type into the settings (a
pre-registered client, a key, an identity provider); meworkd itself never learns the scenario's
name. Standard library plus the project's own client library, so it measures meworkd alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mework_client.sync import Client, RpcError

SERVER = "conformance"
CONVERSATION = "conformance"
START_BOUND = 30.0  # seconds for the private daemon to answer
LOGIN_BOUND = 20.0  # seconds for a login to complete once its URL was followed
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


def log(*parts: object) -> None:
    print("[adapter]", *parts, file=sys.stderr, flush=True)


# --- what a user types into settings ----------------------------------------------------


def oauth_settings(scenario: str, context: dict[str, Any]) -> dict[str, Any] | None:
    """The ``oauth`` object a user would write for this server, from its documentation."""
    oauth: dict[str, Any] = {}
    if scenario.startswith("auth/"):
        # The client ID metadata document a host's vendor publishes (as the SDK's own
        # conformance client names one); used only where the AS says it supports them.
        oauth["clientMetadataUrl"] = CLIENT_METADATA_URL
    if "client_id" in context:
        oauth["clientId"] = context["client_id"]
    if "client_secret" in context:
        oauth["clientSecret"] = context["client_secret"]
    if "private_key_pem" in context:
        oauth["privateKey"] = context["private_key_pem"]
        oauth["signingAlgorithm"] = context.get("signing_algorithm", "ES256")
    if scenario.startswith("auth/client-credentials"):
        oauth["grant"] = "client_credentials"
    if "idp_token_endpoint" in context:  # enterprise-managed authorization (SEP-990)
        oauth["grant"] = "identity_assertion"
        oauth["idpTokenEndpoint"] = context["idp_token_endpoint"]
        oauth["idpClientId"] = context["idp_client_id"]
        oauth["idToken"] = context["idp_id_token"]  # what the enterprise login gave the user
    if "valid_jwt" in context:  # workload identity federation: the platform's token
        oauth["grant"] = "jwt_bearer"
        oauth["assertion"] = context["valid_jwt"]
    return oauth or None


def settings_document(url: str, oauth: dict[str, Any] | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "streamable_http", "url": url}
    if oauth is not None:
        entry["oauth"] = oauth
    return {"assets": {"mcpServers": {SERVER: entry}}, "mcp": {"sampling": True}}


# --- the private daemon -----------------------------------------------------------------


@contextlib.contextmanager
def private_daemon(document: dict[str, Any]) -> Iterator[Path]:
    """A ``meworkd`` of its own in a temporary XDG tree; yields its socket path."""
    with tempfile.TemporaryDirectory(prefix="mwconf-", dir="/tmp") as root_name:
        root = Path(root_name)
        runtime = root / "run"
        runtime.mkdir(mode=0o700)
        settings = root / "config" / "mework" / "settings.json"
        settings.parent.mkdir(parents=True)
        settings.write_text(json.dumps(document, indent=2))
        settings.chmod(0o600)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MEWORK_"))}
        env |= {
            "XDG_CONFIG_HOME": str(root / "config"),
            "XDG_STATE_HOME": str(root / "state"),
            "XDG_RUNTIME_DIR": str(runtime),
            "HOME": str(root),
        }
        socket = runtime / "mework" / "meworkd.sock"
        meworkd = Path(sys.executable).parent / "meworkd"
        daemon = subprocess.Popen(
            [str(meworkd), "--log-level", "debug"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sys.stderr,
            stderr=sys.stderr,
        )
        try:
            wait_until_answering(daemon, socket)
            yield socket
        finally:
            daemon.terminate()
            try:
                daemon.wait(timeout=10)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()


def wait_until_answering(daemon: subprocess.Popen[bytes], socket: Path) -> None:
    deadline = time.monotonic() + START_BOUND
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            raise SystemExit(f"meworkd exited with {daemon.returncode}")
        with contextlib.suppress(OSError), Client(socket, timeout=2) as client:
            client.call("daemon.status")
            return
        time.sleep(0.05)  # start-up only: nothing to wait on before the socket exists
    raise SystemExit("meworkd did not answer")


# --- the person at the frontend ---------------------------------------------------------


class Person(threading.Thread):
    """Follows authorization URLs like a browser and accepts forms with their defaults."""

    def __init__(self, socket: Path) -> None:
        super().__init__(daemon=True)
        self._client = Client(socket)
        self._followed: set[str] = set()
        self.authorized = threading.Event()
        self.login_failed: str | None = None

    def run(self) -> None:
        topics = ["server.auth", "elicitation.requested", "sampling.requested"]
        with contextlib.suppress(ConnectionError, OSError):
            for topic, data in self._client.events(topics):
                self._on(topic, data or {})

    def _on(self, topic: str, data: dict[str, Any]) -> None:
        if topic == "server.auth":
            state = data.get("state")
            if state == "pending" and (url := data.get("authorizationUrl")):
                self.authorized.clear()
                self.browse(url)
            elif state == "authorized":
                self.authorized.set()
            elif state == "failed":
                self.login_failed = str(data.get("error"))
                self.authorized.set()
        elif topic == "elicitation.requested":
            answer = {"elicitationId": data["elicitationId"], "action": "accept", "content": {}}
            self._answer("elicitations.respond", answer)
        elif topic == "sampling.requested":
            result = {
                "role": "assistant",
                "model": "conformance",
                "content": {"type": "text", "text": ""},
            }
            self._answer("sampling.respond", {"requestId": data["requestId"], "result": result})

    def _answer(self, method: str, params: dict[str, Any]) -> None:
        def send() -> None:
            with (
                contextlib.suppress(RpcError, ConnectionError, OSError),
                Client(self._client.path) as c,
            ):
                c.call(method, params)

        threading.Thread(target=send, daemon=True).start()

    def browse(self, url: str) -> None:
        """What a browser does with an authorization URL: GET it and follow every redirect."""
        if url in self._followed:
            return
        self._followed.add(url)
        log("browsing", url)

        def go() -> None:
            try:
                with urllib.request.urlopen(url, timeout=15) as reply:
                    log("browser landed on", reply.geturl(), reply.status)
            except (urllib.error.URLError, OSError) as exc:
                log("browser:", exc)

        threading.Thread(target=go, daemon=True).start()

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self._client.shutdown()


# --- the chat app -----------------------------------------------------------------------


class ChatApp:
    def __init__(self, socket: Path, person: Person) -> None:
        self.client = Client(socket)
        self.person = person
        self.turn: str | None = None
        self.bound: dict[str, str] = {}  # the server's tool name -> the bound name
        self.tools: dict[str, dict[str, Any]] = {}  # bound name -> model-facing definition

    def begin(self) -> None:
        """Begin a turn; if the server needs a login, log in as the user would and begin again."""
        self.client.call(
            "conversations.create",
            {"id": CONVERSATION, "mcpServers": [SERVER], "approvalLevel": "full_access"},
        )
        for _attempt in range(3):
            turn = self.client.call("turns.begin", {"conversationId": CONVERSATION})
            self.turn = turn["turnId"]
            self.bound = {b["tool"]: name for name, b in turn["bindings"].items()}
            self.tools = {t["name"]: t for t in turn["tools"]}
            failures = turn["failures"]
            log("turn", self.turn, "tools", sorted(self.bound), "failures", failures)
            if not any(f["kind"] in ("auth_required", "auth_unavailable") for f in failures):
                return
            self.client.call("turns.end", {"turnId": self.turn})
            self.login()

    def login(self) -> None:
        self.person.authorized.clear()
        try:
            reply = self.client.call("servers.login", {"name": SERVER})
        except RpcError as exc:
            log("login refused:", exc)
            return
        log("login", reply)
        if reply.get("state") == "pending":
            self.person.browse(reply["authorizationUrl"])
            self.person.authorized.wait(LOGIN_BOUND)

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any] | None:
        name = self.bound.get(tool)
        if name is None or self.turn is None:
            log("not offered:", tool)
            return None
        params = {"turnId": self.turn, "name": name, "arguments": arguments or {}}
        result: dict[str, Any] = self.client.call("turns.callTool", params)
        log("called", tool, json.dumps(result)[:400])
        return result

    def end(self) -> None:
        if self.turn is not None:
            with contextlib.suppress(RpcError):
                self.client.call("turns.end", {"turnId": self.turn})


# --- what each scenario asks the model to do --------------------------------------------


def stub_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Minimal arguments satisfying an input schema's ``required`` list."""
    by_type = {
        "string": "x",
        "integer": 0,
        "number": 0,
        "boolean": False,
        "object": {},
        "array": [],
    }
    properties = schema.get("properties") or {}
    return {
        name: by_type.get((properties.get(name) or {}).get("type"), "x")
        for name in schema.get("required") or []
    }


def play(scenario: str, context: dict[str, Any], app: ChatApp) -> None:
    if scenario in ("tools_call", "request-metadata", "http-standard-headers"):
        app.call("add_numbers", {"a": 5, "b": 3})
    elif scenario == "sse-retry":
        app.call("test_reconnection")
    elif scenario == "elicitation-sep1034-client-defaults":
        app.call("test_client_elicitation_defaults")
    elif scenario == "json-schema-2020-12-preservation":
        focal = app.tools.get(app.bound.get("json_schema_2020_12_tool", ""))
        if focal is not None:
            app.call("json_schema_echo", {"schema": focal["inputSchema"]})
    elif scenario == "sep-2322-client-request-state":
        for tool in ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state"):
            app.call(tool)
        app.call("test_mrtr_no_result_type")
    elif scenario == "http-invalid-tool-headers":
        for tool, name in sorted(app.bound.items()):
            app.call(tool, stub_arguments(app.tools[name]["inputSchema"]))
    elif scenario == "http-custom-headers":
        for call in context.get("toolCalls", []):
            app.call(call["name"], call.get("arguments") or {})
    elif scenario.startswith("auth/") and app.bound:
        app.call(sorted(app.bound)[0])


def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context: dict[str, Any] = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    log("scenario", scenario, "url", url)
    document = settings_document(url, oauth_settings(scenario, context))
    with private_daemon(document) as socket:
        person = Person(socket)
        person.start()
        app = ChatApp(socket, person)
        try:
            app.begin()
            play(scenario, context, app)
            app.end()
        finally:
            person.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
