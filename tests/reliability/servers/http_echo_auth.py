"""An HTTP "MCP server" (stdlib only) that refuses every request and quotes the credentials.

``python http_echo_auth.py --port 0`` prints ``READY <port>`` once listening. Every POST gets
``401 Unauthorized`` with the body ``invalid token: <the Authorization header received>`` - what
many real services do, and exactly what a host must not pass on to a model or a log unredacted.
"""

import argparse
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        body = f"invalid token: {self.headers.get('authorization', '<none>')}".encode()
        self.send_response(401)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(body)))
        self.send_header("www-authenticate", 'Bearer error="invalid_token"')
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST
    do_DELETE = do_POST

    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> None:
    p = argparse.ArgumentParser(prog="http_echo_auth")
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    sys.stdout.write(f"READY {server.server_address[1]}\n")
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
