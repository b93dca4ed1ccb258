"""The OAuth group of the detail page: an HTTP entry's ``oauth`` object seen and edited.

Against the shared real daemon: each edit is seen in the settings file, a value the daemon
refuses is shown beside its field with the file unchanged, and the client secret is masked.
"""

from typing import Any

import pytest

pytest.importorskip("textual")

from mework_ui.app import MeworkApp
from mework_ui.detail import DetailScreen
from mework_ui.fields import FieldError, oauth_with, parse_field, show_field
from mework_ui.oauth_group import OAuthGroup
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Select, Switch

from tests.ui.conftest import UiDaemon
from tests.ui.helpers import add_servers, entry, everything, text, type_into, until

pytestmark = pytest.mark.anyio

HTTP = {"type": "streamable_http", "url": "http://127.0.0.1:9/mcp"}


def oauth_in(daemon: UiDaemon) -> Any:
    return (entry(daemon.settings, "oa-http") or {}).get("oauth")


async def test_oauth_fields_edit_the_file(ui_daemon: UiDaemon) -> None:
    secret = {"clientSecret": "oa-s3cret"}
    await add_servers(
        ui_daemon.socket, {"oa-http": {**HTTP, "oauth": secret}, "oa-stdio": everything()}
    )
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "oa-stdio" in app.screen.query_one(DataTable).rows)
        await app.push_screen(DetailScreen("oa-stdio"))
        await until(pilot, lambda: app.screen.query_one("#f-command", Input).value != "")
        assert not app.screen.query_one(OAuthGroup).display  # only an HTTP server logs in
        await app.pop_screen()
        await app.push_screen(DetailScreen("oa-http"))
        await masked_secret(pilot, app)
        await text_fields(pilot, app, ui_daemon)
        await refused_port(pilot, app, ui_daemon)
        await grant_and_switch(pilot, app, ui_daemon)


async def masked_secret(pilot: Pilot[Any], app: MeworkApp) -> None:
    field = app.screen.query_one("#f-oauth-clientSecret", Input)
    await until(pilot, lambda: field.value == "oa-s3cret")
    assert app.screen.query_one(OAuthGroup).display
    assert field.password  # masked until revealed, with the page's other secrets
    assert "masked" in text(app, "#m-oauth-clientSecret")
    await pilot.press("ctrl+r")
    assert not field.password


async def text_fields(pilot: Pilot[Any], app: MeworkApp, daemon: UiDaemon) -> None:
    # Two fields submitted at once: each patch is the whole object, built on the last one
    # saved, so neither drops the other (nor the secret).
    client_id = app.screen.query_one("#f-oauth-clientId", Input)
    scopes = app.screen.query_one("#f-oauth-scopes", Input)
    client_id.value, scopes.value = "oa-client", " read  write "
    await client_id.action_submit()
    await scopes.action_submit()
    await until(pilot, lambda: oauth_in(daemon).get("clientId") == "oa-client")
    await until(pilot, lambda: oauth_in(daemon).get("scopes") == ["read", "write"])
    assert "✓ saved" in text(app, "#m-oauth-clientId")
    assert oauth_in(daemon) == {
        "clientSecret": "oa-s3cret",
        "clientId": "oa-client",
        "scopes": ["read", "write"],
    }


async def refused_port(pilot: Pilot[Any], app: MeworkApp, daemon: UiDaemon) -> None:
    before = entry(daemon.settings, "oa-http")
    port = app.screen.query_one("#f-oauth-redirectPort", Input)
    await type_into(pilot, port, "eighty")
    assert "✘ a port number" in text(app, "#m-oauth-redirectPort")  # refused before sending
    await type_into(pilot, port, "70000")
    await until(pilot, lambda: "not saved" in text(app, "#m-oauth-redirectPort"))
    reason = text(app, "#m-oauth-redirectPort")  # the daemon's own words, said once
    assert "redirectPort: expected a port number" in reason
    assert reason.count("expected") == 1
    assert entry(daemon.settings, "oa-http") == before
    await type_into(pilot, port, "8765")
    await until(pilot, lambda: oauth_in(daemon).get("redirectPort") == 8765)


