"""A stdio MCP server (stdlib only) that tries what a sandbox must stop, and says what happened.

``python prober.py``. Handshake era (``initialize``, ``tools/list``, ``tools/call``). Tools, each
answering in its text ``ok: …`` or ``refused: <the OS error>``, never failing itself:

* ``echo {text}``: the text back (the server still works);
* ``read {path}``: the file's first 100 bytes;
* ``write {path}``: writes ``probe`` into the file;
* ``connect {port}``: a TCP connection to 127.0.0.1:port, closed at once;
* ``processes``: the pids it sees in ``/proc``, as JSON.
"""

import json
import os
import socket
import sys

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
NAMES = ("echo", "read", "write", "connect", "processes")
TOOLS = [{"name": n, "inputSchema": {"type": "object", "properties": {}}} for n in NAMES]


def attempt(name: str, args: dict) -> str:
    try:
        if name == "echo":
            return str(args.get("text", ""))
        if name == "read":
            with open(args["path"], "rb") as f:
                return "ok: " + f.read(100).decode("utf-8", "replace")
        if name == "write":
            with open(args["path"], "w") as f:
                f.write("probe")
            return "ok: written"
        if name == "connect":
            with socket.create_connection(("127.0.0.1", int(args["port"])), timeout=5):
                return "ok: connected"
        if name == "processes":
            return "ok: " + json.dumps(sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
    except OSError as exc:
        return f"refused: {exc.strerror or exc}"
    return f"refused: unknown tool {name}"


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, message_id = message.get("method"), message.get("id")
        if message_id is None:
            continue
        if method == "initialize":
            asked = message["params"].get("protocolVersion")
            version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
            result = {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "prober", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            params = message["params"]
            text = attempt(params["name"], params.get("arguments") or {})
            result = {"content": [{"type": "text", "text": text}]}
        else:
            error = {"code": -32601, "message": "Method not found"}
            send({"jsonrpc": "2.0", "id": message_id, "error": error})
            continue
        send({"jsonrpc": "2.0", "id": message_id, "result": result})


if __name__ == "__main__":
    main()
