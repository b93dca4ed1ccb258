"""An MCP Apps fixture server built on the SDK's ``mcp.server.apps`` (stdio).

``show_counter`` (model and view) has the view ``ui://counter/view.html`` (``apps_view.html``
beside this file); ``bump`` is for the view only (visibility ``["app"]``) and counts its calls;
``model_only`` is for the model only; ``supports_apps`` says whether the client advertised MCP
Apps (``client_supports_apps``). Tools whose views are broken on purpose: ``wrong_mime``
(a ``ui://`` resource served as ``text/html``), ``huge_view`` (over 2 MiB), ``not_ui`` (an
``https://`` resource URI).
"""

from pathlib import Path

from mcp.server.apps import Apps, ResourceCsp, client_supports_apps
from mcp.server.mcpserver import Context, MCPServer

VIEW = "ui://counter/view.html"
HTML = (Path(__file__).with_name("apps_view.html")).read_text(encoding="utf-8")

apps = Apps()
bumped = 0


@apps.tool(resource_uri=VIEW, description="Show a counter view")
def show_counter(start: int = 0) -> str:
    return f"counter starts at {start}"


@apps.tool(resource_uri=VIEW, visibility=["app"], description="Bump the counter (view only)")
def bump() -> str:
    global bumped
    bumped += 1
    return f"bumped {bumped}"


@apps.tool(resource_uri=VIEW, visibility=["model"], description="For the model only")
def model_only() -> str:
    return "model only"


apps.add_html_resource(VIEW, HTML, csp=ResourceCsp(connect_domains=[]), prefers_border=True)
apps.add_html_resource("ui://counter/huge.html", "<!doctype html>" + "x" * (2 * 1024 * 1024 + 1))
server = MCPServer("apps-fixture", extensions=[apps])


@server.tool(description="Whether the client advertised MCP Apps")
def supports_apps(ctx: Context) -> str:
    return "apps: yes" if client_supports_apps(ctx) else "apps: no"


@server.tool(meta={"ui": {"resourceUri": "ui://counter/wrong.html"}})
def wrong_mime() -> str:
    return "a view with the wrong MIME type"


@server.resource("ui://counter/wrong.html", mime_type="text/html")
def wrong_view() -> str:
    return "<!doctype html><p>plain html</p>"


@server.tool(meta={"ui": {"resourceUri": "ui://counter/huge.html"}})
def huge_view() -> str:
    return "a view over the bound"


@server.tool(meta={"ui": {"resourceUri": "https://example.com/view.html"}})
def not_ui() -> str:
    return "a view that is not ui://"


if __name__ == "__main__":
    server.run("stdio")
