"""A server's detail page: every field saved on change, Test connection, and the tabs."""

from typing import Any, ClassVar, cast

import anyio
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Select, Static, Switch, TabbedContent, TabPane

from mework_ui.fields import (
    OAUTH,
    OAUTH_TEXT_FIELDS,
    SECRET_FIELDS,
    TEXT_FIELDS,
    FieldError,
    oauth_with,
    parse_field,
    show_field,
)
from mework_ui.inspection import PromptsPane, ResourcesPane
from mework_ui.link import describe
from mework_ui.model import HasModel, Model
from mework_ui.oauth_group import MASKED, OAuthGroup, grant_of
from mework_ui.rules import RulesPane
from mework_ui.tabs import LogsPane, Pane, ToolsPane
from mework_ui.words import cost_text, failure_text, server_status, test_summary

__all__ = ["DetailScreen"]

PANES: dict[str, type[Pane]] = {
    "tools": ToolsPane,
    "rules": RulesPane,
    "prompts": PromptsPane,
    "resources": ResourcesPane,
    "logs": LogsPane,
}
TRANSPORTS = [("stdio", "stdio"), ("streamable_http", "streamable_http")]


class DetailScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        # Not a priority binding: a tab's pane hides it from the footer with its own (tabs.Pane).
        Binding("ctrl+t", "test", "Test", tooltip="Test connection"),
        Binding("ctrl+n", "tab(1)", "Tab", priority=True, tooltip="Next tab"),
        Binding("ctrl+b", "tab(-1)", "Prev tab", priority=True, show=False),
        Binding("ctrl+r", "reveal", "Reveal secrets", priority=True, show=False),
        Binding("ctrl+l", "login", "Login", show=False, priority=True),
    ]

    def __init__(self, name: str | None, tab: str = "general") -> None:
        super().__init__()
        self.server, self.tab = name, tab
        self.entry: dict[str, Any] = {"type": "stdio", "enabled": True}
        self.revealed = False
        self.saving = anyio.Lock()  # one patch at a time: an oauth patch builds on the last
        self.kept_oauth: dict[str, Any] | None = None  # the object "OAuth login" off replaced
        self.refused: set[str] = set()  # fields showing why their text was not saved
        self.loaded_cost: Any = None  # servers.get's cost, until servers.list has one

    @property
    def mework(self) -> Model:
        return cast(HasModel, self.app).model

    def compose(self) -> ComposeResult:
        yield Static(self.mework.bar_text(), id="topbar")
        yield Static("", id="head")
        with TabbedContent(initial=self.tab):
            with TabPane("General", id="general"), VerticalScroll():
                yield from self.general_fields()
            for tab in PANES:  # filled when first shown: the page opens fast, Logs follow later
                yield TabPane(tab.capitalize(), id=tab)
        yield Footer(compact=True, show_command_palette=False)

    def general_fields(self) -> ComposeResult:
        with Horizontal(classes="row"):
            yield Static("Type", classes="label")
            yield Select(TRANSPORTS, value="stdio", allow_blank=False, id="f-type", compact=True)
        for key, label, _transport in TEXT_FIELDS:
            with Horizontal(classes="row", id=f"row-{key}"):
                yield Static(label, classes="label")
                yield Input(id=f"f-{key}", password=key in SECRET_FIELDS, compact=True)
                yield Static(MASKED if key in SECRET_FIELDS else "", id=f"m-{key}", classes="msg")
        for key, label in (("enabled", "Enabled"), ("longRunning", "Long running")):
            with Horizontal(classes="row"):
                yield Static(label, classes="label")
                yield Switch(id=f"f-{key}")
                yield Static("", id=f"m-{key}", classes="msg")
        yield Static("", id="auth")
        yield Static("", id="verdict")
        yield Static("", id="cost")
        yield OAuthGroup()  # below the verdict: Test connection's answer stays in view

    @on(TabbedContent.TabActivated)
    def fill_tab(self, event: TabbedContent.TabActivated) -> None:
        self.fill(str(event.pane.id))

    def fill(self, tab: str) -> None:
        pane = self.query_one(f"#{tab}", TabPane)
        if tab in PANES and not pane.children:
            pane.mount(PANES[tab](self.server))

    def on_mount(self) -> None:
        self.fill(self.tab)
        if self.server is None:
            self.query_one("#f-name", Input).focus()
            self.show_entry()
        else:
            self.load()

    @work(group="detail")
    async def load(self) -> None:
        """From ``reveal: true``: a patch written from masked values would store the mask."""
        got = await self.mework.call("servers.get", {"name": self.server, "reveal": True})
        if got is not None:
            self.loaded_cost = got.get("cost")
            self.entry = {**got.get("server", {}), **{"name": got["name"]}}
            self.entry.setdefault("type", got.get("type", "stdio"))
            self.entry.setdefault("enabled", got.get("enabled", True))
            self.show_entry()

    def show_entry(self) -> None:
        with self.prevent(Input.Changed, Select.Changed, Switch.Changed):
            for key, _label, _transport in TEXT_FIELDS:
                self.query_one(f"#f-{key}", Input).value = show_field(key, self.entry)
            self.query_one("#f-type", Select).value = self.entry.get("type", "stdio")
            for key in ("enabled", "longRunning"):
                self.query_one(f"#f-{key}", Switch).value = bool(self.entry.get(key, False))
                self.set_msg(key, "on" if self.entry.get(key) else "off")
            self.query_one(OAuthGroup).show(self.entry)
        self.show_transport()
        self.refresh_model()

    def show_transport(self) -> None:
        transport = self.entry.get("type", "stdio")
        for key, _label, wanted in TEXT_FIELDS:
            self.query_one(f"#row-{key}").display = wanted in (None, transport)
        self.query_one(OAuthGroup).display = transport == "streamable_http"

    def refresh_model(self) -> None:
        app, name = self.mework, self.server
        entry = app.servers.get(name or "")
        if entry is None:
            head = "‹ new server: type a name and a command or URL, Enter saves each field"
        else:
            info = entry.get("serverInfo") or {}
            about = f" · {info.get('name')} {info.get('version', '')}" if info else ""
            status = server_status(entry, app.failures.get(str(name)))
            head = f"‹ {name} · {entry.get('type')} · {status}{about}"
        self.query_one("#head", Static).update(head)
        verdict = ""
        if name in app.failures:
            verdict = failure_text(app.failures[str(name)])
        elif name in app.tests:
            verdict = test_summary(app.tests[str(name)])
        self.query_one("#verdict", Static).update(verdict)
        cost = (entry or {}).get("cost") or self.loaded_cost
        said = cost_text(cost)
        self.query_one("#cost", Static).update(said)
        self.query_one("#cost", Static).display = bool(said)  # no empty line before it is known
        auth = entry.get("auth") if entry else None
        url = app.login_urls.get(str(name))
        self.query_one("#auth", Static).update(_auth_line(auth, url))
        for pane in (ToolsPane, RulesPane, PromptsPane, ResourcesPane):
            for widget in self.query(pane):
                widget.refresh_model()

    def set_msg(self, key: str, text: str) -> None:
        if text.endswith("(not saved)"):
            self.refused.add(key)
        else:
            self.refused.discard(key)
        for msg in self.query(f"#m-{key}"):
            if isinstance(msg, Static):
                msg.update(text)

    @on(Input.Changed, ".row Input")
    def typed(self, event: Input.Changed) -> None:
        """A refusal goes once the text is back to what is saved, or reads as a valid value
        (the daemon's own checks run when it is committed)."""
        key = (event.input.id or "")[2:]
        if key not in self.refused:
            return
        try:
            parse_field(key, event.value)
        except FieldError:
            if show_field(key, self.entry) != event.value:
                return
        self.set_msg(key, "")

    @on(Input.Submitted)
    @on(Input.Blurred)
    def commit_text(self, event: Input.Submitted | Input.Blurred) -> None:
        key = (event.input.id or "")[2:]
        if show_field(key, self.entry) == event.value:
            if key in self.refused:
                self.set_msg(key, "")  # back to what is saved: the refusal no longer applies
            return  # unchanged: every write rewrites and reloads the file, so write only changes
        try:
            value = parse_field(key, event.value)
        except FieldError as exc:
            self.set_msg(key, f"✘ {exc} (not saved)")
            return
        self.save(key, value)

    @on(Select.Changed, "#f-type")
    def commit_type(self, event: Select.Changed) -> None:
        if event.value != self.entry.get("type"):
            self.save("type", event.value)

    @on(Select.Changed, "#f-oauth-grant")
    def commit_grant(self, event: Select.Changed) -> None:
        if event.value == grant_of(self.entry):
            self.set_msg("oauth-grant", "")  # back to the saved one: a refusal no longer applies
        else:
            self.save("oauth-grant", event.value)

    @on(Switch.Changed)
    def commit_switch(self, event: Switch.Changed) -> None:
        key = (event.switch.id or "")[2:]
        if key == "oauth":
            self.switch_oauth(event.value)
            return
        self.set_msg(key, "on" if event.value else "off")
        self.save(key, event.value)

    def switch_oauth(self, on: bool) -> None:
        """Off writes ``false``; on brings back the object switched off on this page, else none."""
        current = self.entry.get("oauth")
        if not on and isinstance(current, dict):
            self.kept_oauth = current
        self.query_one(OAuthGroup).show_switch(on)
        self.save("oauth", self.kept_oauth if on else False)

    @work(group="save")
    async def save(self, field: str, value: Any) -> None:
        """One patch per committed field; the daemon's verdict is shown beside it.

        An ``oauth-*`` field patches the whole ``oauth`` object, built from the last one saved.
        """
        async with self.saving:
            key = "oauth" if field.startswith(OAUTH) else field
            if key != field:
                value = oauth_with(self.entry, field, value)
            await self.send_patch(field, key, value)

    async def send_patch(self, field: str, key: str, value: Any) -> None:
        """Patch ``key`` (a rename for the name, an add for a draft); the verdict by ``field``."""
        draft = {**self.entry, key: value}
        try:
            if self.server is None:
                await self.save_draft(draft)
            elif key == "name":
                await self.mework.link.call(
                    "servers.rename", {"name": self.server, "newName": value}
                )
                self.server = value
            else:
                await self.mework.link.call(
                    "servers.update", {"name": self.server, "patch": {key: value}}
                )
        except _Draft as draft_note:  # a draft's type still picks the fields to show
            self.set_msg(field, f"… {draft_note}")
        except Exception as exc:  # noqa: BLE001 - the daemon's reason, beside the field
            self.set_msg(field, f"✘ {describe(exc)} (not saved)")
            return
        else:
            self.entry = {k: v for k, v in draft.items() if v is not None}
            saved = "✓ saved" if key not in ("enabled", "longRunning") else str(value)
            self.set_msg(field, saved)
        if key == "type":
            self.show_transport()
        if field == "oauth":
            self.query_one(OAuthGroup).show_switch(value is not False)

    async def save_draft(self, draft: dict[str, Any]) -> None:
        """A new server is a draft until it has a name and a command or URL."""
        name = draft.get("name")
        if not name or not (draft.get("command") or draft.get("url")):
            self.entry = draft
            raise _Draft
        server = {k: v for k, v in draft.items() if k != "name" and v not in (None, [])}
        await self.mework.link.call("servers.add", {"name": name, "server": server})
        texts = [key for key, _label, _transport in TEXT_FIELDS]
        for key in (*texts, *(field for field, _label in OAUTH_TEXT_FIELDS)):
            if show_field(key, draft):  # kept as a draft, saved with it now
                self.set_msg(key, "✓ saved")
        for key in ("enabled", "longRunning"):  # a switch's draft notice: its value, now saved
            self.set_msg(key, "on" if draft.get(key) else "off")
        self.server = name
        self.refresh_bindings()  # now it can be tested
        self.notify(f"added {name}")

    def action_tab(self, step: int) -> None:
        """Tabs from the keyboard, even while a field has the focus."""
        tabs = self.query_one(TabbedContent)
        order = ["general", *PANES]
        tabs.active = order[(order.index(tabs.active or "general") + step) % len(order)]
        self.fill(tabs.active)
        self.call_after_refresh(self.focus_tab, tabs.get_pane(tabs.active))

    def focus_tab(self, pane: TabPane) -> None:
        focusable = [w for w in pane.query("DataTable, Input, Log") if w.focusable]
        if focusable:
            focusable[0].focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A draft is not on the daemon yet: nothing to test (False hides the key)."""
        return action != "test" or self.server is not None

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_reveal(self) -> None:
        self.revealed = not self.revealed
        for key in SECRET_FIELDS:
            self.query_one(f"#f-{key}", Input).password = not self.revealed

    @work(exclusive=True, group="test")
    async def action_test(self) -> None:
        if self.server is None:
            return
        self.query_one("#verdict", Static).update("… testing")
        result = await self.mework.call("servers.test", {"name": self.server}) or {}
        self.mework.record_test(self.server, result)
        self.mework.changed()

    @work(group="login")
    async def action_login(self) -> None:
        if self.server is None:
            return
        result = await self.mework.call("servers.login", {"name": self.server})
        if isinstance(result, dict) and result.get("authorizationUrl"):
            self.mework.login_urls[self.server] = str(result["authorizationUrl"])
            self.mework.changed()


class _Draft(Exception):
    def __str__(self) -> str:
        return "kept as a draft until a name and a command or URL are set"


def _auth_line(auth: Any, url: str | None) -> str:
    if not isinstance(auth, dict) or auth.get("state") == "none":
        return ""
    state = str(auth.get("state", "?"))
    line = f"OAuth: {state}" + (f" ({auth['error']})" if auth.get("error") else "")
    if url and state == "pending":
        return f"{line} · open to log in: {url}"
    return line + (" · ctrl+l to log in" if state in ("required", "failed") else "")
