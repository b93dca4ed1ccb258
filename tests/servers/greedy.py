"""A stdio MCP server (stdlib only) that goes past one of its process's limits.

``python greedy.py --exceed {memory,files,processes,cpu} [--at {start,call}] [--uid N]``

``--at start`` (the default) goes past the limit before reading anything, so the server dies
during start-up; ``--at call`` serves (handshake era: ``initialize``, ``tools/list``) and goes
past it when its tool ``exceed`` is called. ``limits`` (a tool) answers with its own rlimits as
JSON text. What going past each limit is:

* ``memory``: 1 GiB in one allocation (Python raises ``MemoryError``);
* ``files``: ``/dev/null`` opened until the open fails (``Too many open files``);
* ``processes``: child processes forked until the fork fails (``Resource temporarily
  unavailable``); run as root, it first becomes uid ``--uid`` (Linux never enforces the process
  limit for root), its children waiting to be stopped with its group;
* ``cpu``: a busy loop, until the kernel stops it (SIGXCPU).

No core files: the core limit is set to 0 first. meworkd sets the limits just after the process
has started, so ``--at start`` first waits (up to 10 s) for its limit to change from what it
started with: the first moments of a process are not limited, and this fixture is about what
happens past a limit, not about that window.
"""

import argparse
import json
import os
import resource
import signal
import sys
import time

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
OBJ = {"type": "object", "properties": {}}
TOOLS = [{"name": "exceed", "inputSchema": OBJ}, {"name": "limits", "inputSchema": OBJ}]


def exceed(what: str, uid: int) -> None:
    if what == "memory":
        hog = bytearray(1024 * 1024 * 1024)
        del hog
    elif what == "files":
        held = []
        while True:
            held.append(open(os.devnull, "rb"))  # noqa: SIM115 - held open on purpose
    elif what == "processes":
        if os.getuid() == 0:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        while True:
            if os.fork() == 0:
                os.closerange(0, 3)  # (the pipes are the server's: its death must end them)
                signal.pause()
                os._exit(0)
    elif what == "cpu":
        n = 0
        while True:
            n += 1
    raise SystemExit(f"greedy: {what} did not run out")


RESOURCES = {
    "memory": resource.RLIMIT_DATA,
    "files": resource.RLIMIT_NOFILE,
    "processes": resource.RLIMIT_NPROC,
    "cpu": resource.RLIMIT_CPU,
}


def wait_for_limit(what: str, expected: int | None) -> None:
    """Until the limit is in force: its soft value is ``expected`` (the entry's, in the
    resource's own unit) or, not told, finite (memory, CPU time: unlimited by default). The
    daemon sets it just after the spawn, which may be before or after this process starts."""
    kind = RESOURCES[what]
    deadline = time.monotonic() + 10

    def waiting() -> bool:
        soft = resource.getrlimit(kind)[0]
        if expected is not None:
            return soft != expected
        return soft == resource.RLIM_INFINITY

    while waiting() and time.monotonic() < deadline:
        time.sleep(0.005)


def own_limits() -> str:
    names = ("RLIMIT_DATA", "RLIMIT_NPROC", "RLIMIT_NOFILE", "RLIMIT_CPU")
    return json.dumps({n: resource.getrlimit(getattr(resource, n)) for n in names})


def reply(message_id: object, result: dict) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}) + "\n")
    sys.stdout.flush()


def text(value: str) -> dict:
    return {"content": [{"type": "text", "text": value}]}


def serve(what: str, uid: int) -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, message_id = message.get("method"), message.get("id")
        if message_id is None:
            continue
        if method == "initialize":
            asked = message["params"].get("protocolVersion")
            version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
            info = {"name": "greedy", "version": "1"}
            reply(
                message_id,
                {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info},
            )
        elif method == "tools/list":
            reply(message_id, {"tools": TOOLS})
        elif method == "tools/call" and message["params"]["name"] == "limits":
            reply(message_id, text(own_limits()))
        elif method == "tools/call":
            exceed(what, uid)
        else:
            error = {"code": -32601, "message": "Method not found"}
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "error": error}))
            sys.stdout.write("\n")
            sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--exceed", choices=("memory", "files", "processes", "cpu"), required=True)
    parser.add_argument("--at", choices=("start", "call"), default="start")
    parser.add_argument("--uid", type=int, default=61_000)
    parser.add_argument("--expect", type=int, default=None, help="the soft limit to wait for")
    args = parser.parse_args()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if args.at == "start":
        wait_for_limit(args.exceed, args.expect)
        exceed(args.exceed, args.uid)
    serve(args.exceed, args.uid)


if __name__ == "__main__":
    main()
