"""A stdio MCP server that speaks only the 2026-07-28 era (a stdlib wrapper around a fixture).

``python tests/servers/modern_only.py [--refuse-with CODE] [--server SCRIPT] [its options]``
runs ``SCRIPT`` (default ``kitchen.py``) as a child and relays every line both ways, except
``initialize`` requests: those are answered here with ``-32601`` (method not found), as a server
that only knows ``server/discover`` would, or with the JSON-RPC error ``CODE`` (``-32022``,
unsupported protocol version, names the versions it speaks).
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


def refusal(code: int) -> dict[str, object]:
    if code == -32022:
        data = {"supported": ["2026-07-28"], "requested": "2025-11-25"}
        return {"code": code, "message": "Unsupported protocol version", "data": data}
    return {"code": code, "message": "Method not found: initialize"}


def main() -> None:
    server, args = str(KITCHEN), sys.argv[1:]
    code = -32601
    if args[:1] == ["--refuse-with"]:
        code, args = int(args[1]), args[2:]
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
            error = refusal(code)
            write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": error}).encode() + b"\n")
            continue
        child.stdin.write(line)
        child.stdin.flush()
    child.stdin.close()
    child.wait()


if __name__ == "__main__":
    main()
