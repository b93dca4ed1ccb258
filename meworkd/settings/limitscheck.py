"""What is wrong with a server entry's ``limits`` object: each value a whole number in range.

Checked once when the settings are read (``parse_server``); the messages name the key, as
``s.limits.memoryMiB: expected a whole number from 16 to 4194304``.
"""

from meworkd.settings.model import LIMIT_RANGES, Limits

__all__ = ["limits_problems"]

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
