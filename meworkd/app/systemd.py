"""systemd integration without libsystemd: ``sd_notify`` readiness and socket activation.

Readiness (``Type=notify``): :func:`notify` sends one datagram of newline-joined ``KEY=VALUE``
lines to ``$NOTIFY_SOCKET`` (a filesystem path, or ``@name`` for the abstract namespace). It never
raises and logs nothing; it returns whether the datagram was sent, and is a no-op returning
``False`` when the daemon is not run by systemd. :class:`Notifier` adds ``ready()``,
``reloading()``, ``stopping()`` and ``status()``; :data:`notifier` is the process-wide instance
that :func:`notify` uses. The daemon keeps a :class:`Notifier` of its own; :func:`notify` and
:data:`notifier` are used by tests/test_systemd.py only.

Socket activation (``meworkd.socket``): :func:`listen_fds` returns the sockets systemd passed
(fds 3, 4, ... when ``LISTEN_PID`` is this process) and removes ``LISTEN_*`` from
``os.environ`` so that spawned MCP servers do not inherit them; :func:`listen_unix_socket` picks
the listening Unix stream socket among them. :func:`child_environ` strips every systemd
process-protocol variable from an environment meant for a child process (used by nothing at
present: MCP servers get a whitelisted environment, which leaves these out anyway).

Only the standard library is used, so this module is safe to import anywhere, early.
"""

from __future__ import annotations

import os
import socket
import stat
import threading
import time
from collections.abc import Mapping
from typing import Final

__all__ = [
    "LISTEN_FDS_START",
    "SYSTEMD_ENV_VARS",
    "Notifier",
    "child_environ",
    "listen_fds",
    "listen_unix_socket",
    "notifier",
    "notify",
]

#: The first file descriptor systemd passes (``SD_LISTEN_FDS_START``).
LISTEN_FDS_START: Final = 3

#: Variables of the systemd process protocols, meant for the daemon itself and never for its
#: children (a child that speaks sd_notify would otherwise report "READY=1" on our behalf).
SYSTEMD_ENV_VARS: Final = (
    "NOTIFY_SOCKET",
    "LISTEN_PID",
    "LISTEN_FDS",
    "LISTEN_FDNAMES",
    "WATCHDOG_PID",
    "WATCHDOG_USEC",
)

# A datagram to the service manager is normally delivered at once; this bounds the rare case of
# a full receive queue, so that a stuck manager cannot hang the daemon.
_SEND_TIMEOUT: Final = 1.0


def _notify_address(value: str) -> str | None:
    """The ``sendto`` address for a ``NOTIFY_SOCKET`` value, or ``None`` if unsupported."""
    if value.startswith("/"):
        return value
    if value.startswith("@") and len(value) > 1:
        return "\0" + value[1:]
    return None  # relative paths and vsock: addresses (systemd ≥ 254) are not supported


def _one_line(text: str) -> str:
    """A value that cannot break the line-oriented protocol."""
    return " ".join(text.splitlines())


