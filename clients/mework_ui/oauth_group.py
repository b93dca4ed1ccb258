"""The OAuth group of an HTTP server's detail page: the login switch and the ``oauth`` fields.

The detail page saves what is typed here like its other fields; this module lays the group out
and shows an entry's ``oauth`` (``false``, absent, or an object) in it.
"""

from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Select, Static, Switch

from mework_ui.fields import OAUTH_TEXT_FIELDS, SECRET_FIELDS, show_field

__all__ = ["DEFAULT_GRANT", "MASKED", "OAuthGroup", "grant_of"]

MASKED = "masked: ^r reveals"
DEFAULT_GRANT = "authorization_code"
GRANTS = [(DEFAULT_GRANT, DEFAULT_GRANT), ("client_credentials", "client_credentials")]
SWITCH_WORDS = {True: "on", False: "off: never logs in"}
HELP = (
    "Empty fields: discovery and dynamic registration. A private key and its signing "
    "algorithm (a signed JWT client assertion) are set in the settings file "
    "(meworkctl servers edit NAME); the fields here keep them."
)


def grant_of(entry: dict[str, Any]) -> str:
    oauth = entry.get("oauth")
    return str(oauth.get("grant", DEFAULT_GRANT)) if isinstance(oauth, dict) else DEFAULT_GRANT


class OAuthGroup(Vertical):
    """Switch ``#f-oauth``, then fields ``#f-oauth-<key>`` with messages ``#m-oauth-<key>``."""

    DEFAULT_CSS: ClassVar[str] = """
    OAuthGroup { height: auto; }
    OAuthGroup .oauth-label { width: 22; padding: 0 1 0 2; }
    OAuthGroup #oauth-fields { height: auto; }
    OAuthGroup #oauth-help { height: auto; padding: 0 1 0 2; color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        with Horizontal(classes="row"):
            yield Static("OAuth login", classes="label")
            yield Switch(id="f-oauth")
            yield Static("", id="m-oauth", classes="msg")
        with Vertical(id="oauth-fields"):
            for field, label in OAUTH_TEXT_FIELDS:
                if field == "oauth-clientMetadataUrl":  # the grant goes before it, as in the file
                    yield from self.grant_row()
                with Horizontal(classes="row"):
                    yield Static(label, classes="oauth-label")
                    yield Input(id=f"f-{field}", password=field in SECRET_FIELDS, compact=True)
                    yield Static(
                        MASKED if field in SECRET_FIELDS else "", id=f"m-{field}", classes="msg"
                    )
            yield Static(HELP, id="oauth-help")

    def grant_row(self) -> ComposeResult:
        with Horizontal(classes="row"):
            yield Static("Grant", classes="oauth-label")
            yield Select(
                GRANTS, value=DEFAULT_GRANT, allow_blank=False, id="f-oauth-grant", compact=True
            )
            yield Static("", id="m-oauth-grant", classes="msg")

    def show(self, entry: dict[str, Any]) -> None:
        """Show ``entry``'s oauth; the caller holds back the widgets' Changed messages."""
        for field, _label in OAUTH_TEXT_FIELDS:
            self.query_one(f"#f-{field}", Input).value = show_field(field, entry)
        self.query_one("#f-oauth-grant", Select).value = grant_of(entry)
        on = entry.get("oauth") is not False
        self.query_one("#f-oauth", Switch).value = on
        self.show_switch(on)

    def show_switch(self, on: bool) -> None:
        self.query_one("#m-oauth", Static).update(SWITCH_WORDS[on])
        self.query_one("#oauth-fields").display = on  # false has no fields to edit
