"""A small local web host for one MCP Apps view (``meworkctl view``), standard library only.

Two HTTP servers on 127.0.0.1, each on an ephemeral port, so the view runs on an origin of its
own as the MCP Apps specification requires of web hosts: the *host* origin serves the page
(``host.html``, ``host.js``: the ``ui/*`` bridge), the view's data and the relay to meworkd; the
*sandbox* origin serves only the sandbox proxy (``sandbox.html``), under the CSP built from the
view's declaration (a header: the view cannot change it). Every request must carry its origin's
random token and the exact ``Host``; a POST must come from the host page's own ``Origin``. The
relay fills in the call, its turn and its server itself, so a page can only speak for its view.
"""

from __future__ import annotations

import hmac
import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from mework_client.sync import Client, RpcError
from mework_client.viewhost.csp import view_csp

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["BRIDGE_METHODS", "ViewHost"]

PAGES = Path(__file__).resolve().parent
MAX_BODY = 8 * 1024 * 1024  # one relayed request from the page
# The view's requests the page relays, as the apps.* method each becomes.
BRIDGE_METHODS = {
    "tools/call": "apps.callTool",
    "resources/read": "apps.readResource",
    "ui/message": "apps.message",
    "ui/update-model-context": "apps.updateContext",
    "ui/open-link": "apps.openLink",
    "approve": "approvals.respond",
}
APPROVAL_TOPICS = ["approval.requested", "approval.resolved"]
_HOST_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "connect-src 'self'; img-src 'self' data:; frame-src {sandbox}; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: ViewHost, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.host = host

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class ViewHost:
    """Serves the view of one call until :meth:`close`.

    Raises (at construction): what ``apps.view`` raises (``RpcError``), or ``DaemonNotRunning``.
    """

    def __init__(self, socket: Path | str | None, call_id: str, turn_id: str | None = None) -> None:
        self.socket = socket
        params = {"callId": call_id} | ({"turnId": turn_id} if turn_id else {})
        with Client(socket) as client:
            self.view: dict[str, Any] = client.call("apps.view", params)
        self.token = secrets.token_urlsafe(24)
        self.sandbox_token = secrets.token_urlsafe(24)
        self.approvals: set[str] = set()  # approval ids this page was shown (it may answer those)
        self._host = _Server(self, _HostHandler)
        self._sandbox = _Server(self, _SandboxHandler)
        self._threads = [
            threading.Thread(target=s.serve_forever, daemon=True) for s in self.servers
        ]

    @property
    def servers(self) -> tuple[_Server, _Server]:
        return self._host, self._sandbox

    @property
    def url(self) -> str:
        return f"{self._host.origin}/?t={self.token}"

    @property
    def sandbox_url(self) -> str:
        return f"{self._sandbox.origin}/sandbox?t={self.sandbox_token}"

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def close(self) -> None:
        for server in self.servers:
            server.shutdown()
            server.server_close()

    def page_view(self) -> dict[str, Any]:
        """What the page gets (``/view.json``): the view, and where its sandbox is."""
        return {
            **self.view,
            "sandboxUrl": self.sandbox_url,
            "sandboxOrigin": self._sandbox.origin,
        }

    def relay(self, method: str, params: Any) -> dict[str, Any]:
        """One of the view's requests (or the page's answer to an approval), to meworkd."""
        target = BRIDGE_METHODS.get(method)
        if target is None or not isinstance(params, dict):
            return {"error": {"code": -32601, "message": f"not relayed: {method}"}}
        if target == "approvals.respond":
            if params.get("approvalId") not in self.approvals:
                return {"error": {"code": -32602, "message": "not an approval of this view"}}
            sent = {k: params[k] for k in ("approvalId", "decision") if k in params}
        else:
            sent = self._for_view(method, params)
        try:
            with Client(self.socket) as client:
                return {"result": client.call(target, sent)}
        except RpcError as exc:
            return {"error": {"code": exc.code, "message": exc.message, "data": exc.data}}
        except OSError:
            return {"error": {"code": -32603, "message": "meworkd is not reachable"}}

    def _for_view(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        view = self.view
        sent: dict[str, Any] = {"callId": view["callId"], "turnId": view["turnId"]}
        if method == "tools/call":
            sent |= {"server": view["server"], "name": params.get("name", "")}
            sent["arguments"] = params.get("arguments") or {}
        elif method == "resources/read":
            sent["uri"] = params.get("uri", "")
        elif method == "ui/message":
            sent |= {"role": params.get("role", "user"), "content": params.get("content")}
        elif method == "ui/update-model-context":
            sent |= {k: params[k] for k in ("content", "structuredContent") if k in params}
        else:
            sent["url"] = params.get("url", "")
        return sent


def _first(values: list[str] | None) -> str | None:
    return values[0] if values else None


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    token_attribute = "token"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the page is the user's; its requests are not worth a line on the terminal

    def _refused(self, status: int, why: str) -> None:
        self._send(status, "text/plain; charset=utf-8", why.encode())

    def _send(self, status: int, kind: str, body: bytes, headers: dict[str, str] = {}) -> None:  # noqa: B006
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _allowed(self, token: str | None) -> bool:
        """The exact Host, and this origin's token (compared in constant time)."""
        expected_host = self.server.origin.removeprefix("http://")
        if self.headers.get("Host") != expected_host:
            self._refused(403, "wrong Host")
            return False
        wanted = getattr(self.server.host, self.token_attribute)
        if token is None or not hmac.compare_digest(token.encode(), wanted.encode()):
            self._refused(403, "missing or wrong token")
            return False
        return True

    def _query(self) -> tuple[str, dict[str, list[str]]]:
        parts = urlsplit(self.path)
        return parts.path, parse_qs(parts.query)


class _HostHandler(_Handler):
    def do_GET(self) -> None:
        path, query = self._query()
        if not self._allowed(_first(query.get("t"))):
            return
        host = self.server.host
        csp = _HOST_CSP.format(sandbox=host.servers[1].origin)
        if path == "/":
            page = (
                (PAGES / "host.html").read_text(encoding="utf-8").replace("{{TOKEN}}", host.token)
            )
            headers = {"Content-Security-Policy": csp}
            self._send(200, "text/html; charset=utf-8", page.encode(), headers)
        elif path == "/host.js":
            self._send(200, "text/javascript; charset=utf-8", (PAGES / "host.js").read_bytes())
        elif path == "/view.json":
            body = json.dumps(host.page_view()).encode()
            self._send(200, "application/json", body)
        elif path == "/events":
            self._events()
        else:
            self._refused(404, "not found")

    def do_POST(self) -> None:
        path, _query = self._query()
        if self.headers.get("Origin") != self.server.origin:
            self._refused(403, "wrong Origin")
            return
        if not self._allowed(self.headers.get("X-Mework-Token")):
            return
        declared = self.headers.get("Content-Length", "")
        length = int(declared) if declared.isdigit() else 0
        if path != "/bridge" or not 0 < length <= MAX_BODY:
            self._refused(400, "a bridge request is a POST to /bridge with a JSON body")
            return
        try:
            request = json.loads(self.rfile.read(length))
        except ValueError:
            request = None
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            self._send(400, "application/json", b'{"error":{"code":-32600,"message":"bad"}}')
            return
        reply = self.server.host.relay(request["method"], request.get("params") or {})
        self._send(200, "application/json", json.dumps(reply).encode())

    def _events(self) -> None:
        """The approvals of the view's conversation, as server-sent events, until either
        side goes away: a call the view made that needs a person is answered in the page."""
        host = self.server.host
        conversation = host.view["conversationId"]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        try:
            self.wfile.write(b": ready\n\n")
            self.wfile.flush()
            with Client(host.socket) as client:
                for topic, data in client.events(APPROVAL_TOPICS):
                    if topic == "approval.requested":
                        if data.get("conversationId") != conversation:
                            continue
                        host.approvals.add(str(data.get("approvalId")))
                    elif str(data.get("approvalId")) not in host.approvals:
                        continue
                    line = json.dumps({"topic": topic, "data": data})
                    self.wfile.write(f"data: {line}\n\n".encode())
                    self.wfile.flush()
        except (OSError, ConnectionError):
            return  # the page went away, or meworkd did


class _SandboxHandler(_Handler):
    token_attribute = "sandbox_token"

    def do_GET(self) -> None:
        path, query = self._query()
        if not self._allowed(_first(query.get("t"))):
            return
        if path != "/sandbox":
            self._refused(404, "not found")
            return
        host = self.server.host
        page = (PAGES / "sandbox.html").read_text(encoding="utf-8")
        page = page.replace("{{HOST_ORIGIN}}", host.servers[0].origin)
        headers = {"Content-Security-Policy": view_csp(host.view.get("csp"))}
        self._send(200, "text/html; charset=utf-8", page.encode(), headers)
