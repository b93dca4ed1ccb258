"""``hooks.PermissionRequest`` in the settings: validated and compiled once, when the settings load.

The format is Claude Code's: matcher groups, each with a tool-name matcher and command hooks.
Problems are reported with their path and the entry is left out; where a left-out entry would
have applied is remembered (:attr:`HookSet.broken`), so that a call it may have concerned is never
allowed by a hook: the entry could have been the one that denies. The runner is
:mod:`meworkd.core.approvals.hook_runner`.
"""

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Literal

import msgspec

__all__ = [
    "DEFAULT_HOOK_TIMEOUT_SECONDS",
    "PERMISSION_HOOKS_PATH",
    "HookCommand",
    "HookGroup",
    "HookMatcher",
    "HookSet",
    "ToolMatcher",
    "compile_matcher",
    "matcher_error",
    "matcher_matches",
    "parse_hook_set",
    "parse_permission_hooks",
    "select_hooks",
]

DEFAULT_HOOK_TIMEOUT_SECONDS = 60.0
PERMISSION_HOOKS_PATH = "hooks.PermissionRequest"
# Claude Code: a matcher made only of these characters is an exact name (or a list of names).
_EXACT_MATCHER = re.compile(r"[A-Za-z0-9_\- ,|]*")
_MATCHER_SEPARATORS = re.compile(r"[|,]")
# Claude Code fields that change when or how a hook runs; ignoring them could make a hook run
# (and allow) where its author did not mean it to, so such a hook is skipped and reported.
_UNSUPPORTED_FIELDS = ("if", "args", "async", "asyncRewake")


class HookCommand(msgspec.Struct, frozen=True, kw_only=True):
    """One ``{"type": "command", "command": ..., "timeout": ...}`` hook handler."""

    type: Literal["command"] = "command"
    command: Annotated[str, msgspec.Meta(min_length=1)]
    timeout: Annotated[float, msgspec.Meta(gt=0)] = DEFAULT_HOOK_TIMEOUT_SECONDS


class HookMatcher(msgspec.Struct, frozen=True, kw_only=True):
    """A matcher group as written: hook commands run for tool names that ``matcher`` selects."""

    matcher: str = ""
    hooks: tuple[HookCommand, ...] = ()


# --- matching ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolMatcher:
    """A matcher compiled: a set of exact names, a regular expression, or (neither) every tool."""

    names: frozenset[str] | None = None
    pattern: re.Pattern[str] | None = None

    def matches(self, tool_name: str) -> bool:
        if self.names is not None:
            return tool_name in self.names
        if self.pattern is not None:
            return self.pattern.search(tool_name) is not None
        return True


_MATCH_ALL = ToolMatcher()


def compile_matcher(matcher: str) -> ToolMatcher | str:
    """Claude Code's rule, compiled; or why ``matcher`` can never match.

    ``""`` and ``"*"`` match all. Exact form: letters, digits, ``_``, ``-``, spaces, ``,`` and
    ``|`` only, a list of names separated by ``|`` or ``,``. Anything else is an unanchored
    regular expression (``re.search``); an invalid one is reported and matches nothing.
    """
    if matcher in ("", "*"):
        return _MATCH_ALL
    if _EXACT_MATCHER.fullmatch(matcher) is not None:
        return ToolMatcher(names=frozenset(p.strip() for p in _MATCHER_SEPARATORS.split(matcher)))
    try:
        return ToolMatcher(pattern=re.compile(matcher))
    except re.error as exc:
        return f"invalid regular expression: {exc.msg}"


def matcher_error(matcher: str) -> str | None:
    """Why ``matcher`` can never match (an invalid regular expression), or None."""
    compiled = compile_matcher(matcher)
    return compiled if isinstance(compiled, str) else None


def matcher_matches(matcher: str, tool_name: str) -> bool:
    """Whether ``matcher`` selects ``tool_name`` (see :func:`compile_matcher`)."""
    compiled = compile_matcher(matcher)
    return not isinstance(compiled, str) and compiled.matches(tool_name)


@dataclass(frozen=True, slots=True)
class HookGroup:
    """A valid matcher group (its valid hooks only) and its matcher, compiled."""

    source: HookMatcher
    matcher: ToolMatcher

    @property
    def hooks(self) -> tuple[HookCommand, ...]:
        return self.source.hooks


def select_hooks(groups: Iterable[HookGroup], tool_name: str) -> list[HookCommand]:
    """The hooks to run for ``tool_name``, in order; as in Claude Code, a command configured
    twice runs once."""
    selected: dict[str, HookCommand] = {}
    for group in groups:
        if group.matcher.matches(tool_name):
            for hook in group.hooks:
                selected.setdefault(hook.command, hook)
    return list(selected.values())


