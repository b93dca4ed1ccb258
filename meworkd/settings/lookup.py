"""Whether a stdio entry's command can be found the way meworkd will start it, said when added.

A command that is not on the daemon's PATH fails only when a conversation first uses the
server; ``servers.add`` reports it at once instead. A typo is the likely cause on a desktop,
the short PATH of a systemd user service the likely one otherwise, so the message says both,
in that order. Commands that depend on what only the start knows (``${VAR}``, an envFile that
may set PATH) are not judged.
"""

import os
import shutil
from collections.abc import Mapping

from meworkd.settings.expand import UnsetVariable, expand
from meworkd.settings.model import ServerConfig

__all__ = ["command_warnings"]


def command_warnings(config: ServerConfig, environ: Mapping[str, str]) -> list[str]:
    """What will keep this entry's command from starting (empty: nothing known to)."""
    command = config.command
    if config.type != "stdio" or not command or "${" in command or config.env_file:
        return []
    try:
        path = expand(config.env["PATH"], environ) if "PATH" in config.env else None
    except UnsetVariable:
        return []
    if path is None:
        path = environ.get("PATH", os.defpath)
    if "/" in command:
        return _path_warnings(command, config.cwd)
    if shutil.which(command, path=path) is not None:
        return []
    where = "the entry's env" if "PATH" in config.env else "meworkd's environment"
    return [
        f"command {command!r} is not on meworkd's PATH ({where}: PATH={path}): is it a typo? "
        "If it is installed elsewhere, give its full path (as `command -v "
        f"{command}` prints it), or set PATH in the entry's env: the PATH of a systemd user "
        "service is short"
    ]


def _path_warnings(command: str, cwd: str | None) -> list[str]:
    folder = os.path.expanduser(cwd) if cwd and "${" not in cwd else None
    full = os.path.join(folder, command) if folder else command
    full = os.path.expanduser(full)
    if not os.path.exists(full):
        return [f"command {command!r} does not exist: is it a typo?"]
    if os.path.isdir(full) or not os.access(full, os.X_OK):
        return [f"command {command!r} is not an executable file"]
    return []
