"""Logging: structlog JSON lines on stderr (journald) or a console renderer, secrets redacted.

The SDK's stdlib loggers are routed through the same processors, so every line has one shape.
Context (``server``, ``conversation``, ``turn``) is bound with ``structlog.contextvars``.
"""

import logging
import sys
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from typing import Any, Literal

import structlog
import structlog.tracebacks

__all__ = [
    "REDACTED",
    "Redactor",
    "clip_redacted",
    "configure_logging",
    "get_logger",
    "redact_text",
]

REDACTED = "[redacted]"


def redact_text(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every one of ``secrets`` (longest first, for nested ones) replaced."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def clip_redacted(text: str, limit: int, secrets: Sequence[str]) -> str:
    """At most ``limit`` characters of ``text``: redacted first, then cut, so no secret's
    prefix survives a cut that falls inside it."""
    return redact_text(text, secrets)[:limit]


class Redactor:
    """Replaces every known secret in text; the daemon refreshes it on settings changes.

    A secret the settings dropped (a rotated token) stays known until ``retire_when`` says
    the processes that were given it are gone: their exit output may still quote it.
    """

    def __init__(self) -> None:
        self._current: frozenset[str] = frozenset()
        self._retiring: list[tuple[frozenset[str], Callable[[], bool]]] = []
        self._secrets: tuple[str, ...] = ()

    def update(
        self, secrets: Iterable[str], *, retire_when: Callable[[], bool] | None = None
    ) -> None:
        """Know exactly ``secrets`` from now on, plus the dropped ones until ``retire_when()``."""
        new = frozenset(secrets)
        dropped = self._current - new
        if dropped and retire_when is not None and not retire_when():
            self._retiring.append((dropped, retire_when))
        self._current = new
        self._rebuild()

    def _rebuild(self) -> None:
        known = set(self._current).union(*(s for s, _ in self._retiring))
        # Longest first, so a secret containing another is replaced whole.
        self._secrets = tuple(sorted(known, key=len, reverse=True))

    def _expire(self) -> None:
        kept = [(s, gone) for s, gone in self._retiring if not gone()]
        if len(kept) != len(self._retiring):
            self._retiring = kept
            self._rebuild()

    @property
    def secrets(self) -> tuple[str, ...]:
        """What is redacted now, longest first."""
        if self._retiring:
            self._expire()
        return self._secrets

    def redact(self, text: str) -> str:
        return redact_text(text, self.secrets)

    def redact_value(self, value: object) -> object:
        """``value`` with secrets out of every string in it, dict keys included (schemas'
        property names, structuredContent keys); the same object when none are known."""
        secrets = self.secrets
        if not secrets:
            return value  # nothing to hide: no copy (every tool reply passes through here)
        return _redact_value(value, secrets)

    def processor(
        self, _logger: object, _name: str, event_dict: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        secrets = self.secrets
        if secrets:
            # The top-level keys are meworkd's own field names; nested keys are data.
            for key, value in event_dict.items():
                event_dict[key] = _redact_value(value, secrets)
        return event_dict


def _redact_value(value: object, secrets: Sequence[str]) -> object:
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, dict):
        out: dict[object, object] = {}
        for key, item in value.items():
            if isinstance(key, str):
                key = redact_text(key, secrets)
                while key in out:  # two keys that differed only in a secret stay two keys
                    key += "'"
            out[key] = _redact_value(item, secrets)
        return out
    if isinstance(value, list | tuple):
        return [_redact_value(v, secrets) for v in value]
    return value


def configure_logging(
    level: str = "info",
    fmt: Literal["json", "console"] = "json",
    redactor: Redactor | None = None,
) -> None:
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    # Exceptions become data (JSON) or text (console) *before* redaction, so nothing in a
    # traceback escapes it; frames' local variables are never rendered (they hold params,
    # headers and environments).
    exceptions: Any = (
        structlog.processors.ExceptionRenderer(
            structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
        )
        if fmt == "json"
        else structlog.processors.format_exc_info
    )
    tail: list[Any] = [exceptions]
    if redactor is not None:
        tail.append(redactor.processor)
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[*shared, structlog.processors.StackInfoRenderer(), *tail, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                *tail,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    # The SDK logs every parse failure and teardown hiccup at INFO/ERROR; WARNING keeps them
    # without drowning the journal, DEBUG shows everything.
    root.setLevel(numeric if numeric <= logging.DEBUG else max(numeric, logging.WARNING))
    # watchfiles reports each inotify wake, a log file beside the settings among them: at debug
    # that wrote a line per line, a loop. settings.applied says what a change did.
    logging.getLogger("watchfiles").setLevel(max(numeric, logging.WARNING))
    logging.captureWarnings(True)


def get_logger(name: str = "meworkd") -> Any:
    return structlog.get_logger(name)