@dataclass(frozen=True, slots=True)
class HookSet:
    """``hooks.PermissionRequest`` as loaded: the valid groups, the problems, and where a
    malformed entry would have applied (a matcher that cannot be read applies everywhere)."""

    matchers: tuple[HookGroup, ...] = ()
    errors: tuple[str, ...] = ()
    broken: tuple[ToolMatcher, ...] = ()

    def select(self, tool_name: str) -> list[HookCommand]:
        return select_hooks(self.matchers, tool_name)

    def unreadable_for(self, tool_name: str) -> bool:
        """Whether a malformed entry may have concerned ``tool_name`` (then no hook allows)."""
        return any(m.matches(tool_name) for m in self.broken)


# --- settings ----------------------------------------------------------------------------------


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _parse_hook(raw: object, path: str, errors: list[str]) -> HookCommand | None:
    if not isinstance(raw, dict):
        errors.append(f"{path}: expected an object")
        return None
    ok = True
    kind = raw.get("type")
    if kind != "command":
        shown = f"unsupported hook type {kind!r}, " if isinstance(kind, str) else ""
        errors.append(f'{path}.type: {shown}expected "command"')
        ok = False
    command = raw.get("command")
    if not isinstance(command, str) or not command.strip():
        errors.append(f"{path}.command: expected a non-empty string")
        ok = False
    timeout = raw.get("timeout", DEFAULT_HOOK_TIMEOUT_SECONDS)
    if not _is_number(timeout) or not math.isfinite(timeout) or timeout <= 0:
        errors.append(f"{path}.timeout: expected number > 0")
        ok = False
    for key in _UNSUPPORTED_FIELDS:
        if raw.get(key) not in (None, False):
            errors.append(f"{path}.{key}: not supported by meworkd, the hook is skipped")
            ok = False
    shell = raw.get("shell")
    if shell not in (None, "bash"):
        errors.append(f'{path}.shell: only "bash" (run as /bin/sh -c) is supported')
        ok = False
    if not ok or not isinstance(command, str):
        return None
    return HookCommand(command=command, timeout=float(timeout))


def _parse_group(
    raw: object, path: str, errors: list[str]
) -> tuple[HookGroup | None, ToolMatcher | None]:
    """One matcher group: its valid part, and where it applies if any of it is malformed."""
    if not isinstance(raw, dict):
        errors.append(f"{path}: expected an object")
        return None, _MATCH_ALL
    matcher = raw.get("matcher")
    if matcher is None:
        matcher = ""
    if not isinstance(matcher, str):
        errors.append(f"{path}.matcher: expected a string")
        return None, _MATCH_ALL
    compiled = compile_matcher(matcher)
    if isinstance(compiled, str):
        errors.append(f"{path}.matcher: {compiled}")
        return None, _MATCH_ALL
    raw_hooks = raw.get("hooks")
    if not isinstance(raw_hooks, list):
        errors.append(f"{path}.hooks: expected a list")
        return None, compiled
    hooks = [_parse_hook(h, f"{path}.hooks[{j}]", errors) for j, h in enumerate(raw_hooks)]
    valid = tuple(h for h in hooks if h is not None)
    group = HookGroup(HookMatcher(matcher=matcher, hooks=valid), compiled) if valid else None
    return group, (compiled if len(valid) < len(hooks) else None)


def _parse(raw: object) -> tuple[list[HookGroup], list[str], list[ToolMatcher]]:
    if raw is None:
        return [], [], []
    if not isinstance(raw, list):
        return [], [f"{PERMISSION_HOOKS_PATH}: expected a list"], [_MATCH_ALL]
    matchers: list[HookGroup] = []
    errors: list[str] = []
    broken: list[ToolMatcher] = []
    for i, raw_group in enumerate(raw):
        group, broken_at = _parse_group(raw_group, f"{PERMISSION_HOOKS_PATH}[{i}]", errors)
        if group is not None:
            matchers.append(group)
        if broken_at is not None:
            broken.append(broken_at)
    return matchers, errors, broken


def parse_permission_hooks(raw: object) -> tuple[list[HookMatcher], list[str]]:
    """Validate the value of ``hooks.PermissionRequest`` (None when absent).

    Invalid entries are left out and each problem is reported with its path, e.g.
    ``hooks.PermissionRequest[0].hooks[1].timeout: expected number > 0``; valid ones are kept.
    """
    groups, errors, _broken = _parse(raw)
    return [g.source for g in groups], errors


def parse_hook_set(hooks_section: object) -> HookSet:
    """The settings' ``hooks`` object (None when absent) as a :class:`HookSet`."""
    if hooks_section is None:
        return HookSet()
    if not isinstance(hooks_section, dict):
        return HookSet(errors=("hooks: expected an object",), broken=(_MATCH_ALL,))
    groups, errors, broken = _parse(hooks_section.get("PermissionRequest"))
    return HookSet(tuple(groups), tuple(errors), tuple(broken))
