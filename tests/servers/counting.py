"""A tiny stdlib-only stdio MCP server that counts ``tools/list`` calls (handshake era only).

``python tests/servers/counting.py [--tools a,b] [--rendezvous FIFO --role r|w]``

* Every ``tools/list`` writes ``counting: tools/list #N`` to stderr before it answers.
* Tools: ``stats`` (the text ``tools/list calls: N``), ``echo {text}`` (with a title and
  annotations) and the names given with ``--tools`` (each answers its own name).
* ``--rendezvous FIFO --role r|w``: the ``initialize`` request is answered only after opening the
  named pipe for reading (``r``) or writing (``w``) returns, i.e. once another instance with the
  other role has opened it too. Two such servers both finish their start-up only if they are
  started concurrently; a sequential client would leave the first one waiting forever.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

PROTOCOL_VERSION = "2025-06-18"


def err(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def tool(name: str, description: str, props: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": props or {}},
    }


def main() -> None:
    p = argparse.ArgumentParser(prog="counting")
    p.add_argument("--tools", default="")
    p.add_argument("--rendezvous", default=None)
    p.add_argument("--role", choices=("r", "w"), default="r")
    args = p.parse_args()
    tools = [
        tool("stats", "How many tools/list calls this process answered"),
        {
            **tool("echo", "Echo the text back", {"text": {"type": "string"}}),
            "title": "Echo (counting)",
            "annotations": {"readOnlyHint": True, "openWorldHint": False},
        },
        *(tool(n, f"extra tool {n}") for n in args.tools.split(",") if n),
    ]
    lists = 0
    held: list[Any] = []  # keeps the rendezvous pipe open for the life of the process
    for raw in sys.stdin:
        if not raw.strip():
            continue
        msg = json.loads(raw)
        method, mid = msg.get("method"), msg.get("id")
        if mid is None:
            continue  # a notification
        if method == "initialize":
            if args.rendezvous:
                err(f"counting: waiting at the rendezvous ({args.role})")
                held.append(open(args.rendezvous, args.role))  # noqa: SIM115
                err("counting: rendezvous done")
            result: dict[str, Any] = {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "counting", "version": "1.0.0"},
            }
        elif method == "tools/list":
            lists += 1
            err(f"counting: tools/list #{lists}")
            result = {"tools": tools}
        elif method == "tools/call":
            params = msg.get("params") or {}
            name = params.get("name")
            arguments = params.get("arguments") or {}
            if name == "stats":
                text = f"tools/list calls: {lists}"
            elif name == "echo":
                text = str(arguments.get("text", ""))
            elif any(t["name"] == name for t in tools):
                text = str(name)
            else:
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": mid,
                        "error": {"code": -32602, "message": f"Unknown tool: {name}"},
                    }
                )
                continue
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        elif method == "ping":
            result = {}
        else:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": mid,
                    "error": {"code": -32601, "message": f"Method not found: {method}"},
                }
            )
            continue
        send({"jsonrpc": "2.0", "id": mid, "result": result})


if __name__ == "__main__":
    main()
