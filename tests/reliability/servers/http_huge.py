"""A Streamable HTTP MCP server (stdlib only) whose tool replies never end soon enough.

``python http_huge.py --port P``: prints ``READY <port>`` once it listens on 127.0.0.1; the
endpoint is ``/mcp``. Handshake era only. Tools:

* ``huge {mib, sse}``: a proper tools/call reply whose text is ``mib`` MiB, as one JSON body or
  (``sse: true``) as one SSE event, written a MiB at a time without a length (the body ends when
  the connection closes), so a client that reads it whole holds all of it;
* ``echo {text}``: the text back (the server works for small replies).

``tools/list`` answers with those two; notifications get 202, GET 405.
"""

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

OBJ = {"type": "object", "properties": {}}
TOOLS = [{"name": "huge", "inputSchema": OBJ}, {"name": "echo", "inputSchema": OBJ}]
CHUNK = b"z" * (1024 * 1024)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        sys.stderr.write("http_huge: " + format % args + "\n")

    def do_GET(self) -> None:
        self._plain(405, b"")

    def do_DELETE(self) -> None:
        self._plain(200, b"")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        msg = json.loads(body)
        if "id" not in msg:
            self._plain(202, b"")
            return
        rid, method = msg["id"], msg.get("method")
        params = msg.get("params") or {}
        if method == "initialize":
            result: dict = {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "http_huge", "version": "0.1"},
            }
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call" and params.get("name") == "huge":
            args = params.get("arguments") or {}
            self._huge(rid, int(args.get("mib", 100)), bool(args.get("sse")))
            return
        elif method == "tools/call":
            text = str((params.get("arguments") or {}).get("text", ""))
            result = {"content": [{"type": "text", "text": text}]}
        else:
            result = {}
        reply = json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()
        self._plain(200, reply, "application/json")

    def _plain(self, status: int, body: bytes, kind: str = "text/plain") -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _huge(self, rid: object, mib: int, sse: bool) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream" if sse else "application/json")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        head = b'{"jsonrpc": "2.0", "id": %s, "result": ' % json.dumps(rid).encode()
        head += b'{"content": [{"type": "text", "text": "'
        try:
            self.wfile.write((b"event: message\ndata: " if sse else b"") + head)
            for _ in range(mib):
                self.wfile.write(CHUNK)
            self.wfile.write(b'"}]}}' + (b"\n\n" if sse else b""))
        except OSError:
            pass  # the client stopped reading: what a careful client does


def main() -> None:
    p = argparse.ArgumentParser(prog="http_huge")
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    sys.stdout.write(f"READY {server.server_address[1]}\n")
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
