"""The model-facing tool name contract: ``mcp__<server-slug>_<digest>__<tool-slug>__<digest>``.

Names are a pure function of the original (server, tool) names, so they are stable across turns,
reloads and restarts; :func:`bind_names` reports, never shadows, the rare collision.
"""

import functools
import hashlib
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "DIGEST_LENGTH",
    "NAME_PATTERN",
    "SERVER_SLUG_LENGTH",
    "TOOL_SLUG_LENGTH",
    "Collision",
    "bind_names",
    "digest",
    "slug",
    "tool_name",
    "was_shortened",
    "was_truncated",
]

SERVER_SLUG_LENGTH = 16
TOOL_SLUG_LENGTH = 24
DIGEST_LENGTH = 6
# The tool name rule shared by the model providers; use it with ``fullmatch``.
NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

_OUTSIDE_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True, slots=True)
class Collision:
    """A binding left out because an earlier (server, tool) pair already holds its name."""

    server: str
    tool: str
    name: str
    clashes_with: tuple[str, str]


def _slug_uncut(s: str) -> str:
    ascii_only = unicodedata.normalize("NFKD", s).encode("ascii", "ignore").decode("ascii")
    return _OUTSIDE_SLUG.sub("-", ascii_only.lower()).strip("-")


def slug(s: str, n: int) -> str:
    """``s`` folded to ``[a-z0-9-]``, at most ``n`` characters, never empty (``"x"``)."""
    return _slug_uncut(s)[:n].strip("-") or "x"


def digest(s: str) -> str:
    """The first 6 hex digits of SHA-256 over the original name's UTF-8 bytes."""
    # surrogatepass: a lone surrogate (possible from a lenient JSON parser) must not crash a turn.
    data = s.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:DIGEST_LENGTH]


@functools.lru_cache(maxsize=65536)
def tool_name(server: str, tool: str) -> str:
    """The model-facing name of ``tool`` on ``server`` (at most 62 characters)."""
    return (
        f"mcp__{slug(server, SERVER_SLUG_LENGTH)}_{digest(server)}"
        f"__{slug(tool, TOOL_SLUG_LENGTH)}__{digest(tool)}"
    )


def was_truncated(server: str, tool: str) -> bool:
    """True when a slug had to be cut to its width (the name lost part of the original)."""
    return (
        len(_slug_uncut(server)) > SERVER_SLUG_LENGTH or len(_slug_uncut(tool)) > TOOL_SLUG_LENGTH
    )


def was_shortened(server: str, tool: str) -> bool:
    """True when the name does not carry both originals verbatim (a slug was cut or changed).

    Note that any character outside ``[a-z0-9-]`` counts as a change, so ``read_file`` (bound as
    ``read-file``) is reported; :func:`was_truncated` is the narrower test.
    """
    return slug(server, SERVER_SLUG_LENGTH) != server or slug(tool, TOOL_SLUG_LENGTH) != tool


def bind_names(
    pairs: Iterable[tuple[str, str]],
) -> tuple[dict[str, tuple[str, str]], list[Collision]]:
    """Bind (server, tool) pairs in the given order; a later pair whose name is taken is reported.

    Callers pass the pairs sorted by (server, tool) so the survivor of a collision is stable.
    """
    bound: dict[str, tuple[str, str]] = {}
    collisions: list[Collision] = []
    for server, tool in pairs:
        name = tool_name(server, tool)
        holder = bound.get(name)
        if holder is None:
            bound[name] = (server, tool)
        else:
            collisions.append(Collision(server, tool, name, holder))
    return bound, collisions
