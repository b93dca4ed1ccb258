"""A stdio server's ``limits`` applied to its process, and a death on one of them recognised.

The limits are rlimits, set on the server's process with ``prlimit(2)`` as soon as it has
started (before meworkd sends it anything; what a program does in its first milliseconds is not
limited, and an interpreter's start-up takes longer than that). Its children inherit them. A
sandboxed server gets them from util-linux's ``prlimit`` command inside the sandbox, before
its program starts (:func:`prlimit_options`); bwrap then exits with 128 + the signal.

- ``memoryMiB`` → ``RLIMIT_DATA`` (private writable memory: heap and anonymous mappings), not
  ``RLIMIT_AS``: Node, Go and Java reserve gigabytes of address space they never use, which an
  address-space limit would refuse at start-up.
- ``processes`` → ``RLIMIT_NPROC``. Linux counts every process of the user against it, not the
  server's alone, and does not enforce it for root.
- ``openFiles`` → ``RLIMIT_NOFILE`` (at most the daemon's own hard limit).
- ``cpuSeconds`` → ``RLIMIT_CPU``: SIGXCPU at the limit, SIGKILL one second later.

No cgroup: the systemd user manager would give one (``systemd-run --user --scope``), but only
where a user manager runs (not in containers, not for a daemon started outside a login), at a
D-Bus round trip and a process per server start. The rlimits work everywhere, at one system
call each.

What is recognised as a death on a limit (:func:`limit_hit`), only for a limit that is set and
a process that exited by itself: SIGXCPU (``cpuSeconds``, certain); and from its last stderr
lines, the out-of-memory words of Python, Node, C++ and libc (``memoryMiB``), EMFILE / "Too many
open files" (``openFiles``), EAGAIN / "Resource temporarily unavailable" (``processes``). A
program that dies without saying why, or a SIGKILL (the hard CPU limit, or the kernel's OOM
killer), stays ``exited``.
"""

import re
import resource
import signal
from collections.abc import Sequence

from meworkd.settings import Limits

__all__ = ["apply_limits", "describe_hit", "limit_hit", "prlimit_options"]

_CPU_GRACE = 1  # seconds between SIGXCPU (the soft limit) and SIGKILL (the hard one)

_SAYS = {
    "memoryMiB": re.compile(
        r"MemoryError|out of memory|Cannot allocate memory|ENOMEM|bad_alloc", re.IGNORECASE
    ),
    "openFiles": re.compile(r"Too many open files|EMFILE"),
    "processes": re.compile(r"Resource temporarily unavailable|EAGAIN"),
}


def apply_limits(pid: int, limits: Limits) -> None:
    """Set ``limits`` on process ``pid`` (soft and hard). ``OSError`` passes."""
    for key, value in limits.items():
        if key == "memoryMiB":
            resource.prlimit(pid, resource.RLIMIT_DATA, (value * 1024 * 1024,) * 2)
        elif key == "processes":
            resource.prlimit(pid, resource.RLIMIT_NPROC, (value, value))
        elif key == "openFiles":
            hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)[1]
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (value, value))
        else:
            resource.prlimit(pid, resource.RLIMIT_CPU, (value, value + _CPU_GRACE))


def prlimit_options(limits: Limits) -> list[str]:
    """The same limits as options of util-linux's ``prlimit`` command (how a sandboxed server
    gets them: bwrap starts it before meworkd could set them on a pid it does not know)."""
    options = []
    for key, value in limits.items():
        if key == "memoryMiB":
            options.append(f"--data={value * 1024 * 1024}:{value * 1024 * 1024}")
        elif key == "processes":
            options.append(f"--nproc={value}:{value}")
        elif key == "openFiles":
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]  # (inherited: its ceiling)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            options.append(f"--nofile={value}:{value}")
        else:
            options.append(f"--cpu={value}:{value + _CPU_GRACE}")
    return options


def limit_hit(
    limits: Limits | None,
    returncode: int | None,
    stderr_tail: Sequence[str],
    *,
    sandboxed: bool = False,
) -> tuple[str, str] | None:
    """``(limit, what happened)`` when a server that exited with ``returncode`` died on one of
    its ``limits`` (see the module doc for what is recognised), else None. ``sandboxed``: bwrap
    exits with 128 + the signal that ended the server."""
    if limits is None or not returncode:
        return None
    values = dict(limits.items())
    by_signal = -returncode if returncode < 0 else None
    if sandboxed and returncode > 128:
        by_signal = returncode - 128
    if by_signal == signal.SIGXCPU and "cpuSeconds" in values:
        return "cpuSeconds", f"it used its {values['cpuSeconds']} s of CPU time (SIGXCPU)"
    if by_signal is not None:
        return None
    text = "\n".join(stderr_tail[-20:])
    for key, words in _SAYS.items():
        if key in values and (found := words.search(text)):
            return key, f"{_what(key, values[key])} ({found.group(0)})"
    return None


def _what(key: str, value: int) -> str:
    return {
        "memoryMiB": f"it ran out of its {value} MiB of memory",
        "openFiles": f"it ran out of its {value} open files",
        "processes": f"it could not start more processes (limit {value})",
    }[key]


def describe_hit(limit: str, what: str) -> str:
    """The failure's sentence for a death on ``limit``."""
    return f"the server was stopped by its limits.{limit}: {what}; raise the limit or leave it out"
