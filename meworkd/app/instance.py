"""One daemon per socket: a lock file beside the socket, in directories nobody else controls.

The socket's directory must be private (:func:`mework_protocol.boundary.private_dir_problem`,
the same check every client makes before it connects); the lock file is never reached through
a symbolic link. Anything else is :class:`UnsafePath`, and meworkd does not start.
"""

import errno
import fcntl
import os
import stat
from pathlib import Path

from mework_protocol.boundary import private_dir_problem

__all__ = [
    "AlreadyRunning",
    "InstanceLock",
    "UnsafePath",
    "prepare_socket_dir",
    "prepare_state_dir",
]


class AlreadyRunning(Exception):
    def __init__(self, socket: Path) -> None:
        super().__init__(
            f"another meworkd is already serving {socket}; stop it first "
            "(meworkctl shutdown, or systemctl --user stop meworkd)"
        )


class UnsafePath(Exception):
    """A directory or file meworkd would use is not under the user's sole control."""


def _make_dir(directory: Path) -> None:
    """Create ``directory`` 0700 (whatever the umask) unless it exists; parents as ``mkdir -p``."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        return
    os.chmod(directory, 0o700)


def prepare_socket_dir(directory: Path) -> None:
    """Create the socket's directory, or refuse one that is not private (a planted one)."""
    _make_dir(directory)
    problem = private_dir_problem(os.lstat(directory), os.getuid())
    if problem is not None:
        raise UnsafePath(
            f"the socket directory {directory} {problem}; meworkd serves only from a directory "
            f"of its own user with mode 0700 (remove it, or run: chmod 700 {directory})"
        )


def prepare_state_dir(directory: Path) -> None:
    """Create the state directory 0700, or refuse one that others own or can write.

    A symbolic link is fine here (the state may live on another disk); others' write access is
    not: the pid ledger in it names the processes meworkd stops.
    """
    _make_dir(directory)
    st = directory.stat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise UnsafePath(f"the state directory {directory} is not a directory of this user")
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022:
        raise UnsafePath(
            f"the state directory {directory} is writable by other users (mode {mode:04o}); "
            f"check what is in it, then run: chmod 700 {directory}"
        )
    if mode & 0o077:
        os.chmod(directory, 0o700)


class InstanceLock:
    """An exclusive ``flock`` held for the daemon's lifetime (released by the kernel on crash)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self, socket: Path) -> None:
        fd = self._open()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise AlreadyRunning(socket) from None
            raise
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def _open(self) -> int:
        # O_NOFOLLOW: a link planted in place of the lock would have us truncate its target.
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            fd = os.open(self.path, flags, 0o600)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            raise UnsafePath(
                f"the lock file {self.path} is a symbolic link; meworkd does not follow it "
                "(remove it)"
            ) from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            os.close(fd)
            raise UnsafePath(f"the lock file {self.path} is not a regular file of this user")
        return fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