async def grant_and_switch(pilot: Pilot[Any], app: MeworkApp, daemon: UiDaemon) -> None:
    grant = app.screen.query_one("#f-oauth-grant", Select)
    await type_into(pilot, app.screen.query_one("#f-oauth-clientSecret", Input), "")
    await until(pilot, lambda: "clientSecret" not in oauth_in(daemon))
    grant.value = "client_credentials"  # a client id and no credential: refused
    await until(pilot, lambda: "not saved" in text(app, "#m-oauth-grant"))
    assert "grant" not in oauth_in(daemon)
    grant.value = "authorization_code"
    await until(pilot, lambda: text(app, "#m-oauth-grant") == "")
    await type_into(pilot, app.screen.query_one("#f-oauth-clientSecret", Input), "oa-s3cret")
    await until(pilot, lambda: oauth_in(daemon).get("clientSecret") == "oa-s3cret")
    grant.value = "client_credentials"
    await until(pilot, lambda: oauth_in(daemon).get("grant") == "client_credentials")
    kept = oauth_in(daemon)
    app.screen.query_one("#f-oauth", Switch).value = False
    await until(pilot, lambda: oauth_in(daemon) is False)
    assert not app.screen.query_one("#oauth-fields").display  # false has nothing to edit
    assert "never logs in" in text(app, "#m-oauth")
    app.screen.query_one("#f-oauth", Switch).value = True  # the object switched off comes back
    await until(pilot, lambda: oauth_in(daemon) == kept)
    assert app.screen.query_one("#oauth-fields").display


async def test_a_new_http_server_keeps_its_oauth_draft(ui_daemon: UiDaemon) -> None:
    app = MeworkApp(str(ui_daemon.socket))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(DetailScreen(None))
        screen = app.screen
        screen.query_one("#f-type", Select).value = "streamable_http"
        await until(pilot, lambda: screen.query_one(OAuthGroup).display)
        assert screen.query_one("#row-url").display  # a draft's type shows its own fields
        assert not screen.query_one("#row-command").display
        await type_into(pilot, screen.query_one("#f-name", Input), "oa-new")
        await type_into(pilot, screen.query_one("#f-oauth-clientId", Input), "oa-new-client")
        await until(pilot, lambda: "kept as a draft" in text(app, "#m-oauth-clientId"))
        await type_into(pilot, screen.query_one("#f-url", Input), HTTP["url"])
        await until(pilot, lambda: entry(ui_daemon.settings, "oa-new") is not None)
        assert entry(ui_daemon.settings, "oa-new")["oauth"] == {"clientId": "oa-new-client"}
        await until(pilot, lambda: "✓ saved" in text(app, "#m-oauth-clientId"))


def test_oauth_fields_as_text() -> None:
    stored = {"oauth": {"clientId": "c", "scopes": ["a", "b"], "redirectPort": 8765}}
    assert show_field("oauth-scopes", stored) == "a b"
    assert show_field("oauth-redirectPort", stored) == "8765"
    assert show_field("oauth-clientId", {"oauth": False}) == ""
    assert parse_field("oauth-scopes", "a  b") == ["a", "b"]
    assert parse_field("oauth-redirectPort", " 8765 ") == 8765
    assert parse_field("oauth-clientId", " ") is None  # an emptied field removes the key
    with pytest.raises(FieldError, match="a port number"):
        parse_field("oauth-redirectPort", "eighty")
    assert oauth_with(stored, "oauth-clientId", None) == {
        "scopes": ["a", "b"],
        "redirectPort": 8765,
    }
    assert oauth_with({"oauth": {"clientId": "c"}}, "oauth-clientId", None) is None  # key goes
    assert oauth_with({"oauth": False}, "oauth-clientId", "c") == {"clientId": "c"}
