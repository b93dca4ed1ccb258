"""Where the daemon's control socket lives by default (shared by the daemon and its clients)."""

import os
from pathlib import Path

__all__ = ["default_socket_path"]


def default_socket_path() -> Path:
    explicit = os.environ.get("MEWORK_SOCKET")
    if explicit:
        return Path(explicit)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return Path(runtime) / "mework" / "meworkd.sock"
    return Path(f"/tmp/mework-{os.getuid()}") / "meworkd.sock"
