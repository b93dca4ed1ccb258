"""The peer side of B1 and B3: ``mcp-use`` (PyPI), driven by ``bench.py`` over a pipe.

Runs in ``bench/.venv-mcpuse`` (mcp-use pins ``mcp<2``, which cannot share a venv with meworkd's
``mcp>=2.3``). One JSON object per line on stdin, one reply per line on the protocol fd:

* ``{"cmd": "b1_open", "command": ..., "args": [...]}`` → a session to the echo server, warmed.
* ``{"cmd": "b1_block", "n": N}`` → ``{"lat": [seconds, ...]}`` for N sequential echo calls.
* ``{"cmd": "b3", "servers": {name: {command, args}}, "mode": "gather"|"sequential"}`` →
  ``{"s": seconds, "tools": count}``: open every session (``create_session`` for all at once with
  asyncio.gather, or mcp-use's own ``create_all_sessions``, which goes one by one); mcp-use's
  ``initialize`` also lists the tools. The sessions are closed afterwards, outside the timing.
* ``{"cmd": "quit"}``.

The servers run on the main venv's Python (they are mcp 2.3 servers); mcp-use's client is mcp 1.x.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

os.environ.setdefault("MCP_USE_ANONYMIZED_TELEMETRY", "false")

# Protocol replies go to a private copy of stdout; anything a library prints goes to stderr.
_proto = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)

import mcp_use  # noqa: E402  (after the fd shuffle and the telemetry switch)
from mcp_use import MCPClient  # noqa: E402

mcp_use.Logger.configure(level="WARNING", log_to_console=False)


def reply(obj: object) -> None:
    _proto.write(json.dumps(obj) + "\n")


async def main() -> None:
    loop = asyncio.get_running_loop()
    b1_client: MCPClient | None = None
    b1_session = None
    reply({"ready": True, "version": getattr(mcp_use, "__version__", "")})
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        req = json.loads(line)
        cmd = req["cmd"]
        if cmd == "b1_open":
            b1_client = MCPClient.from_dict(
                {"mcpServers": {"echo": {"command": req["command"], "args": req["args"]}}}
            )
            b1_session = await b1_client.create_session("echo")
            for _ in range(200):
                await b1_session.call_tool("echo", {"text": "x"})
            reply({"ok": True})
        elif cmd == "b1_block":
            assert b1_session is not None
            lat = []
            for _ in range(int(req["n"])):
                t = time.perf_counter()
                r = await b1_session.call_tool("echo", {"text": "x"})
                lat.append(time.perf_counter() - t)
                assert r.content[0].text == "x"
            reply({"lat": lat})
        elif cmd == "b3":
            client = MCPClient.from_dict({"mcpServers": req["servers"]})
            names = list(req["servers"])
            t = time.perf_counter()
            if req["mode"] == "gather":
                sessions = await asyncio.gather(*(client.create_session(n) for n in names))
            else:
                sessions = list((await client.create_all_sessions()).values())
            s = time.perf_counter() - t
            tools = sum(len(getattr(x.connector, "_tools", [])) for x in sessions if x)
            await client.close_all_sessions()
            reply({"s": s, "tools": tools})
        elif cmd == "quit":
            break
    if b1_client is not None:
        await b1_client.close_all_sessions()
    reply({"bye": True})


if __name__ == "__main__":
    asyncio.run(main())
