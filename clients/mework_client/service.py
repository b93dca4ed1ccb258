"""Install meworkd's systemd user units (``meworkd.service`` and ``meworkd.socket``).

:func:`install` writes both units into the user's unit directory
(``$XDG_CONFIG_HOME/systemd/user``, by default ``~/.config/systemd/user``) with ``ExecStart=``
pointing at the installed ``meworkd`` executable; :func:`uninstall` removes them. Neither calls
``systemctl``: afterwards run ``systemctl --user daemon-reload`` and, to start meworkd on the first
connection, ``systemctl --user enable --now meworkd.socket``.

The unit texts are this package's data files ``units/meworkd.service`` and ``units/meworkd.socket``
(the one copy: the repository's ``systemd/`` folder links to them), read into :data:`SERVICE_UNIT`
and :data:`SOCKET_UNIT`. Standard library only: this module imports neither ``mcp`` nor
``meworkd``.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from importlib.resources import files
from pathlib import Path
from typing import Final

__all__ = [
    "DEFAULT_EXEC_START",
    "SERVICE_NAME",
    "SERVICE_UNIT",
    "SOCKET_NAME",
    "SOCKET_UNIT",
    "default_exec_path",
    "default_unit_dir",
    "install",
    "render_units",
    "uninstall",
]

SERVICE_NAME: Final = "meworkd.service"
SOCKET_NAME: Final = "meworkd.socket"

#: The executable in the shipped unit (where ``pip install --user`` puts it); :func:`install`
#: replaces it with the absolute path of the installed executable.
DEFAULT_EXEC_START: Final = "%h/.local/bin/meworkd"


def _unit_text(name: str) -> str:
    """A shipped unit file, read through importlib.resources (also from a wheel or a zip)."""
    return (files("mework_client") / "units" / name).read_text(encoding="utf-8")


SERVICE_UNIT: Final = _unit_text(SERVICE_NAME)
SOCKET_UNIT: Final = _unit_text(SOCKET_NAME)

_EXEC_START_LINE: Final = f"ExecStart={DEFAULT_EXEC_START} "


def default_unit_dir() -> Path:
    """``$XDG_CONFIG_HOME/systemd/user`` (``~/.config/systemd/user``)."""
    config = os.environ.get("XDG_CONFIG_HOME")
    # The XDG spec says relative values are invalid and must be ignored.
    base = Path(config) if config and os.path.isabs(config) else Path.home() / ".config"
    return base / "systemd" / "user"


def default_exec_path() -> Path:
    """The installed ``meworkd``: on ``PATH``, else next to the running Python (a venv's bin/)."""
    found = shutil.which("meworkd")
    if found:
        return Path(found).absolute()
    beside = Path(sys.executable).absolute().parent / "meworkd"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    raise FileNotFoundError(
        f"cannot find the meworkd executable on PATH or at {beside}; pass exec_path"
    )


def _quote_exec(path: str) -> str:
    """``path`` as the executable word of ``ExecStart=``: ``%`` escaped, quoted if needed.

    systemd refuses executable paths with quotes, backslashes or control characters, and does not
    expand ``$`` in the executable (so it is kept as it is).
    """
    bad = sorted({ch for ch in path if ch in "\"'\\" or ord(ch) < 0x20 or ord(ch) == 0x7F})
    if bad:
        raise ValueError(f"systemd cannot run an executable whose path has {bad!r}: {path!r}")
    escaped = path.replace("%", "%%")
    if re.fullmatch(r"[A-Za-z0-9_@%+=:,./$~-]+", escaped):
        return escaped
    return f'"{escaped}"'


def render_units(exec_path: str | os.PathLike[str]) -> dict[str, str]:
    """The unit texts (by file name) with ``ExecStart=`` running ``exec_path`` (made absolute)."""
    absolute = os.path.abspath(os.fspath(exec_path))
    lines = SERVICE_UNIT.splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if line.startswith(_EXEC_START_LINE)]
    if len(hits) != 1:  # pragma: no cover - guards the shipped unit file
        raise AssertionError("units/meworkd.service must have exactly one default ExecStart= line")
    i = hits[0]
    lines[i] = f"ExecStart={_quote_exec(absolute)} {lines[i][len(_EXEC_START_LINE) :]}"
    return {SERVICE_NAME: "".join(lines), SOCKET_NAME: SOCKET_UNIT}


def _write_atomically(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def install(
    unit_dir: Path | None = None, exec_path: str | os.PathLike[str] | None = None
) -> list[Path]:
    """Write ``meworkd.service`` and ``meworkd.socket`` into ``unit_dir``; return their paths.

    ``unit_dir`` defaults to :func:`default_unit_dir` and ``exec_path`` to
    :func:`default_exec_path` (which raises :class:`FileNotFoundError` if there is none).
    Existing files are replaced atomically. Run ``systemctl --user daemon-reload`` afterwards.
    """
    directory = default_unit_dir() if unit_dir is None else Path(unit_dir)
    executable = default_exec_path() if exec_path is None else exec_path
    units = render_units(executable)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in units.items():
        path = directory / name
        _write_atomically(path, text)
        written.append(path)
    return written


def uninstall(unit_dir: Path | None = None) -> list[Path]:
    """Remove the units from ``unit_dir`` (default :func:`default_unit_dir`); return the removed.

    Besides the two unit files, this removes the ``*.wants/`` and ``*.requires/`` symlinks that
    ``systemctl --user enable`` made to them (which would dangle otherwise). Missing files are
    not an error. Run ``systemctl --user disable --now meworkd.socket meworkd.service`` first
    to stop a running daemon, and ``systemctl --user daemon-reload`` afterwards.
    """
    directory = default_unit_dir() if unit_dir is None else Path(unit_dir)
    removed: list[Path] = []
    names = (SERVICE_NAME, SOCKET_NAME)
    targets = {os.path.abspath(directory / name) for name in names}
    for pattern in ("*.wants", "*.requires"):
        for link_dir in sorted(directory.glob(pattern)):
            for name in names:
                link = link_dir / name
                if not link.is_symlink():
                    continue
                target = os.readlink(link)
                if os.path.abspath(os.path.join(link_dir, target)) in targets:
                    link.unlink()
                    removed.append(link)
    for name in names:
        path = directory / name
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        removed.append(path)
    return removed
