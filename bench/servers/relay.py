"""B1f, the floor: the least a host process can do per call with the SDK in the loop.

``python relay.py SOCKET PYTHON SERVER``: a Unix-socket JSON-RPC relay whose only work per
request is ``ClientSession.send_request(tools/call)`` on one pooled stdio session to SERVER (the
SDK's own ``stdio_client``), with the reply dumped back. No policy, audit, naming or framework.
Measured with the same client library as B1, it shows what part of B1's ratio any separate
host process pays for the extra hop and the SDK client, before doing anything of its own.
"""

import json
import sys

import anyio
import mcp_types as types
from anyio.abc import SocketStream
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(sock_path: str, python: str, server: str) -> None:
    params = StdioServerParameters(command=python, args=[server])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()

        async def handle(stream: SocketStream) -> None:
            async def one(line: bytes) -> None:
                request = json.loads(line)
                result = await session.send_request(
                    types.CallToolRequest(
                        params=types.CallToolRequestParams(
                            name="echo", arguments=request["params"]["arguments"]
                        )
                    ),
                    types.CallToolResult,
                )
                reply = {
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "result": result.model_dump(by_alias=True, mode="json", exclude_none=True),
                }
                await stream.send(json.dumps(reply).encode() + b"\n")

            buffer = b""
            async with stream, anyio.create_task_group() as tg:
                async for chunk in stream:
                    buffer += chunk
                    while b"\n" in buffer:
                        line, buffer = buffer.split(b"\n", 1)
                        tg.start_soon(one, line)

        listener = await anyio.create_unix_listener(sock_path)
        print("ready", flush=True)
        await listener.serve(handle)


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])
