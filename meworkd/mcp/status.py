"""``server.status`` events, and each server's last failure (``lastError`` in servers.list).

The pool publishes a session's ``connected`` and ``closed``. Whoever meets a server failing to
connect or to list its tools (conversations.prepare, a turn's discovery, a call whose session
had to be opened again) reports it here, once: a ``failed`` event with the classified kind, the
sentence and the tail of that session's stderr (lines already redacted when they were stored),
kept as the server's last failure until a later connection of it succeeds or its connection
fields change (the failure was the old definition's). A Test connection sets it too
(:meth:`ServerStatus.tested`): its success ends the failure, its failure is the last one (no
event: the one who tested has the outcome). In memory only.

A start-up cut off from outside (a turn's timeout cancels it before the session can word its
own failure) leaves its stderr lines here (:meth:`ServerStatus.cut_off`); the timeout reported
next for that server quotes them.
"""

from collections.abc import Mapping
from typing import Any

from meworkd.base.clock import wire_time
from meworkd.base.errors import MeworkError, ShuttingDown
from meworkd.base.events import EventBus

__all__ = ["FAILURE_TAIL", "ServerStatus", "failure_kind"]

FAILURE_TAIL = 10  # stderr lines quoted in a failure (the Logs tab has the rest)


def failure_kind(exc: MeworkError) -> str:
    """The classified reason of a server's failure (``exited``, ``timeout``, ...)."""
    return str(exc.data.get("reason", exc.kind))


class ServerStatus:
    def __init__(self, bus: EventBus) -> None:
        self._bus = bus
        self._last: dict[str, dict[str, Any]] = {}
        self._cut_off: dict[str, list[str]] = {}  # stderr of a start-up cut off, per server

    def publish(self, server: str, conversation: str | None, status: str, **extra: Any) -> None:
        data: dict[str, Any] = {"server": server, "conversation": conversation, "status": status}
        data.update((k, v) for k, v in extra.items() if v is not None and v != "")
        self._bus.publish("server.status", data)

    def connected(self, server: str, conversation: str | None) -> None:
        self._last.pop(server, None)  # it connects again: its last failure is over
        self._cut_off.pop(server, None)
        self.publish(server, conversation, "connected")

    def failed(self, server: str, conversation: str | None, exc: MeworkError) -> None:
        """Publish ``exc`` as the server's failure and keep it as its last one.

        Not a failure of the server: meworkd stopping, or the server disabled meanwhile.
        """
        kind = failure_kind(exc)
        cut_off = self._cut_off.pop(server, None)
        if isinstance(exc, ShuttingDown) or kind == "disabled":
            return
        raw = exc.data.get("stderrTail")
        if raw is None and kind == "timeout":
            raw = cut_off  # the timeout that cut its start-up off: what it printed till then
        tail = [str(line) for line in raw[-FAILURE_TAIL:]] if isinstance(raw, list) else None
        limit = exc.data.get("limit")  # resource_limit: the one it died on
        self._last[server] = {
            "kind": kind,
            "error": exc.message,
            "stderrTail": tail or [],
            "conversation": conversation,
            "time": wire_time(),
            **({"limit": limit} if limit else {}),
        }
        self.publish(
            server,
            conversation,
            "failed",
            kind=kind,
            error=exc.message,
            stderrTail=tail,
            limit=limit,
        )

    def tested(self, server: str, failed: Mapping[str, Any] | None) -> None:
        """A Test connection's outcome (``failed``: its failure object, None: it succeeded):
        the server's state now, so a success ends its last failure and a failure is it."""
        if failed is None:
            self._last.pop(server, None)
            return
        tail = failed.get("stderrTail")
        self._last[server] = {
            "kind": str(failed.get("kind") or "error"),
            "error": str(failed.get("error") or ""),
            "stderrTail": [str(line) for line in tail[-FAILURE_TAIL:]] if tail else [],
            "conversation": None,
            "time": wire_time(),
            "test": True,  # met by a Test connection, not by a conversation's session
            **({"limit": str(failed["limit"])} if failed.get("limit") else {}),
        }

    def last_error(self, server: str) -> dict[str, Any] | None:
        """``{kind, error, stderrTail, conversation, time, test?}`` of its last failure, or None."""
        last = self._last.get(server)
        return None if last is None else dict(last)

    def cut_off(self, server: str, stderr_tail: list[str]) -> None:
        """A start-up of ``server`` was cancelled from outside; ``stderr_tail``: its lines so
        far (already redacted), for the timeout failure reported next."""
        self._cut_off[server] = list(stderr_tail)

    def forget(self, server: str) -> None:
        """Drop the server's failure (it was removed, or renamed: a new name starts afresh)."""
        self._last.pop(server, None)
        self._cut_off.pop(server, None)
