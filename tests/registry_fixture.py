"""A fixture MCP registry on 127.0.0.1: the read API v0.1 as the registry documents it.

Implemented from docs/reference/api/official-registry-api.md and openapi.yaml of
github.com/modelcontextprotocol/registry (see the project's notes on the registry):
``GET /v0.1/servers`` with ``cursor``, ``limit``, ``search`` (a substring of the name only, as
the official registry's own search), ``updated_since`` (which includes deleted servers) and
``version=latest``; ``GET /v0.1/servers/{name}/versions`` (newest first) and
``GET /v0.1/servers/{name}/versions/{version|latest}``. Each answer is ``{server, _meta:
{"io.modelcontextprotocol.registry/official": {status, publishedAt, updatedAt, isLatest}}}``.

``mode`` makes it misbehave: ``html`` (an HTML page), ``huge`` (an 11 MiB body), ``endless``
(a new cursor on every page), ``repeat`` (the same cursor again), ``slow`` (never answers
until the fixture stops), ``500``.
"""

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

__all__ = ["FixtureRegistry", "registry_fixture"]

OFFICIAL = "io.modelcontextprotocol.registry/official"
_EPOCH = datetime(2025, 10, 1, tzinfo=UTC)


class FixtureRegistry:
    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.mode = "normal"
        self.requests: list[str] = []  # path and query of each request, in order
        self.files: dict[str, bytes] = {}  # served at /files/<name> (bundles to download)
        self.release = threading.Event()  # ends the wait of a ``slow`` answer
        self._clock = 0
        self._lock = threading.Lock()
        self.url = ""

    def _tick(self) -> str:
        self._clock += 1
        return (_EPOCH + timedelta(minutes=self._clock)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def publish(self, server: dict[str, Any], status: str = "active") -> None:
        """Add ``server`` (a server.json) as its name's latest version."""
        with self._lock:
            now = self._tick()
            for record in self.records:
                if record["server"]["name"] == server["name"] and record["isLatest"]:
                    record.update(isLatest=False, updatedAt=now)
            self.records.append(
                {
                    "server": server,
                    "status": status,
                    "publishedAt": now,
                    "updatedAt": now,
                    "isLatest": True,
                }
            )

    def set_status(self, name: str, status: str) -> None:
        with self._lock:
            now = self._tick()
            for record in self.records:
                if record["server"]["name"] == name:
                    record.update(status=status, updatedAt=now)

    @staticmethod
    def response(record: dict[str, Any]) -> dict[str, Any]:
        meta = {k: record[k] for k in ("status", "publishedAt", "updatedAt", "isLatest")}
        return {"server": record["server"], "_meta": {OFFICIAL: meta}}

    def listing(self, query: dict[str, str]) -> dict[str, Any]:
        with self._lock:
            found = list(self.records)
        since = query.get("updated_since")
        if since is not None:
            found = [r for r in found if r["updatedAt"] > since]
        elif query.get("include_deleted") != "true":
            found = [r for r in found if r["status"] != "deleted"]
        if query.get("version") == "latest":
            found = [r for r in found if r["isLatest"]]
        if "search" in query:
            found = [r for r in found if query["search"].lower() in r["server"]["name"].lower()]
        cursor_in = query.get("cursor") or "0"
        start = int(cursor_in) if cursor_in.isdigit() else 0
        limit = int(query.get("limit") or 30)
        page = found[start : start + limit]
        more = start + limit < len(found)
        cursor = str(start + limit) if more else None
        if self.mode == "endless":
            cursor = str(start + 1)
        elif self.mode == "repeat":
            cursor = "again"
        return {
            "servers": [self.response(r) for r in page],
            "metadata": {"nextCursor": cursor, "count": len(page)},
        }

    def versions(self, name: str) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in reversed(self.records) if r["server"]["name"] == name]


class _Handler(BaseHTTPRequestHandler):
    registry: FixtureRegistry

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        registry = self.registry
        registry.requests.append(self.path)
        if registry.mode == "slow":
            registry.release.wait(60)
            return
        if registry.mode == "500":
            self._send(500, b"internal", "text/plain")
            return
        if registry.mode == "html":
            self._send(200, b"<!doctype html><html><body>Welcome</body></html>", "text/html")
            return
        if registry.mode == "huge":
            self._send(200, b"[" + b"0," * (11 * 1024 * 1024 // 2) + b"0]", "application/json")
            return
        self._route(urlsplit(self.path))

    def _route(self, url: Any) -> None:
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        parts = url.path.split("/")
        if url.path.startswith("/files/") and url.path[7:] in self.registry.files:
            self._send(200, self.registry.files[url.path[7:]], "application/zip")
        elif url.path == "/v0.1/servers":
            self._json(200, self.registry.listing(query))
        elif len(parts) >= 5 and parts[1:3] == ["v0.1", "servers"] and parts[4] == "versions":
            self._versions(unquote(parts[3]), unquote(parts[5]) if len(parts) > 5 else None)
        else:
            self._json(404, {"title": "Not Found", "status": 404})

    def _versions(self, name: str, version: str | None) -> None:
        records = self.registry.versions(name)
        if version is None:
            if not records:
                self._json(404, {"title": "Not Found", "status": 404})
                return
            servers = [FixtureRegistry.response(r) for r in records]
            self._json(200, {"servers": servers, "metadata": {"count": len(servers)}})
            return
        for record in records:
            if (version == "latest" and record["isLatest"]) or record["server"][
                "version"
            ] == version:
                self._json(200, FixtureRegistry.response(record))
                return
        self._json(404, {"title": "Not Found", "status": 404})

    def _json(self, status: int, body: Any) -> None:
        self._send(status, json.dumps(body).encode(), "application/json")

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass  # the client stopped reading (a body over its bound): expected


@contextmanager
def registry_fixture() -> Iterator[FixtureRegistry]:
    """A :class:`FixtureRegistry` served on 127.0.0.1 until the block ends (``.url``)."""
    registry = FixtureRegistry()
    handler = type("Handler", (_Handler,), {"registry": registry})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    registry.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield registry
    finally:
        registry.release.set()
        server.shutdown()
        server.server_close()
        thread.join(10)