class Notifier:
    """Sends ``sd_notify`` messages to ``$NOTIFY_SOCKET`` over one cached datagram socket.

    The socket is created on first use and re-created after a fork; ``NOTIFY_SOCKET`` is read on
    every send, so a notifier is cheap to keep for the whole process lifetime. Thread-safe.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._pid = 0

    def _socket(self) -> socket.socket:
        pid = os.getpid()
        if self._sock is None or self._pid != pid:
            if self._sock is not None:
                self._sock.close()  # this child's copy, inherited through fork()
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)  # close-on-exec by default
            sock.settimeout(_SEND_TIMEOUT)
            self._sock, self._pid = sock, pid
        return self._sock

    def notify(self, *lines: str) -> bool:
        """Send ``lines`` (``KEY=VALUE`` each) as one datagram; ``False`` if nothing was sent."""
        value = os.environ.get("NOTIFY_SOCKET")
        if not value or not lines:
            return False
        address = _notify_address(value)
        if address is None:
            return False
        try:
            payload = "\n".join(lines).encode("utf-8")
            with self._lock:
                sock = self._socket()
                sent = sock.sendto(payload, address)
        except (OSError, ValueError):  # socket errors, timeouts, NUL bytes, unencodable text
            return False
        return sent == len(payload)

    def ready(self, status: str | None = None) -> bool:
        """Startup (or a reload) is complete: ``READY=1``."""
        return self.notify("READY=1", *self._status(status))

    def reloading(self, status: str | None = None) -> bool:
        """A reload begins: ``RELOADING=1`` with ``MONOTONIC_USEC`` (needed by
        ``Type=notify-reload``, systemd ≥ 253); send :meth:`ready` when it is done."""
        usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        return self.notify("RELOADING=1", f"MONOTONIC_USEC={usec}", *self._status(status))

    def stopping(self, status: str | None = None) -> bool:
        """Shutdown begins: ``STOPPING=1``."""
        return self.notify("STOPPING=1", *self._status(status))

    def status(self, text: str) -> bool:
        """A free-form one-line status shown by ``systemctl --user status``: ``STATUS=...``."""
        return self.notify(*self._status(text))

    def close(self) -> None:
        """Close the cached socket (a later send opens a new one)."""
        with self._lock:
            sock, self._sock = self._sock, None
            if sock is not None:
                sock.close()

    @staticmethod
    def _status(text: str | None) -> tuple[str, ...]:
        return () if text is None else (f"STATUS={_one_line(text)}",)


#: The process-wide notifier used by :func:`notify` (tests only; the daemon has its own).
notifier: Final = Notifier()


def notify(*lines: str) -> bool:
    """``sd_notify``: send ``lines`` as one datagram to ``$NOTIFY_SOCKET``; never raises.

    Used by tests/test_systemd.py; the daemon sends through its own :class:`Notifier`.

    ``notify("READY=1", "STATUS=serving")`` sends ``b"READY=1\\nSTATUS=serving"``. Returns
    ``False`` (and does nothing) without ``NOTIFY_SOCKET``, and ``False`` if sending failed.
    """
    return notifier.notify(*lines)


def _unset_listen_env() -> None:
    for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        os.environ.pop(name, None)


def listen_fds() -> list[socket.socket]:
    """The sockets passed by systemd socket activation, in fd order (``[]`` if none).

    They are returned when ``LISTEN_PID`` is this process and ``LISTEN_FDS`` is a count ≥ 1;
    each fd is made close-on-exec. ``LISTEN_PID``, ``LISTEN_FDS`` and ``LISTEN_FDNAMES`` are
    removed from ``os.environ`` in every case (as ``sd_listen_fds(1)`` does), so a second call
    returns ``[]`` and children do not inherit them. Raises :class:`ValueError` if a passed fd is
    not a socket (for instance a FIFO from ``ListenFIFO=``).
    """
    pid_text = os.environ.get("LISTEN_PID", "")
    count_text = os.environ.get("LISTEN_FDS", "")
    _unset_listen_env()
    try:
        pid, count = int(pid_text), int(count_text)
    except ValueError:
        return []
    if pid != os.getpid() or count < 1:
        return []
    fds = range(LISTEN_FDS_START, LISTEN_FDS_START + count)
    # Check every fd before wrapping any: a socket object closes its fd when collected.
    for fd in fds:
        try:
            mode = os.fstat(fd).st_mode
        except OSError as exc:
            raise ValueError(f"LISTEN_FDS={count}, but fd {fd} is not open: {exc}") from exc
        if not stat.S_ISSOCK(mode):
            raise ValueError(f"LISTEN_FDS={count}, but fd {fd} is not a socket")
    sockets: list[socket.socket] = []
    for fd in fds:
        os.set_inheritable(fd, False)
        sockets.append(socket.socket(fileno=fd))
    return sockets


def _describe(sock: socket.socket) -> str:
    kind = sock.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE)
    listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
    try:
        family = socket.AddressFamily(sock.family).name
    except ValueError:
        family = str(sock.family)
    try:
        kind_name = socket.SocketKind(kind).name
    except ValueError:
        kind_name = str(kind)
    return f"fd {sock.fileno()}: {family}/{kind_name}{' listening' if listening else ''}"


def _is_listening_unix_stream(sock: socket.socket) -> bool:
    domain = sock.getsockopt(socket.SOL_SOCKET, socket.SO_DOMAIN)
    kind = sock.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE)
    listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
    return domain == socket.AF_UNIX and kind == socket.SOCK_STREAM and listening != 0


def listen_unix_socket() -> socket.socket | None:
    """The listening ``AF_UNIX`` ``SOCK_STREAM`` socket passed by systemd, or ``None``.

    ``None`` means the daemon was not socket-activated (it binds its own socket). If sockets
    were passed but none is a listening Unix stream socket (a unit with ``ListenDatagram=``,
    ``Accept=yes`` or a TCP port), raises :class:`ValueError` naming what was passed. Other
    passed sockets are left open; the first matching one is returned.
    """
    sockets = listen_fds()
    if not sockets:
        return None
    for sock in sockets:
        if _is_listening_unix_stream(sock):
            return sock
    passed = "; ".join(_describe(sock) for sock in sockets)
    raise ValueError(
        "systemd passed no listening AF_UNIX SOCK_STREAM socket "
        f"(the .socket unit needs ListenStream=/path and Accept=no): {passed}"
    )


def child_environ(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of ``env`` (default ``os.environ``) without :data:`SYSTEMD_ENV_VARS`.

    Not called by the daemon at present (see the module comment); kept for a child whose
    environment is inherited rather than whitelisted.
    """
    source = os.environ if env is None else env
    return {key: value for key, value in source.items() if key not in SYSTEMD_ENV_VARS}
