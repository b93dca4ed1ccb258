"""Optional OpenTelemetry traces: a span per turn start and per tool call, and the W3C trace
context (``traceparent``) each tool call carries to its server in ``_meta``.

The MCP SDK sends the current trace context on the requests it sends itself; meworkd adds it
to the ``tools/call`` requests it writes on a stdio session's pipes (:mod:`meworkd.mcp.direct`).

Off, and free, unless the OpenTelemetry SDK is installed (``pip install 'meworkd[otel]'``) and
the standard ``OTEL_*`` variables ask for traces: ``OTEL_TRACES_EXPORTER`` (``otlp`` or
``console``), or an OTLP endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT``,
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``); ``OTEL_SDK_DISABLED=true`` or
``OTEL_TRACES_EXPORTER=none`` keep it off. Everything else (service name, resource attributes,
headers, batching, timeouts) is the SDK's own reading of those variables. When off, nothing
of the OpenTelemetry SDK is imported (the API is, by the MCP SDK) and :func:`span` hands out
one shared object that does nothing.

Spans carry names, counts and outcomes: never a tool's arguments or reply.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer

__all__ = [
    "OFF",
    "Setup",
    "Traced",
    "configure",
    "decide",
    "install",
    "shutdown",
    "span",
    "trace_meta",
]

EXPORTERS = ("otlp", "console")
Attributes = Mapping[str, str | int | float | bool]
SHUTDOWN_BOUND = 2.0  # seconds a stopping daemon gives the last spans to leave
ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


@dataclass(frozen=True)
class Setup:
    """What the environment asks for: ``exporter`` (None: traces off) and, when a request
    cannot be met, the reason (said once in the log at start)."""

    exporter: str | None
    problem: str | None = None


def decide(environ: Mapping[str, str]) -> Setup:
    """Whether the ``OTEL_*`` variables ask for traces, and exported how (no I/O)."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return Setup(None)
    named = [e.strip().lower() for e in environ.get("OTEL_TRACES_EXPORTER", "").split(",")]
    named = [e for e in named if e]
    if not named:
        return Setup("otlp" if any(environ.get(k) for k in ENDPOINTS) else None)
    if named == ["none"]:
        return Setup(None)
    supported = [e for e in named if e in EXPORTERS]
    unsupported = sorted(set(named) - set(EXPORTERS) - {"none"})
    problem = (
        f"OTEL_TRACES_EXPORTER names {', '.join(unsupported)}: meworkd exports with "
        f"{' or '.join(EXPORTERS)} only"
        if unsupported
        else None
    )
    return Setup(supported[0] if supported else None, problem)


class _Off:
    """The span of a meworkd whose traces are off: one shared instance, nothing recorded."""

    recording = False  # callers skip building what they would set

    def __enter__(self) -> _Off:
        return self

    def __exit__(self, *_exc: object) -> None:
        return None

    def set(self, key: str, value: str | int | float | bool) -> None:
        return None

    def fail(self, kind: str) -> None:
        return None

    def rename(self, name: str) -> None:
        return None


class _On:
    """A recording span, made current for the tasks that run inside it (so the requests they
    send carry its trace context)."""

    recording = True

    def __init__(self, tracer: Tracer, name: str, client: bool, attributes: dict[str, Any]):
        from opentelemetry.trace import SpanKind

        kind = SpanKind.CLIENT if client else SpanKind.INTERNAL
        self._manager = tracer.start_as_current_span(
            name, kind=kind, attributes=attributes, record_exception=False
        )
        self._span: Span | None = None

    def __enter__(self) -> _On:
        self._span = self._manager.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if kind is not None and self._span is not None:
            # The type's name only: an exception's text may quote what a server sent.
            self.fail(kind.__name__)
        self._manager.__exit__(None, None, None)

    def set(self, key: str, value: str | int | float | bool) -> None:
        if self._span is not None:
            self._span.set_attribute(key, value)

    def fail(self, kind: str) -> None:
        from opentelemetry.trace import Status, StatusCode

        if self._span is not None:
            self._span.set_attribute("error.type", kind)
            self._span.set_status(Status(StatusCode.ERROR))

    def rename(self, name: str) -> None:
        if self._span is not None:
            self._span.update_name(name)


Traced = _On | _Off
OFF = _Off()
_tracer: Tracer | None = None
_provider: TracerProvider | None = None


def span(name: str, attributes: Attributes | None = None, *, client: bool = False) -> Traced:
    """A span named ``name`` around a ``with`` block (``client``: a request to a server)."""
    if _tracer is None:
        return OFF
    return _On(_tracer, name, client, dict(attributes or {}))


def trace_meta() -> dict[str, str] | None:
    """The current span's W3C trace context for a request's ``_meta`` (None when off)."""
    if _tracer is None:
        return None
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier or None


def configure(environ: Mapping[str, str]) -> Setup:
    """Set traces up as ``environ`` asks; the :class:`Setup` says what was done (an SDK that
    is not installed is its ``problem``, and traces stay off)."""
    setup = decide(environ)
    if setup.exporter is None:
        return setup
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            ConsoleSpanExporter,
            SpanExporter,
        )

        exporter: SpanExporter
        if setup.exporter == "console":
            exporter = ConsoleSpanExporter()
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter()  # endpoint, headers, timeout: from OTEL_EXPORTER_OTLP_*
    except ImportError:
        return Setup(
            None,
            "OTEL_* asks for traces but the OpenTelemetry SDK is not installed "
            "(pip install 'meworkd[otel]')",
        )
    from opentelemetry import trace

    provider = TracerProvider(resource=Resource.create({"service.name": "meworkd"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    install(provider)
    # Global too: the MCP SDK's own span around each request it sends (method and request id,
    # no arguments) is then recorded, a child of ours, and its trace context is what it sends.
    trace.set_tracer_provider(provider)
    return setup


def install(provider: TracerProvider) -> None:
    """Trace through ``provider`` from now on (tests give one with an in-memory exporter)."""
    global _tracer, _provider
    _provider = provider
    _tracer = provider.get_tracer("meworkd")


def shutdown(bound: float = SHUTDOWN_BOUND) -> None:
    """Export what is left and stop tracing, waiting at most ``bound`` seconds: a collector
    that is down must not hold up the daemon's stop (the exporter would retry for a minute)."""
    global _tracer, _provider
    provider, _provider, _tracer = _provider, None, None
    if provider is not None:
        flush = threading.Thread(target=provider.shutdown, name="otel-shutdown", daemon=True)
        flush.start()
        flush.join(bound)
