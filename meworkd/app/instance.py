"""One daemon per socket: a lock file beside the socket and a private runtime directory."""

import errno
import fcntl
import os
import stat
from pathlib import Path

__all__ = ["AlreadyRunning", "InstanceLock", "prepare_private_dir"]


class AlreadyRunning(Exception):
    def __init__(self, socket: Path) -> None:
        super().__init__(
            f"another meworkd is already serving {socket}; stop it first "
            "(meworkctl daemon shutdown, or systemctl --user stop meworkd)"
        )


def prepare_private_dir(directory: Path) -> None:
    """Create ``directory`` as 0700; refuse one owned by someone else."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = directory.stat()
    if st.st_uid != os.getuid():
        raise PermissionError(f"{directory} belongs to another user; refusing to use it")
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(directory, 0o700)


class InstanceLock:
    """An exclusive ``flock`` held for the daemon's lifetime (released by the kernel on crash)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self, socket: Path) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
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

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
