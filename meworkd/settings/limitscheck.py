"""What is wrong with a server entry's ``limits`` and ``sandbox`` objects (what contains it).

Checked once when the settings are read (``parse_server``); the messages name the key, as
``s.limits.memoryMiB: expected a whole number from 16 to 4194304``.
"""

from meworkd.settings.model import LIMIT_RANGES, Limits, Sandbox

__all__ = ["limits_problems", "sandbox_problems"]

_UNITS = {
    "memoryMiB": "MiB of memory",
    "processes": "processes",
    "openFiles": "open files",
    "cpuSeconds": "seconds of CPU time",
}


def limits_problems(name: str, kind: str, limits: Limits | None) -> list[str]:
    """What is wrong with an entry's ``limits`` field."""
    where = f"{name}.limits"
    if limits is None:
        return []
    if kind != "stdio":
        return [f"{where}: only a stdio server's process has limits (this one is remote)"]
    problems = []
    for key, value in limits.items():
        low, high = LIMIT_RANGES[key]
        if not low <= value <= high:
            problems.append(
                f"{where}.{key}: expected a whole number from {low} to {high} ({_UNITS[key]})"
            )
    if not limits.items():
        problems.append(f"{where}: empty; give one of {', '.join(LIMIT_RANGES)}, or leave it out")
    return problems


def sandbox_problems(name: str, kind: str, sandbox: Sandbox | None) -> list[str]:
    """What is wrong with an entry's ``sandbox`` field: stdio only, paths absolute."""
    where = f"{name}.sandbox"
    if sandbox is None:
        return []
    if kind != "stdio":
        return [f"{where}: only a stdio server runs in a sandbox (this one is remote)"]
    problems = []
    for key, paths in (("read", sandbox.filesystem.read), ("write", sandbox.filesystem.write)):
        for i, path in enumerate(paths):
            if not path.startswith(("/", "~", "${")):
                problems.append(
                    f"{where}.filesystem.{key}[{i}]: expected an absolute path "
                    f"(starting with /, ~ or ${{VAR}}), got {path!r}"
                )
    return problems
