"""A stdio server run in a bubblewrap sandbox: the ``bwrap`` command line, and its failures.

bubblewrap (``bwrap``, the tool Flatpak uses) starts the server in fresh namespaces
(``--unshare-all``): a mount namespace holding only what is bound into it, its own process
namespace (``/proc`` shows the sandbox's processes only), no network unless the entry says
``"network": true`` (``--share-net``), the parent-death signal (``--die-with-parent``), and no
capabilities (``--cap-drop ALL``, which matters when meworkd runs as root).

What the server sees of the files: read-only, what a program needs to run (``/usr``, ``/etc``,
the ``/bin``, ``/sbin`` and ``/lib*`` of the system), its command and runtime (the directory
above the command's ``bin``, for the path given and the one it resolves to: a virtualenv and
its Python, a Node.js install), the files named in its arguments (a script), and its working
directory; then the entry's ``filesystem.read`` (read-only) and ``filesystem.write``
(writable). Paths that do not exist are left out. A private ``/tmp``; never the user's home,
``/tmp`` or ``/var/tmp`` unless listed (``$HOME`` is not there at all: a server that keeps a
cache in it needs that directory listed in ``write``). Everything else is read-only: a write
anywhere but ``write`` and the private ``/tmp`` fails.

No seccomp filter and no Landlock: the namespaces already give the file, network and process
boundaries, a seccomp filter would have to be compiled to BPF and handed to bwrap by descriptor
(a library or a hand-written filter), and bwrap 0.8 has no Landlock; neither is cheap here.
"""

import os
import shutil
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from meworkd.mcp.errors import CommandNotFound, SandboxUnavailable
from meworkd.mcp.limits import prlimit_options
from meworkd.settings import ServerConfig

__all__ = ["SYSTEM_READ", "SandboxView", "sandbox_argv", "sandbox_view", "unavailable"]

SYSTEM_READ = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
INSTALL = (
    "install the bubblewrap package (Debian and Ubuntu: apt install bubblewrap; Fedora: dnf "
    "install bubblewrap; Arch: pacman -S bubblewrap), or turn this entry's sandbox off"
)
NAMESPACES = (
    "unprivileged user namespaces are off here: check the sysctls kernel.unprivileged_userns_clone "
    "(Debian: 1) and user.max_user_namespaces (above 0), and on Ubuntu 23.10 and later "
    "kernel.apparmor_restrict_unprivileged_userns (0, or an AppArmor profile that allows bwrap); "
    "or turn this entry's sandbox off"
)


@dataclass(frozen=True, slots=True)
class SandboxView:
    """What a sandbox lets its server see (``read``, ``write``) and do (``network``)."""

    command: str  # the server's command, resolved on PATH
    read: list[str]
    write: list[str]
    network: bool

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def sandbox_view(config: ServerConfig, env: Mapping[str, str], cwd: str | None) -> SandboxView:
    """What the sandbox of ``config`` (already expanded) lets its server see and do.

    Raises:
        CommandNotFound: the server's command is not there.
    """
    assert config.sandbox is not None
    assert config.command is not None
    read: list[str] = [p for p in SYSTEM_READ if os.path.lexists(p)]
    command = _resolved(config.command, env)
    read += [p for p in _runtime(command, env) if p not in read]
    read += [a for a in config.args if a.startswith("/") and os.path.isfile(a)]
    if cwd and cwd not in read:
        read.append(cwd)
    read += [p for p in _paths(config.sandbox.filesystem.read) if p not in read]
    write = _paths(config.sandbox.filesystem.write)
    return SandboxView(command, read, write, config.sandbox.network)


def sandbox_argv(
    config: ServerConfig, env: Mapping[str, str], cwd: str | None, environ: Mapping[str, str]
) -> tuple[list[str], SandboxView]:
    """The ``bwrap`` command line that runs ``config``'s server (see the module doc), and what
    it lets the server see. ``env``: the server's environment; ``environ``: meworkd's, whose
    ``PATH`` finds ``bwrap``.

    Raises:
        SandboxUnavailable: ``bwrap`` is not installed.
        CommandNotFound: the server's command is not there.
    """
    bwrap = shutil.which("bwrap", path=environ.get("PATH", os.defpath))
    if bwrap is None:
        raise SandboxUnavailable(f"this server runs in a sandbox, but bwrap is missing: {INSTALL}")
    view = sandbox_view(config, env, cwd)
    argv = [bwrap, "--die-with-parent", "--unshare-all", "--cap-drop", "ALL"]
    if view.network:
        argv.append("--share-net")
    argv += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in view.read:
        if path in SYSTEM_READ and os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]  # (merged /usr: /bin -> usr/bin)
        else:
            argv += ["--ro-bind-try", path, path]
    for path in view.write:
        argv += ["--bind-try", path, path]
    # The sandbox's own root stays read-only: a write outside ``write`` fails rather than land
    # in a scratch copy (the private /tmp and $HOME are mounts of their own, still writable).
    argv += ["--remount-ro", "/"]
    if cwd:
        argv += ["--chdir", cwd]
    inner = [view.command, *config.args]
    if config.limits is not None:
        # Set inside: bwrap starts the server before meworkd could set them on its pid.
        prlimit = shutil.which("prlimit", path="/usr/bin:/bin")
        if prlimit is None:
            raise SandboxUnavailable(
                "this sandboxed server has limits, which need util-linux's prlimit command "
                "in /usr/bin: install util-linux, or leave the limits out"
            )
        inner = [prlimit, *prlimit_options(config.limits), "--", *inner]
    return [*argv, "--", *inner], view


def unavailable(returncode: int | None, stderr_tail: list[str]) -> str | None:
    """The sentence for a sandbox bwrap could not build (its own ``bwrap:`` line), else None."""
    if not returncode:
        return None
    said = [line for line in stderr_tail if line.startswith("bwrap: ")]
    if not said:
        return None
    text = said[-1]
    words = ("namespace", "uid map", "Operation not permitted", "Permission denied")
    hint = NAMESPACES if any(w in text for w in words) else "check the entry's sandbox paths"
    return f"the sandbox could not be set up ({text}): {hint}"


def _resolved(command: str, env: Mapping[str, str]) -> str:
    if "/" in command:
        return command
    path = env.get("PATH", os.defpath)
    found = shutil.which(command, path=path)
    if found is None:
        raise CommandNotFound(command, path)
    return found


def _runtime(command: str, env: Mapping[str, str]) -> list[str]:
    """The install a command belongs to: the directory above its ``bin`` (or its own directory;
    for an npm package, its ``node_modules``), for the path given and the one it resolves to;
    none under the system's directories, and never the home directory itself."""
    home = os.path.realpath(env.get("HOME") or "/nonexistent")
    found: list[str] = []
    for path in (os.path.abspath(command), os.path.realpath(command)):
        directory = os.path.dirname(path)
        if "/node_modules/" in path:  # an npm package: its dependencies sit beside it
            directory = path[: path.index("/node_modules/") + len("/node_modules")]
        if os.path.basename(directory) == "bin" and os.path.dirname(directory) not in ("/", home):
            directory = os.path.dirname(directory)
        if not _under(directory, SYSTEM_READ) and directory not in found:
            found.append(directory)
    return found


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == root or path.startswith(root + "/") for root in roots)


def _paths(paths: tuple[str, ...]) -> list[str]:
    return [os.path.expanduser(p) for p in paths if os.path.exists(os.path.expanduser(p))]
