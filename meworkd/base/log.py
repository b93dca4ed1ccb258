"""Logging: structlog JSON lines on stderr (journald) or a console renderer, secrets redacted.

The SDK's stdlib loggers are routed through the same processors, so every line has one shape.
Context (``server``, ``conversation``, ``turn``) is bound with ``structlog.contextvars``.
"""

import logging
import sys
from collections.abc import Iterable, MutableMapping
from typing import Any, Literal

import structlog
import structlog.tracebacks

__all__ = ["REDACTED", "Redactor", "configure_logging", "get_logger"]

REDACTED = "[redacted]"


class Redactor:
    """Replaces every known secret value in text; the daemon refreshes it on settings changes."""

    def __init__(self) -> None:
        self._secrets: tuple[str, ...] = ()

    def update(self, secrets: Iterable[str]) -> None:
        # Longest first, so a secret containing another is replaced whole.
        self._secrets = tuple(sorted(set(secrets), key=len, reverse=True))

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def redact_value(self, value: object) -> object:
        if not self._secrets:
            return value  # nothing to hide: no copy (every tool reply passes through here)
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {k: self.redact_value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.redact_value(v) for v in value]
        return value

    def processor(
        self, _logger: object, _name: str, event_dict: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        if self._secrets:
            for key, value in event_dict.items():
                event_dict[key] = self.redact_value(value)
        return event_dict


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
    logging.captureWarnings(True)


def get_logger(name: str = "meworkd") -> Any:
    return structlog.get_logger(name)
