"""The Content-Security-Policy a view runs under, built from its declaration (MCP Apps spec).

Without a declaration the view gets the specification's restrictive default: its own inline
scripts and styles, images and media from itself or ``data:``, and no network at all. Declared
domains widen only their directives (``connectDomains`` → ``connect-src``, ``resourceDomains`` →
scripts, styles, images, fonts, media; ``frameDomains`` → ``frame-src``; ``baseUriDomains`` →
``base-uri``); nothing undeclared is allowed, and ``object-src`` is always ``'none'``. An entry
that is not plainly one source (the daemon drops those too) never reaches the header.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["view_csp"]

_SOURCE = re.compile(
    r"^(https?://|wss?://)?(\*\.)?[A-Za-z0-9.-]+(:[0-9]{1,5}|:\*)?(/[^\s;,'\"]*)?$"
)


def _sources(declared: Any, key: str) -> list[str]:
    entries = declared.get(key) if isinstance(declared, dict) else None
    if not isinstance(entries, list):
        return []
    return [e for e in entries if isinstance(e, str) and _SOURCE.fullmatch(e)]


def view_csp(declared: Any) -> str:
    """The header value for a view whose ``_meta.ui.csp`` is ``declared`` (None: the default)."""
    resources = " ".join(_sources(declared, "resourceDomains"))
    connect = " ".join(_sources(declared, "connectDomains")) or "'none'"
    frames = " ".join(_sources(declared, "frameDomains")) or "'none'"
    base = " ".join(_sources(declared, "baseUriDomains")) or "'self'"
    extra = f" {resources}" if resources else ""
    directives = [
        "default-src 'none'",
        f"script-src 'self' 'unsafe-inline'{extra}",
        f"style-src 'self' 'unsafe-inline'{extra}",
        f"img-src 'self' data:{extra}",
        f"font-src 'self' data:{extra}",
        f"media-src 'self' data:{extra}",
        f"connect-src {connect}",
        f"frame-src {frames}",
        f"base-uri {base}",
        "object-src 'none'",
        "form-action 'none'",
    ]
    return "; ".join(directives)
