"""A stdio MCP server that speaks only the 2026-07-28 era (a stdlib wrapper around a fixture).

``python tests/servers/modern_only.py [--server SCRIPT] [its options]`` runs ``SCRIPT``
(default ``kitchen.py``) as a child and relays every line both ways, except ``initialize``
requests: those are answered here with ``-32601`` (method not found), as a server that only
knows ``server/discover`` would.
"""

import json
import subprocess
import sys
import threading
from pathlib import Path

KITCHEN = Path(__file__).resolve().parent / "kitchen.py"
_out = threading.Lock()


def write(line: bytes) -> None:
    with _out:
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()


def relay(child: subprocess.Popen[bytes]) -> None:
    assert child.stdout is not None
    for line in iter(child.stdout.readline, b""):
        write(line)


def main() -> None:
    server, args = str(KITCHEN), sys.argv[1:]
    if args[:1] == ["--server"]:
        server, args = args[1], args[2:]
    child = subprocess.Popen(
        [sys.executable, server, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert child.stdin is not None
    threading.Thread(target=relay, args=(child,), daemon=True).start()
    for line in sys.stdin.buffer:
        try:
            msg = json.loads(line)
        except ValueError:
            msg = None
        if isinstance(msg, dict) and msg.get("method") == "initialize" and "id" in msg:
            error = {"code": -32601, "message": "Method not found: initialize"}
            write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": error}).encode() + b"\n")
            continue
        child.stdin.write(line)
        child.stdin.flush()
    child.stdin.close()
    child.wait()


if __name__ == "__main__":
    main()
