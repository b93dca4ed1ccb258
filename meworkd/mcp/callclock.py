"""A tool call's clock: the one cancel scope of the call, with its timeout while it runs.

The turn that makes a call enters the clock's scope around all of it (the decision, then the
request) and cancels the call through it; the request itself runs under the scope's deadline
(:func:`meworkd.mcp.tools.call_tool` starts and stops it). A deadline that passes cancels the
same scope, so the turn tells the two apart afterwards (:attr:`CallClock.expired`) and answers
a timeout with :func:`timed_out`'s text, as a timeout the SDK reported would be answered.
"""

import math

import anyio
from mcp import MCPError
from mcp_types import REQUEST_TIMEOUT

from meworkd.mcp.errors import TalkFailed, talk_failure
from meworkd.settings import ServerConfig

__all__ = ["CallClock", "timed_out"]


class CallClock:
    """A tool call's one cancel scope: the caller's cancel, and its timeout while it runs.

    The caller (a turn) enters :attr:`scope` around the whole call, its decision included, and
    cancels it with :meth:`cancel`. While the request is out (:meth:`start` to :meth:`stop`)
    the scope has a watchdog deadline ``timeout`` seconds ahead; progress of a long-running
    server moves it, and while any question bound to the call is open (:meth:`hold`) there
    is no deadline at all: a 60-second call timeout must not cancel a form the user is
    filling in. One scope, not one for the turn's cancel and one for the clock (bench B1):
    :attr:`expired` tells the deadline from a cancel once the scope has caught it.
    """

    __slots__ = (
        "_holds",
        "_running",
        "cancelled",
        "config",
        "long_running",
        "reply_limit",
        "scope",
        "timeout",
    )

    def __init__(self) -> None:
        self.scope = anyio.CancelScope()
        self.timeout = math.inf
        self.long_running = False
        self.config: ServerConfig | None = None  # the server's, once bound
        self.reply_limit = 0
        self.cancelled = False
        self._holds = 0
        self._running = False

    def bind(self, config: ServerConfig, reply_limit: int) -> None:
        """The call goes to a server of ``config`` (its timeout), with this reply limit."""
        self.config = config
        self.timeout = config.timeout
        self.long_running = config.long_running
        self.reply_limit = reply_limit

    def cancel(self) -> None:
        """Cancel the call (not a timeout: it ends as cancelled)."""
        self.cancelled = True
        self.scope.cancel()

    @property
    def expired(self) -> bool:
        """The scope was cancelled by the deadline, not by :meth:`cancel`."""
        return self.scope.cancel_called and not self.cancelled

    def start(self) -> None:
        self._running = True
        self._rearm()

    def stop(self) -> None:
        """The request is answered: no deadline (a cancel already delivered goes on)."""
        self._running = False
        self.scope.deadline = math.inf

    def hold(self) -> None:
        self._holds += 1
        self.scope.deadline = math.inf

    def release(self) -> None:
        self._holds -= 1
        self._rearm()

    def progressed(self) -> None:
        if self.long_running:
            self._rearm()

    def _rearm(self) -> None:
        if self._holds == 0 and self._running:
            self.scope.deadline = anyio.current_time() + self.timeout


def timed_out(server: str, config: ServerConfig) -> TalkFailed:
    """What a call to ``server`` whose clock ran out failed with (its isError text)."""
    timeout = MCPError(REQUEST_TIMEOUT, f"timed out after {config.timeout:g} s")
    return talk_failure(timeout, server, config)
