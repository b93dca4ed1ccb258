"""Checking what a server sent as an MCP Apps view, and what a view sends for the chat (pure).

A view's resource must be ``text/html;profile=mcp-app`` HTML (``text``, or a base64 ``blob``)
within :data:`~meworkd.mcp.MAX_VIEW_BYTES`; its ``_meta.ui`` declares a CSP (domains only:
an entry that could break out of a CSP directive is dropped and said), permissions, a
dedicated domain and a border preference. A view's chat messages and links are checked here
before they become events.
"""

import base64
import binascii
import re
from typing import Any
from urllib.parse import urlsplit

import msgspec

from meworkd.base.errors import InvalidParams, ServerUnavailable
from meworkd.mcp import APP_MIME_TYPE, MAX_VIEW_BYTES

__all__ = [
    "CSP_KEYS",
    "MAX_APP_MESSAGE_BYTES",
    "PERMISSIONS",
    "check_link",
    "check_view",
    "check_view_uri",
    "content_blocks",
    "structured",
]

CSP_KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
PERMISSIONS = ("camera", "microphone", "geolocation", "clipboardWrite")
MAX_APP_MESSAGE_BYTES = 256 * 1024  # one ui/message or ui/update-model-context
# A source expression of CSP: a scheme-host(-port) with an optional wildcard label, nothing
# that ends a directive (";", ","), quotes a keyword, or separates sources (whitespace).
_SOURCE = re.compile(
    r"^(https?://|wss?://)?(\*\.)?[A-Za-z0-9.-]+(:[0-9]{1,5}|:\*)?(/[^\s;,'\"]*)?$"
)


def _invalid(server: str, reason: str, message: str) -> ServerUnavailable:
    return ServerUnavailable(message, server=server, reason=reason)


def check_view_uri(server: str, uri: str | None) -> str:
    """``uri`` when it is a ``ui://`` URI; a clear refusal otherwise (nothing is read)."""
    if not uri or not uri.startswith("ui://"):
        raise _invalid(
            server,
            "view_not_ui_uri",
            f"the tool's view {uri!r} is not a ui:// resource; MCP Apps views must be",
        )
    return uri


def check_view(server: str, uri: str, reply: dict[str, Any]) -> dict[str, Any]:
    """The view in a ``resources/read`` reply: ``{html, mimeType, csp, permissions, domain,
    prefersBorder, meta, warnings}``.

    Raises:
        ServerUnavailable: reason ``view_missing``, ``view_wrong_mime_type``,
            ``view_not_html`` or ``view_too_large``.
    """
    contents = [c for c in reply.get("contents", []) if isinstance(c, dict)]
    content = next((c for c in contents if c.get("uri") == uri), contents[0] if contents else None)
    if content is None:
        raise _invalid(server, "view_missing", f"the server sent no contents for {uri}")
    mime = content.get("mimeType")
    if mime != APP_MIME_TYPE:
        raise _invalid(
            server,
            "view_wrong_mime_type",
            f"the view {uri} is {mime!r}, not {APP_MIME_TYPE!r}; it is not shown",
        )
    html = _html(server, uri, content)
    meta = content.get("_meta", content.get("meta"))
    meta = meta if isinstance(meta, dict) else {}
    ui: dict[str, Any] = meta["ui"] if isinstance(meta.get("ui"), dict) else {}
    warnings: list[str] = []
    domain = ui.get("domain")
    border = ui.get("prefersBorder")
    return {
        "html": html,
        "mimeType": mime,
        "csp": _csp(ui.get("csp"), warnings),
        "permissions": _permissions(ui.get("permissions")),
        "domain": domain if isinstance(domain, str) else None,
        "prefersBorder": border if isinstance(border, bool) else None,
        "meta": meta,
        "warnings": warnings,
    }


def _html(server: str, uri: str, content: dict[str, Any]) -> str:
    text = content.get("text")
    if isinstance(text, str):
        size = len(text.encode("utf-8", "surrogatepass"))
    elif isinstance(content.get("blob"), str):
        try:
            data = base64.b64decode(content["blob"], validate=True)
            size, text = len(data), data.decode("utf-8")
        except (binascii.Error, ValueError):
            raise _invalid(
                server, "view_not_html", f"the view {uri} is not UTF-8 HTML in base64"
            ) from None
    else:
        raise _invalid(server, "view_not_html", f"the view {uri} has neither text nor blob")
    if size > MAX_VIEW_BYTES:
        raise _invalid(
            server,
            "view_too_large",
            f"the view {uri} is {size} bytes, over the bound of {MAX_VIEW_BYTES}; it is not shown",
        )
    return text


def _csp(declared: object, warnings: list[str]) -> dict[str, list[str]] | None:
    """The declared CSP domains, each list kept to entries that are plainly one source."""
    if not isinstance(declared, dict):
        return None
    out: dict[str, list[str]] = {}
    for key in CSP_KEYS:
        entries = declared.get(key)
        if not isinstance(entries, list):
            continue
        kept = [e for e in entries if isinstance(e, str) and _SOURCE.fullmatch(e)]
        if len(kept) != len(entries):
            warnings.append(f"csp.{key}: {len(entries) - len(kept)} entries dropped (not a source)")
        out[key] = kept
    return out


def _permissions(declared: object) -> dict[str, dict[str, Any]] | None:
    if not isinstance(declared, dict):
        return None
    return {key: {} for key in PERMISSIONS if isinstance(declared.get(key), dict)}


def content_blocks(content: object, field: str) -> list[dict[str, Any]]:
    """A view's message content: one block or a list of blocks (each an object with a string
    ``type``), within :data:`MAX_APP_MESSAGE_BYTES` encoded."""
    blocks = [content] if isinstance(content, dict) else content
    if not isinstance(blocks, list) or not all(
        isinstance(b, dict) and isinstance(b.get("type"), str) for b in blocks
    ):
        raise InvalidParams(f"{field} must be a content block or a list of them", field=field)
    if len(msgspec.json.encode(blocks)) > MAX_APP_MESSAGE_BYTES:
        raise InvalidParams(f"{field} is over {MAX_APP_MESSAGE_BYTES} bytes", field=field)
    return blocks


def structured(value: object, field: str) -> dict[str, Any]:
    """A view's ``structuredContent``: an object, within :data:`MAX_APP_MESSAGE_BYTES` encoded."""
    if not isinstance(value, dict):
        raise InvalidParams(f"{field} must be an object", field=field)
    if len(msgspec.json.encode(value)) > MAX_APP_MESSAGE_BYTES:
        raise InvalidParams(f"{field} is over {MAX_APP_MESSAGE_BYTES} bytes", field=field)
    return value


def check_link(url: str) -> str:
    """``url`` when it is an absolute http(s) URL (meworkd never opens it: frontends do)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or len(url) > 8192:
        raise InvalidParams("url must be an absolute http or https URL", field="url")
    return url
