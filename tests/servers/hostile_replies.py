"""Hand-written stdio MCP server (stdlib only) that precedes each tool reply with a hostile one.

``python tests/servers/hostile_replies.py``. ``initialize`` and ``tools/list`` (one tool ``t``)
are answered correctly. ``tools/call t {"kind": KIND}`` first writes one bad line for the
request, chosen by KIND, then the real reply (text ``ok KIND``). A host must skip the bad line
(reporting it) and answer the call with the real reply, whichever way it reads replies.

KIND: ``id-list`` (the id wrapped in a list), ``id-object``, ``id-huge`` (a 40-digit number),
``result-number`` (the right id, ``result`` not an object), ``error-string`` (the right id,
``error`` a string), ``non-utf8`` (the right id, bytes that are not UTF-8), ``none``.
"""

import json
import sys

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
TOOL = {
    "name": "t",
    "description": "answer after a hostile line",
    "inputSchema": {"type": "object", "properties": {"kind": {"type": "string"}}},
}


def write(data: bytes) -> None:
    sys.stdout.buffer.write(data + b"\n")
    sys.stdout.buffer.flush()


def send(message: dict) -> None:
    write(json.dumps(message).encode())


def hostile(kind: str, request_id: object) -> bytes | None:
    good_result = {"content": [{"type": "text", "text": "hostile"}]}
    if kind == "id-list":
        return json.dumps({"jsonrpc": "2.0", "id": [request_id], "result": good_result}).encode()
    if kind == "id-object":
        return json.dumps({"jsonrpc": "2.0", "id": {"x": 1}, "result": good_result}).encode()
    if kind == "id-huge":
        return json.dumps({"jsonrpc": "2.0", "id": 10**40, "result": good_result}).encode()
    if kind == "result-number":
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": 5}).encode()
    if kind == "error-string":
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": "boom"}).encode()
    if kind == "non-utf8":
        head = json.dumps({"jsonrpc": "2.0", "id": request_id})[:-1].encode()
        return head + b', "result": {"content": [{"type": "text", "text": "\xff\xfe"}]}}'
    return None


def main() -> None:
    for line in sys.stdin.buffer:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method, request_id = msg.get("method"), msg.get("id")
        if request_id is None:
            continue  # a notification
        if method == "initialize":
            asked = msg["params"].get("protocolVersion")
            version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
            result = {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile_replies", "version": "0.0.1"},
            }
        elif method == "tools/list":
            result = {"tools": [TOOL]}
        elif method == "tools/call":
            kind = str((msg["params"].get("arguments") or {}).get("kind", "none"))
            bad = hostile(kind, request_id)
            if bad is not None:
                write(bad)
            result = {"content": [{"type": "text", "text": f"ok {kind}"}]}
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no"}})
            continue
        send({"jsonrpc": "2.0", "id": request_id, "result": result})


if __name__ == "__main__":
    main()
