"""The local boundary, as both sides check it: a private socket directory and a peer of our uid.

The daemon refuses to serve from a socket directory that fails :func:`private_dir_problem`, and
every client refuses to connect through one; once connected, a client sends nothing to a peer
whose uid (``SO_PEERCRED``) is not its own. Standard library only: ``meworkctl`` loads this.
"""

# _socket is the C module under socket: socket.socket derives from its socket class, so these
# checks take either; importing socket itself would slow meworkctl's start-up (bench B6).
import _socket as socket
import os
import stat
import sys
from pathlib import Path

__all__ = ["peer_problem", "peer_uid", "private_dir_problem", "socket_dir_problem"]

# struct ucred: int pid, uid, gid (read with int.from_bytes: struct is a shared library to load,
# ~1 ms of meworkctl's start-up on a busy machine, bench B6).
_UCRED_SIZE = 12


def private_dir_problem(st: os.stat_result, uid: int) -> str | None:
    """Why a directory with this ``lstat`` result is not private to ``uid``, or None.

    Private means: a real directory (not a symbolic link another user could point elsewhere),
    owned by ``uid``, mode 0700 (nobody else may plant or replace a socket in it).
    """
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if st.st_uid != uid:
        return f"belongs to uid {st.st_uid}, not to uid {uid}"
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        return f"is open to other users (mode {mode:04o}, not 0700)"
    return None


def socket_dir_problem(socket_path: Path, uid: int) -> str | None:
    """What is wrong with the directory holding ``socket_path``, or None.

    Raises ``FileNotFoundError`` (or ``NotADirectoryError``) when it does not exist: then no
    daemon listens there, which is not a matter of trust.
    """
    directory = socket_path.parent
    problem = private_dir_problem(os.lstat(directory), uid)
    return None if problem is None else f"its directory {directory} {problem}"


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of a connected Unix socket, or None."""
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED_SIZE)
    except OSError:
        return None
    return int.from_bytes(creds[4:8], sys.byteorder, signed=True)


def peer_problem(sock: socket.socket, uid: int) -> str | None:
    """Why the process serving ``sock`` is not to be trusted by ``uid``, or None."""
    peer = peer_uid(sock)
    if peer == uid:
        return None
    if peer is None:
        return "the uid of the process serving it cannot be read"
    return f"it is served by a process of uid {peer}, not of uid {uid}"
