"""Hand-written stdio "MCP server" (stdlib only) that misbehaves on purpose.

``python tests/servers/raw_bad.py --mode MODE``. ``initialize``, ``ping`` and ``tools/list`` (one
tool ``t``) are always answered correctly; notifications are ignored. MODE decides the rest:

* ``legacy`` (default): a correct minimal handshake-era server; ``tools/call t`` echoes the
  arguments as JSON text. Unknown requests (such as the 2026-07-28 ``server/discover`` probe) are
  silently ignored, like some hand-rolled servers do.
* ``wrong-id``: ``tools/call`` is answered with a response whose id is not the request's id.
* ``invalid-json``: ``tools/call`` is answered with garbage lines that are not JSON.
* ``silent``: unknown requests are ignored and ``tools/call`` is never answered.
* ``stop-reading``: on the first ``tools/call`` the server closes its stdin, answers, and
  lingers with stdout still open (a server that stopped reading, not one that exited).

In ``wrong-id`` and ``invalid-json`` mode unknown requests get a ``-32601`` error.
"""

import argparse
import json
import os
import sys
import time

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
TOOL = {
    "name": "t",
    "description": "echo the arguments",
    "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}},
}


def send(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def main() -> None:
    p = argparse.ArgumentParser(prog="raw_bad")
    p.add_argument(
        "--mode",
        choices=["legacy", "wrong-id", "invalid-json", "silent", "stop-reading"],
        default="legacy",
    )
    mode = p.parse_args().mode
    sys.stderr.write(f"raw_bad: mode {mode}\n")
    sys.stderr.flush()
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict) or "method" not in msg or "id" not in msg:
            continue  # notifications and responses
        method, rid = msg["method"], msg["id"]
        params = msg.get("params") or {}
        if method == "initialize":
            asked = params.get("protocolVersion")
            result = {
                "protocolVersion": asked if asked in HANDSHAKE_VERSIONS else "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw_bad", "version": "0.1"},
            }
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            result = {"tools": [TOOL]}
        elif method == "tools/call":
            if mode == "silent":
                continue
            if mode == "invalid-json":
                sys.stdout.write('{"jsonrpc": "2.0", "id": \n')
                sys.stdout.write("this is not json at all }}}\n")
                sys.stdout.flush()
                continue
            if mode == "wrong-id":
                rid = rid + 1_000_000 if isinstance(rid, int) else f"wrong-{rid}"
            args = params.get("arguments") or {}
            result = {"content": [{"type": "text", "text": json.dumps(args, sort_keys=True)}]}
        else:
            if mode in ("legacy", "silent", "stop-reading"):
                continue
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "error": {"code": -32601, "message": f"Method not found: {method}"},
                }
            )
            continue
        if mode == "stop-reading" and method == "tools/call":
            # Closed before the answer goes out, so the next request surely finds it closed.
            sys.stdin.close()
            os.close(0)
            send({"jsonrpc": "2.0", "id": rid, "result": result})
            while True:
                time.sleep(60)  # stdout stays open; SIGTERM ends it
        send({"jsonrpc": "2.0", "id": rid, "result": result})


if __name__ == "__main__":
    main()
