"""The stdlib-only twin of ``apps_view.py``: the same MCP Apps tools, views and answers, no SDK.

``python tests/servers/apps_fake.py`` serves what the SDK-based ``apps_view.py`` serves (its
tools with their ``_meta.ui``, the views ``ui://counter/view.html`` (``apps_view.html``),
``ui://counter/huge.html`` and ``ui://counter/wrong.html``, ``bump``'s count, ``supports_apps``
reading the client's advertised extension) in the handshake era, as newline-delimited JSON-RPC
on stdin/stdout, through ``fake.py``'s loop. It starts in milliseconds where ``apps_view.py``
spends over half a second of CPU importing the SDK; ``tests/test_fake_server.py`` checks that
both answer alike, and the tests about the SDK's own MCP Apps side keep ``apps_view.py``.
Arguments are not validated: ``start`` is taken as an integer, as pydantic's lax mode does.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import fake  # the stdlib fake's JSON-RPC loop (same folder)

EXTENSION_ID = "io.modelcontextprotocol/ui"
APP_MIME_TYPE = "text/html;profile=mcp-app"
VIEW = "ui://counter/view.html"
HUGE = "ui://counter/huge.html"
WRONG = "ui://counter/wrong.html"
HTML = Path(__file__).with_name("apps_view.html").read_text(encoding="utf-8")
VIEW_META = {"ui": {"csp": {"connectDomains": []}, "prefersBorder": True}}


def _tool(name: str, description: str, ui: dict[str, Any] | None, **props: Any) -> dict[str, Any]:
    """A tool as the SDK's MCPServer lists one that returns ``str``."""
    listed: dict[str, Any] = {
        "description": description,
        "inputSchema": {"properties": props, "type": "object", "title": f"{name}Arguments"},
        "name": name,
        "outputSchema": {
            "properties": {"result": {"title": "Result", "type": "string"}},
            "required": ["result"],
            "type": "object",
            "title": f"{name}Output",
        },
    }
    return listed if ui is None else {"_meta": {"ui": ui}, **listed}


TOOLS = [
    _tool(
        "show_counter",
        "Show a counter view",
        {"resourceUri": VIEW},
        start={"default": 0, "title": "Start", "type": "integer"},
    ),
    _tool("bump", "Bump the counter (view only)", {"resourceUri": VIEW, "visibility": ["app"]}),
    _tool("model_only", "For the model only", {"resourceUri": VIEW, "visibility": ["model"]}),
    _tool("supports_apps", "Whether the client advertised MCP Apps", None),
    _tool("wrong_mime", "", {"resourceUri": WRONG}),
    _tool("huge_view", "", {"resourceUri": HUGE}),
    _tool("not_ui", "", {"resourceUri": "https://example.com/view.html"}),
]
RESOURCES = [
    {"_meta": VIEW_META, "mimeType": APP_MIME_TYPE, "name": VIEW, "uri": VIEW},
    {"mimeType": APP_MIME_TYPE, "name": HUGE, "uri": HUGE},
    {"description": "", "mimeType": "text/html", "name": "wrong_view", "uri": WRONG},
]
CONTENTS = {
    VIEW: {"_meta": VIEW_META, "mimeType": APP_MIME_TYPE, "text": HTML, "uri": VIEW},
    HUGE: {
        "mimeType": APP_MIME_TYPE,
        "text": "<!doctype html>" + "x" * (2 * 1024 * 1024 + 1),
        "uri": HUGE,
    },
    WRONG: {"mimeType": "text/html", "text": "<!doctype html><p>plain html</p>", "uri": WRONG},
}
LISTS: dict[str, tuple[str, list[Any]]] = {
    "tools/list": ("tools", TOOLS),
    "resources/list": ("resources", RESOURCES),
    "resources/templates/list": ("resourceTemplates", []),
    "prompts/list": ("prompts", []),
}
ANSWERS = {
    "model_only": "model only",
    "wrong_mime": "a view with the wrong MIME type",
    "huge_view": "a view over the bound",
    "not_ui": "a view that is not ui://",
}


def _result(text: str) -> dict[str, Any]:
    return {
        "content": [{"text": text, "type": "text"}],
        "isError": False,
        "structuredContent": {"result": text},
    }


class AppsServer(fake.Server):
    """fake.py's loop (threads, cancels, ordered answers) with apps_view's methods."""

    def __init__(self) -> None:
        self.write_lock = threading.Lock()
        self.cancelled: dict[Any, threading.Event] = {}
        self.bumped = 0
        self.supports_apps = False

    def result(self, mid: Any, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        if method == "initialize":
            extensions = (params.get("capabilities") or {}).get("extensions") or {}
            mime_types = (extensions.get(EXTENSION_ID) or {}).get("mimeTypes")
            self.supports_apps = isinstance(mime_types, list) and APP_MIME_TYPE in mime_types
            asked = params.get("protocolVersion")
            versions = fake.PROTOCOL_VERSIONS
            return {
                "capabilities": {
                    "prompts": {"listChanged": False},
                    "resources": {"listChanged": False, "subscribe": False},
                    "tools": {"listChanged": False},
                },
                "protocolVersion": asked if asked in versions else versions[-1],
                "serverInfo": {"name": "apps-fixture", "version": ""},
            }
        if method in LISTS:
            key, items = LISTS[method]
            return {key: items}
        if method == "ping":
            return {}
        if method == "resources/read":
            uri = str(params.get("uri"))
            if uri not in CONTENTS:
                raise fake.Failure(fake.INVALID_PARAMS, f"Unknown resource: {uri}", {"uri": uri})
            return {"contents": [CONTENTS[uri]]}
        if method == "tools/call":
            return self.call_tool(str(params.get("name")), params.get("arguments") or {})
        raise fake.Failure(fake.METHOD_NOT_FOUND, "Method not found", method)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if name == "show_counter":
            return _result(f"counter starts at {int(arguments.get('start', 0))}")
        if name == "bump":
            self.bumped += 1
            return _result(f"bumped {self.bumped}")
        if name == "supports_apps":
            return _result("apps: yes" if self.supports_apps else "apps: no")
        if name in ANSWERS:
            return _result(ANSWERS[name])
        return {"content": [{"text": f"Unknown tool: {name}", "type": "text"}], "isError": True}


if __name__ == "__main__":
    AppsServer().serve()
