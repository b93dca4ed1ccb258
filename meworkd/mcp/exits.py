"""Why a stdio server's process ended, where meworkd can tell: one of its limits, or a sandbox
that bwrap could not build (meworkd.mcp.limits, meworkd.mcp.sandbox say what is recognised)."""

from collections.abc import Sequence

from meworkd.mcp.limits import describe_hit, limit_hit
from meworkd.mcp.sandbox import unavailable
from meworkd.settings import ServerConfig

__all__ = ["exit_failure"]


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
