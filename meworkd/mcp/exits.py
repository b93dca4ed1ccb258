"""Why a stdio server's process ended, where meworkd can tell: one of its limits, or a sandbox
that bwrap could not build (meworkd.mcp.limits, meworkd.mcp.sandbox say what is recognised)."""

from collections.abc import Callable, Sequence

from anyio.abc import Process

from meworkd.mcp.limits import describe_hit, limit_hit
from meworkd.mcp.sandbox import unavailable
from meworkd.settings import ServerConfig

__all__ = ["Ending", "exit_failure"]


def exit_failure(
    config: ServerConfig, returncode: int, stderr_tail: Sequence[str]
) -> tuple[str, str, str | None] | None:
    """``(kind, sentence, limit)`` for a server that exited on one of its ``limits``
    (``resource_limit``) or whose sandbox bwrap could not build (``sandbox_unavailable``)."""
    hit = limit_hit(config.limits, returncode, stderr_tail, sandboxed=config.sandboxed)
    if hit is not None:
        return "resource_limit", describe_hit(*hit), hit[0]
    if config.sandboxed and (why := unavailable(returncode, list(stderr_tail))) is not None:
        return "sandbox_unavailable", why, None
    return None


class Ending:
    """How a session's server process ended, when meworkd can tell; the sentence also goes to
    the server's Logs (``log``) as a ``[meworkd]`` line."""

    def __init__(self, config: ServerConfig, log: Callable[[str], object]) -> None:
        self._config = config
        self._log = log
        self.gone_by_itself = False  # its output ended while it was wanted
        self.limit: str | None = None  # the limit it died on

    def classify(self, returncode: int, stderr_tail: Sequence[str]) -> tuple[str, str] | None:
        """(kind, sentence) of a death on a limit or of a sandbox not built, else None."""
        found = exit_failure(self._config, returncode, stderr_tail)
        if found is None:
            return None
        reason, message, self.limit = found
        self._log(f"[meworkd] {message}")
        return reason, message

    def after_start(self, process: Process | None, stderr_tail: Sequence[str]) -> str | None:
        """The sentence for a started server that went away by itself on one of its limits."""
        if not self.gone_by_itself or process is None or process.returncode is None:
            return None
        found = self.classify(process.returncode, stderr_tail)
        return None if found is None else found[1]
