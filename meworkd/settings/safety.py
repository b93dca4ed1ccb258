"""Whether the settings file may be trusted, judged as ssh's StrictModes judges its files.

The file names the commands meworkd runs (servers and hooks), so a file or directory that
another user owns or that group or others can write is refused: nothing from it is used.
A file others can only read is used, with a warning (it may hold tokens). The judgement is the
pure :func:`judge`; :func:`inspect` gathers the ``stat`` results it needs.
"""

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from meworkd.base.errors import InvalidSettings
from meworkd.base.log import get_logger

__all__ = [
    "Trust",
    "UntrustedSettings",
    "exposure",
    "inspect",
    "judge",
    "refuse_untrusted",
    "strict_modes",
]

log = get_logger("meworkd.settings")


def strict_modes(st: os.stat_result, uid: int) -> str | None:
    """Why a file or directory with this status could have been written by someone other than
    ``uid``, or None: owned by another user (root excepted), or writable by group or others."""
    if st.st_uid not in (uid, 0):
        return f"belongs to uid {st.st_uid}"
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022:
        return f"is writable by group or others (mode {mode:04o})"
    return None


def exposure(st: os.stat_result) -> str | None:
    """Why others may read a file with this status, or None."""
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o044:
        return f"is readable by group or others (mode {mode:04o})"
    return None


class UntrustedSettings(InvalidSettings):
    """The settings file is refused for who may write it, not for what it says."""


@dataclass(frozen=True, slots=True)
class Trust:
    """The verdict on the settings file: ``refusal`` (nothing from it is used) and warnings."""

    refusal: str | None = None
    warnings: tuple[str, ...] = ()


def judge(
    path: Path,
    file_st: os.stat_result,
    dirs: Sequence[tuple[Path, os.stat_result]],
    uid: int,
) -> Trust:
    """The verdict on the settings file ``path`` (``file_st``) held in ``dirs``, for ``uid``."""
    problems = [f"the settings file {path} {p}" for p in [strict_modes(file_st, uid)] if p]
    for directory, st in dirs:
        if problem := strict_modes(st, uid):
            problems.append(f"{directory}, the directory of the settings file, {problem}")
    exposed = exposure(file_st)
    warnings = (f"the settings file {path} {exposed}; it may hold tokens",) if exposed else ()
    if not problems:
        return Trust(warnings=warnings)
    refusal = (
        f"{'; '.join(problems)}: meworkd uses nothing from the file (no servers, no hooks) "
        "until only you can write it and its directory (chown them to yourself; "
        f"chmod go-w {path} {path.parent})"
    )
    return Trust(refusal=refusal, warnings=warnings)


def _directories(path: Path) -> list[Path]:
    """The directory of ``path`` and, for a symbolic link, the directory of what it points to."""
    dirs = [path.parent]
    target = Path(os.path.realpath(path)).parent
    if target != Path(os.path.realpath(path.parent)):
        dirs.append(target)
    return dirs


def inspect(path: Path, uid: int | None = None) -> Trust:
    """:func:`judge` the settings file as it is now; a file that cannot be examined is refused."""
    uid = os.getuid() if uid is None else uid
    try:
        file_st = os.stat(path)
        dirs = [(d, os.stat(d)) for d in _directories(path)]
    except OSError as exc:
        return Trust(refusal=f"cannot check who may write {path}: {exc.strerror or exc}")
    return judge(path, file_st, dirs, uid)


def refuse_untrusted(path: Path) -> None:
    """Raise :class:`UntrustedSettings` if the file is refused; log its warnings."""
    trust = inspect(path)
    for warning in trust.warnings:
        log.warning("settings.exposed", warning=warning)
    if trust.refusal is not None:
        raise UntrustedSettings(trust.refusal)
