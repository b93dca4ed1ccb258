"""OpenTelemetry traces (issue 30.3): off and free by default; when the ``OTEL_*`` variables ask,
a span per turn start and per tool call reaches a real OTLP/HTTP endpoint on 127.0.0.1, and
the tool call's request carries the call span's trace context to the server in ``_meta``.

The endpoint is a small collector of ours that decodes what the official exporter sends with
the official protobuf definitions (``opentelemetry-proto``); the in-process tests use the SDK's
in-memory exporter.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from mework_client import Client

from meworkd.base import telemetry
from tests.common import BOUND, document, fake
from tests.daemon_fixture import make_env, start_process, stop_process

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@pytest.mark.parametrize(
    ("environ", "exporter", "problem"),
    [
        ({}, None, None),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, "otlp", None),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x/v1/traces"}, "otlp", None),
        ({"OTEL_TRACES_EXPORTER": "console"}, "console", None),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, None, None),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, None, None),
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, None, "zipkin"),
        ({"OTEL_TRACES_EXPORTER": "zipkin,otlp"}, "otlp", "zipkin"),
    ],
)
def test_what_the_otel_variables_ask_for(
    environ: dict[str, str], exporter: str | None, problem: str | None
) -> None:
    setup = telemetry.decide(environ)
    assert setup.exporter == exporter
    assert (setup.problem is None) == (problem is None)
    if problem is not None:
        assert problem in str(setup.problem)


def test_off_imports_nothing_of_the_opentelemetry_sdk() -> None:
    """The daemon's modules and a configure() with no OTEL_* variables load no OpenTelemetry
    SDK or exporter (the API comes with the MCP SDK, which uses it)."""
    code = (
        "import sys, meworkd.app.main\n"
        "from meworkd.base import telemetry\n"
        "assert telemetry.configure({}).exporter is None\n"
        "with telemetry.span('x') as s: s.set('k', 1)\n"
        "assert telemetry.trace_meta() is None\n"
        "heavy = ('opentelemetry.sdk', 'opentelemetry.exporter', 'google.protobuf')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def test_a_span_is_current_inside_and_gives_the_trace_context() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.install(provider)
    try:
        with telemetry.span("tools/call", {"mework.server": "s"}, client=True) as traced:
            traced.rename("tools/call echo")
            meta = telemetry.trace_meta()
            traced.fail("denied")
        with pytest.raises(KeyError), telemetry.span("turn.begin"):
            raise KeyError("a server's words")
    finally:
        telemetry.shutdown()
    call, begin = exporter.get_finished_spans()
    assert call.name == "tools/call echo"
    assert meta is not None
    trace_id, span_id = meta["traceparent"].split("-")[1:3]
    assert (int(trace_id, 16), int(span_id, 16)) == (call.context.trace_id, call.context.span_id)
    assert call.attributes == {"mework.server": "s", "error.type": "denied"}
    assert begin.attributes == {"error.type": "KeyError"}  # the type only, never the text
    assert telemetry.trace_meta() is None  # off again after shutdown


# --- a real daemon, a real OTLP/HTTP endpoint --------------------------------------------------


class Collector:
    """An OTLP/HTTP trace endpoint on 127.0.0.1: keeps every span it is sent."""

    def __init__(self) -> None:
        self.spans: list[Any] = []
        self.changed = threading.Condition()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                request = ExportTraceServiceRequest.FromString(body)
                with collector.changed:
                    for resource in request.resource_spans:
                        for scope in resource.scope_spans:
                            collector.spans.extend(scope.spans)
                    collector.changed.notify_all()
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def wait_for(self, done: Callable[[list[Any]], bool]) -> list[Any]:
        with self.changed:
            assert self.changed.wait_for(lambda: done(self.spans), timeout=BOUND), self.spans
            return list(self.spans)


@contextmanager
def collector() -> Iterator[Collector]:
    running = Collector()
    thread = threading.Thread(target=running.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield running
    finally:
        running.server.shutdown()
        running.server.server_close()


def attributes(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, kind) if kind else None
    return out


def test_spans_reach_an_otlp_endpoint_and_the_server_gets_the_trace_context(
    short_tmp: Path,
) -> None:
    env = make_env(short_tmp, document({"tr": fake()}))
    with collector() as otlp:
        proc = start_process(
            env,
            extra_env={"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.url, "OTEL_BSP_SCHEDULE_DELAY": "50"},
        )
        try:
            with Client(env.socket) as client:
                params = {"id": "tr-c", "mcpServers": ["tr"], "approvalLevel": "full_access"}
                client.call("conversations.create", params)
                turn = client.call("turns.begin", {"conversationId": "tr-c"})
                echo = next(n for n, b in turn["bindings"].items() if b["tool"] == "echo")
                call = {"turnId": turn["turnId"], "name": echo, "arguments": {"text": "private"}}
                client.call("turns.callTool", call)
                client.call("turns.end", {"turnId": turn["turnId"]})
                logs = client.call("servers.logs", {"name": "tr"})["lines"]
            spans = otlp.wait_for(
                lambda got: {"turn.begin", "tools/call echo"} <= {s.name for s in got}
            )
        finally:
            stop_process(proc)
    begin = next(s for s in spans if s.name == "turn.begin")
    called = next(s for s in spans if s.name == "tools/call echo")
    assert attributes(begin) | {"mework.turn": None} == {
        "mework.conversation": "tr-c",
        "mework.turn": None,
        "mework.tools": len(turn["tools"]),
        "mework.failures": 0,
    }
    assert attributes(called) == {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "echo",
        "mework.server": "tr",
        "mework.conversation": "tr-c",
        "mework.turn": turn["turnId"],
        "mework.decision": "allow",
        "mework.decided_by": "level",
    }
    assert all("private" not in repr(attributes(s)) for s in spans)  # never the arguments
    # The request to the server carried the call span's context: same trace, the span its parent.
    traced = [x["line"] for x in logs if "echo traceparent" in x["line"]]
    assert len(traced) == 1
    _version, trace_id, parent_id, _flags = traced[0].rsplit(" ", 1)[1].split("-")
    assert (trace_id, parent_id) == (called.trace_id.hex(), called.span_id.hex())
