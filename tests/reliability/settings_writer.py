"""A settings writer that dies: meworkd's own ``SettingsStore`` in a process of its own.

``python settings_writer.py PATH crash-before-rename``: open the store on ``PATH`` and write one
new server (``crash-<n>``, n = servers already there + 1); the ``before_rename`` hook ends the
process with ``os._exit(9)`` between the temp-file write and the rename, the way a crash (or a
SIGKILL) at that instant would.

``python settings_writer.py PATH loop``: write servers ``w1``, ``w2``, ... one per write, forever,
printing ``ack <n>`` after write n returned (it is on disk then); the test SIGKILLs it at a point
of its choosing.
"""

import os
import sys
from pathlib import Path
from typing import Any

import anyio

from meworkd.base.events import EventBus
from meworkd.base.log import configure_logging
from meworkd.settings.store import SettingsStore


def add(name: str) -> Any:
    def change(doc: dict[str, Any]) -> None:
        servers = doc.setdefault("assets", {}).setdefault("mcpServers", {})
        servers[name] = {"type": "stdio", "command": "true", "description": "x" * 512}

    return change


async def main(path: Path, mode: str) -> None:
    configure_logging("warning")  # structlog's default would print on stdout, the ack channel
    store = SettingsStore(path, EventBus())
    if mode == "crash-before-rename":
        store.before_rename = lambda _tmp: os._exit(9)
        store.open()  # a missing file is created through the same hook: it dies there
        n = len(store.document().get("assets", {}).get("mcpServers", {})) + 1
        await store.mutate(add(f"crash-{n}"))
        raise SystemExit("the hook did not run")
    store.open()
    n = 0
    while True:
        n += 1
        await store.mutate(add(f"w{n}"))
        sys.stdout.write(f"ack {n}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]), sys.argv[2])
