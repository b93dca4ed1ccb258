"""The sandbox and limits group of a stdio server's detail page (``sandbox``, ``limits``).

The detail page saves what is typed or switched here like its other fields (each into its
object: ``sandbox-read`` is the sandbox's ``filesystem.read``); this module lays the group out
and shows an entry's objects in it. The daemon checks every value (paths, ranges) and its
refusal shows beside the field.
"""

from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Static, Switch

from mework_ui.fields import CONTAIN_TEXT_FIELDS, show_field

__all__ = ["ContainGroup"]

SWITCHES = (("sandbox-enabled", "Sandboxed"), ("sandbox-network", "Sandbox network"))
HELP = (
    "Sandboxed: bubblewrap, with the system read-only and nothing of your home unless listed "
    "(paths separated by spaces; ~ and ${VAR} work). Limits: empty means none."
)


class ContainGroup(Vertical):
    """Switches ``#f-sandbox-enabled``, ``#f-sandbox-network``; fields ``#f-sandbox-read``,
    ``#f-sandbox-write`` and ``#f-limits-<key>``, each with its message ``#m-<field>``."""

    DEFAULT_CSS: ClassVar[str] = """
    ContainGroup { height: auto; }
    ContainGroup #contain-help { height: auto; padding: 0 1 0 2; color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        for field, label in SWITCHES:
            with Horizontal(classes="row"):
                yield Static(label, classes="label")
                yield Switch(id=f"f-{field}")
                yield Static("", id=f"m-{field}", classes="msg")
        for field, label in CONTAIN_TEXT_FIELDS:
            with Horizontal(classes="row"):
                yield Static(label, classes="label")
                yield Input(id=f"f-{field}", compact=True)
                yield Static("", id=f"m-{field}", classes="msg")
        yield Static(HELP, id="contain-help")

    def show(self, entry: dict[str, Any]) -> None:
        """The entry's sandbox and limits (the caller holds back the change events)."""
        found = entry.get("sandbox")
        sandbox: dict[str, Any] = found if isinstance(found, dict) else {}
        on = {"sandbox-enabled": bool(sandbox) and sandbox.get("enabled", True) is not False}
        on["sandbox-network"] = bool(sandbox.get("network", False))
        for field, _label in SWITCHES:
            self.query_one(f"#f-{field}", Switch).value = on[field]
            self.query_one(f"#m-{field}", Static).update("on" if on[field] else "off")
        for field, _label in CONTAIN_TEXT_FIELDS:
            self.query_one(f"#f-{field}", Input).value = show_field(field, entry)
