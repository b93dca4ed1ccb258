"""Hand-written stdio MCP server (stdlib only) that shows what the host gave it.

``python tests/servers/envdump.py [--stderr-env NAME ...] [--exit-env NAME ...]
[--key-env NAME] [--tool-named-env NAME] [--lint-tools] [--no-schema-tool]``

Handshake era only (``initialize``; other unknown requests get ``-32601``). Tools:

* ``env``: the process environment, as a JSON object in the text of the result;
* ``initialize``: the ``params`` of the ``initialize`` request it received (clientInfo, ...);
* ``process``: ``{"cwd", "argv", "pid"}`` of this process;
* ``args``: the ``arguments`` of the call, exactly as received, as JSON text;
* ``stray {line}``: writes ``line`` on stdout (a line that is no JSON-RPC), then answers;
* ``hang_up``: closes stdout without answering and lingers (ignoring stdin EOF and SIGTERM),
  like a server whose connection broke while its process did not exit.

At start-up it writes ``envdump: started`` to stderr and, for each ``--stderr-env NAME``, the
line ``envdump: NAME=<value>`` (``<unset>`` when absent), so tests can check log redaction.
``--exit-env NAME`` writes ``envdump: exit NAME=<value>`` when stdin ends, just before it exits
(a server that says goodbye with its credentials).

``--key-env NAME`` adds a tool ``keys`` whose input schema has a property named by ``NAME``'s
value, and whose result's ``structuredContent`` has that value as a key.

``--tool-named-env NAME`` adds a tool named by ``NAME``'s value, with that value in its
description and as a property of its input schema; a call answers ``"named"``.

``--lint-tools`` adds tools a model provider would stumble on: one whose name is 60 characters
long, one whose ``inputSchema`` has a root-level ``anyOf``, and the tool ``env`` listed twice.
``--no-schema-tool`` adds a tool without any ``inputSchema`` (invalid per the MCP schema).
``--claims-prompts-resources`` declares the prompts and resources capabilities and still answers
their lists with ``-32601``; ``--resources-no-templates`` lists one resource ``mem://only`` and
answers ``resources/templates/list`` with ``-32601`` (as the official ``mcp-server-sqlite``,
built on mcp 1.x's lowlevel server, does).
``--task-tool`` adds a tool ``research`` with ``execution.taskSupport: "required"``.
"""

import argparse
import json
import os
import signal
import sys
import time

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
OBJECT = {"type": "object", "properties": {}}
LONG_NAME = "a_tool_name_that_is_much_longer_than_any_model_wants_to_see_"[:60]
TOOLS = [
    {"name": "env", "description": "the environment", "inputSchema": OBJECT},
    {"name": "initialize", "description": "the initialize params", "inputSchema": OBJECT},
    {"name": "process", "description": "cwd, argv and pid", "inputSchema": OBJECT},
    {"name": "hang_up", "description": "close stdout and linger", "inputSchema": OBJECT},
    {"name": "args", "description": "the arguments as received", "inputSchema": OBJECT},
    {"name": "stray", "description": "a non-JSON line on stdout", "inputSchema": OBJECT},
]
LINT_TOOLS = [
    {"name": LONG_NAME, "description": "long name", "inputSchema": OBJECT},
    {
        "name": "either",
        "description": "root-level anyOf",
        "inputSchema": {
            "type": "object",
            "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        },
    },
    {"name": "env", "description": "the environment, listed again", "inputSchema": OBJECT},
]
TASK_TOOL = {
    "name": "research",
    "description": "only as a task",
    "inputSchema": OBJECT,
    "execution": {"taskSupport": "required"},
}
NO_SCHEMA_TOOL = {"name": "schemaless", "description": "no inputSchema at all"}


def send(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def text(value: object) -> dict:
    return {"content": [{"type": "text", "text": json.dumps(value, sort_keys=True)}]}


def main() -> None:
    p = argparse.ArgumentParser(prog="envdump")
    p.add_argument("--stderr-env", action="append", default=[], metavar="NAME")
    p.add_argument("--lint-tools", action="store_true")
    p.add_argument("--no-schema-tool", action="store_true")
    p.add_argument("--exit-env", action="append", default=[], metavar="NAME")
    p.add_argument("--key-env", metavar="NAME")
    p.add_argument("--tool-named-env", metavar="NAME")
    p.add_argument("--claims-prompts-resources", action="store_true")
    p.add_argument("--task-tool", action="store_true")
    p.add_argument("--resources-no-templates", action="store_true")
    args = p.parse_args()
    key = os.environ.get(args.key_env or "", "")
    named = os.environ.get(args.tool_named_env or "", "")
    tools = list(TOOLS)
    if args.lint_tools:
        tools += LINT_TOOLS
    if args.no_schema_tool:
        tools.append(NO_SCHEMA_TOOL)
    if args.task_tool:
        tools.append(TASK_TOOL)
    capabilities: dict = {"tools": {}}
    if args.claims_prompts_resources or args.resources_no_templates:
        capabilities.update(prompts={}, resources={})
    if key:
        schema = {"type": "object", "properties": {key: {"type": "string"}}}
        tools.append({"name": "keys", "description": "a secret as a key", "inputSchema": schema})
    if named:
        schema = {"type": "object", "properties": {named: {"type": "string"}}}
        tools.append({"name": named, "description": f"named {named}", "inputSchema": schema})
    sys.stderr.write("envdump: started\n")
    for name in args.stderr_env:
        sys.stderr.write(f"envdump: {name}={os.environ.get(name, '<unset>')}\n")
    sys.stderr.flush()
    init_params: dict = {}
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
            init_params = params
            asked = params.get("protocolVersion")
            result: dict = {
                "protocolVersion": asked if asked in HANDSHAKE_VERSIONS else "2025-06-18",
                "capabilities": capabilities,
                "serverInfo": {"name": "envdump", "version": "0.2"},
            }
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            result = {"tools": tools}
        elif method == "resources/list" and args.resources_no_templates:
            result = {"resources": [{"uri": "mem://only", "name": "only"}]}
        elif method == "tools/call" and params.get("name") == "env":
            result = text(dict(os.environ))
        elif method == "tools/call" and params.get("name") == "initialize":
            result = text(init_params)
        elif method == "tools/call" and params.get("name") == "hang_up":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            sys.stdout.flush()
            os.close(1)
            while True:
                time.sleep(3600)
        elif method == "tools/call" and params.get("name") == "args":
            result = {"content": [{"type": "text", "text": json.dumps(params.get("arguments"))}]}
        elif method == "tools/call" and params.get("name") == "stray":
            sys.stdout.write(str((params.get("arguments") or {}).get("line")) + "\n")
            result = text("strayed")
        elif method == "tools/call" and params.get("name") == "keys":
            result = {**text("keys"), "structuredContent": {key: True}}
        elif method == "tools/call" and named and params.get("name") == named:
            result = text("named")
        elif method == "tools/call" and params.get("name") == "process":
            result = text({"cwd": os.getcwd(), "argv": sys.argv[1:], "pid": os.getpid()})
        else:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "error": {"code": -32601, "message": f"Method not found: {method}"},
                }
            )
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    for name in args.exit_env:
        sys.stderr.write(f"envdump: exit {name}={os.environ.get(name, '<unset>')}\n")
    sys.stderr.flush()


if __name__ == "__main__":
    main()
