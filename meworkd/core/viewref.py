"""A tool's MCP Apps view reference (``_meta.ui``): where its view is and who may call it.

MCP Apps (extension ``io.modelcontextprotocol/ui``, stable 2026-01-26) lets a tool name a
``ui://`` resource, the HTML view a host renders beside the tool's result, and say with
``visibility`` whether the model, the view (``"app"``), or both may call it. Pure: the
turn's catalog, ``servers.tools``, Test connection and the ``apps.*`` methods read it alike.
"""

from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_VISIBILITY", "ViewRef", "view_ref", "view_ui"]

DEFAULT_VISIBILITY = ("model", "app")
_KNOWN_VISIBILITY = frozenset(DEFAULT_VISIBILITY)
# The superseded flat key of early drafts, still sent by the TypeScript SDK beside ``ui``.
_FLAT_KEY = "ui/resourceUri"


@dataclass(frozen=True, slots=True)
class ViewRef:
    """``resource_uri``: None for a tool with a visibility but no view (an app-only helper)."""

    resource_uri: str | None
    visibility: tuple[str, ...] = DEFAULT_VISIBILITY

    @property
    def for_model(self) -> bool:
        return "model" in self.visibility

    @property
    def for_app(self) -> bool:
        return "app" in self.visibility

    def wire(self) -> dict[str, Any]:
        """``{resourceUri, visibility}`` as frontends get it (``resourceUri`` may be null)."""
        return {"resourceUri": self.resource_uri, "visibility": list(self.visibility)}


def view_ref(meta: object) -> ViewRef | None:
    """The view reference in a tool's ``_meta``, or None when it names none.

    A visibility that is not a list of strings counts as the default; unknown entries are
    dropped (a later revision may add audiences this one does not serve).
    """
    if not isinstance(meta, dict):
        return None
    ui = meta.get("ui")
    ui = ui if isinstance(ui, dict) else {}
    uri = ui.get("resourceUri", meta.get(_FLAT_KEY))
    uri = uri if isinstance(uri, str) and uri else None
    raw = ui.get("visibility")
    if uri is None and raw is None:
        return None
    visibility: tuple[str, ...] = DEFAULT_VISIBILITY
    if isinstance(raw, list) and all(isinstance(v, str) for v in raw):
        visibility = tuple(v for v in DEFAULT_VISIBILITY if v in raw)
    return ViewRef(uri, visibility)


def view_ui(meta: object) -> dict[str, Any] | None:
    """The ``ui`` field a frontend shows for a tool (its view reference), or None."""
    ref = view_ref(meta)
    return None if ref is None else ref.wire()
