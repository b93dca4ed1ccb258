"""Per-tool rules of a server entry: tool names or glob patterns, checked once when read.

``disabledTools`` (never offered, never callable) and ``alwaysAllowTools`` (run without asking
at every approval level) take names or shell-style globs: ``*`` any run of characters, ``?``
one, ``[abc]``/``[!abc]`` one of a set. A name without these characters matches only itself.
Matching is case-sensitive, as tool names are. Pure functions: the settings layer validates
with them, the core decides with them.
"""

from collections.abc import Iterable
from fnmatch import fnmatchcase

__all__ = ["first_match", "pattern_problem", "unmatched"]

MAX_PATTERN = 256


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` is no valid rule (with the 1-based position of the fault), or None."""
    if not pattern:
        return "an empty pattern matches no tool"
    if len(pattern) > MAX_PATTERN:
        return f"longer than {MAX_PATTERN} characters"
    at = 0
    while at < len(pattern):
        if pattern[at] == "[":
            end = pattern.find("]", at + 2 if pattern[at + 1 : at + 2] in ("!", "]") else at + 1)
            if end < 0:
                return f"'[' at position {at + 1} is never closed by ']'"
            at = end
        at += 1
    return None


def first_match(patterns: Iterable[str], tool: str) -> str | None:
    """The first of ``patterns`` that matches ``tool`` (the rule that applies), or None."""
    for pattern in patterns:
        if pattern == tool or fnmatchcase(tool, pattern):
            return pattern
    return None


def unmatched(patterns: Iterable[str], tools: Iterable[str]) -> list[str]:
    """The patterns that match none of ``tools`` (a typo, or a tool the server dropped)."""
    names = list(tools)
    return [p for p in patterns if not any(first_match([p], name) for name in names)]
