"""Where one server's OAuth state lives: a 0600 JSON file in the state directory, replaced whole.

Why a file and not the desktop keyring: meworkd is a per-user daemon that often runs without a
desktop session (systemd user unit, SSH), where no keyring is unlocked; one code path that always
works is safer than two. The file is the user's alone (0600, never through a link) like the
state database beside it, and is written before a new token is used, so a crash never loses a
rotated refresh token.
"""

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from meworkd.base.private import write_private

__all__ = ["AuthFile", "auth_file_for"]


class AuthFile:
    """One server's persisted state: ``tokens``, ``client`` (registration), ``as`` (endpoints)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            return {}  # unreadable or torn: a login starts over rather than the daemon failing
        return data if isinstance(data, dict) else {}

    def save(self, state: dict[str, Any]) -> None:
        """Atomically replace the file with ``state`` (0600)."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        write_private(tmp, json.dumps(state).encode())
        os.replace(tmp, self.path)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def auth_file_for(state_dir: Path, server_url: str) -> AuthFile:
    """The file for ``server_url``: keyed by the URL, so a renamed entry keeps its login and a
    changed URL (another resource) starts clean."""
    digest = hashlib.sha256(server_url.encode()).hexdigest()[:24]
    return AuthFile(state_dir / "oauth" / f"{digest}.json")
