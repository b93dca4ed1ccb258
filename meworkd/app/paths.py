"""Where meworkd keeps its files (XDG base directories); the only reader of ``XDG_*`` here."""

import os
from dataclasses import dataclass
from pathlib import Path

from mework_protocol.address import default_socket_path

__all__ = ["Paths", "default_settings_path", "default_state_dir"]


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    # The XDG spec says relative values are invalid and must be ignored.
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / fallback


def default_settings_path() -> Path:
    explicit = os.environ.get("MEWORK_SETTINGS")
    if explicit:
        return Path(explicit)
    return _xdg("XDG_CONFIG_HOME", ".config") / "mework" / "settings.json"


def default_state_dir() -> Path:
    return _xdg("XDG_STATE_HOME", ".local/state") / "mework"


@dataclass(frozen=True, slots=True)
class Paths:
    settings: Path
    socket: Path
    state_dir: Path

    @classmethod
    def resolve(
        cls, settings: Path | None = None, socket: Path | None = None, state_dir: Path | None = None
    ) -> "Paths":
        return cls(
            settings=(settings or default_settings_path()).expanduser().absolute(),
            socket=(socket or default_socket_path()).expanduser().absolute(),
            state_dir=(state_dir or default_state_dir()).expanduser().absolute(),
        )

    @property
    def lock(self) -> Path:
        return self.socket.with_name(self.socket.name + ".lock")

    @property
    def database(self) -> Path:
        return self.state_dir / "meworkd.sqlite3"

    @property
    def pid_ledger(self) -> Path:
        return self.state_dir / "children.json"
