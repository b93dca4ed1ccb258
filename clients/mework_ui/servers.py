"""Settings → MCP: every server with its transport, switch, live status and why it failed."""

from typing import Any, ClassVar, cast

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from mework_ui.dialogs import AddMenu, ConfirmRemove, ImportDialog
from mework_ui.model import HasModel, Model
from mework_ui.rows import selected, sync_rows
from mework_ui.words import (
    cost_text,
    empty_note,
    failure_text,
    server_status,
    settings_banner,
    test_summary,
)

__all__ = ["ServersScreen", "tested_note"]

TITLE = "Settings → MCP   (⏎ opens a server · o: MCP options · F1: every key)"
COLUMNS = (("Status", "status"), ("Server", "name"), ("Type", "type"), ("On", "on"))


def tested_note(model: Model, name: str, text: str) -> str:
    """A Test connection's outcome says it is one, and when (a failure seen again looks new)."""
    result = model.tests.get(name) if name not in model.failures else model.failures[name]
    from_test = result is not None and ("ok" in result or result.get("test") is True)
    if not from_test or name not in model.tested_at:
        return text
    return f"Test connection at {model.tested_at[name]}:\n{text}"


class ServersScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "add", "Add▾"),
        Binding("enter", "open", "Open"),
        Binding("space", "switch", "On/off"),
        Binding("t", "test", "Test"),
        Binding("l", "logs", "Logs"),
        Binding("delete", "remove", "Remove"),
        Binding("r", "reload", "Reload", show=False),
        Binding("R", "restart", "Restart sessions", show=False),
        Binding("o", "options", "MCP options", show=False),
    ]

    @property
    def mework(self) -> Model:
        return cast(HasModel, self.app).model

    def compose(self) -> ComposeResult:
        yield Static(self.mework.bar_text(), id="topbar")
        yield Static(TITLE, id="title")
        yield Static("", id="banner")
        yield DataTable(id="servers", cursor_type="row", zebra_stripes=False)
        yield Static("", id="note")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for label, key in COLUMNS:
            table.add_column(label, key=key)
        self.refresh_model()

    def refresh_model(self) -> None:
        """Rows updated in place, so the cursor stays where the person left it."""
        app, table = self.mework, self.query_one(DataTable)
        banner = settings_banner(app.settings_state)
        self.query_one("#banner", Static).update(banner)
        self.query_one("#banner", Static).display = bool(banner)
        rows = ((name, self.cells(entry)) for name, entry in app.servers.items())
        sync_rows(table, [key for _label, key in COLUMNS], rows)
        self.show_note()

    def cells(self, entry: dict[str, Any]) -> tuple[str, ...]:
        name = entry["name"]
        failure = self.mework.failures.get(name)
        on = "on" if entry.get("enabled") else "off"
        status = "… testing" if name in self.mework.testing else server_status(entry, failure)
        return (status, name, str(entry.get("type") or "?"), on)

    def selected(self) -> str | None:
        return selected(self.query_one(DataTable))

    def on_data_table_row_highlighted(self) -> None:
        self.show_note()

    def show_note(self) -> None:
        """The selected server's reason in full: R1, say why in place."""
        name, app = self.selected(), self.mework
        entry = app.servers.get(name or "")
        text = "" if app.servers else empty_note(app.online, app.connection)
        if entry is not None:
            if entry.get("error"):
                text = f"! invalid entry: {entry['error']}"
            elif name in app.testing:
                text = f"… testing {name} (Test connection)"
            elif name in app.failures:
                text = tested_note(app, str(name), failure_text(app.failures[name]))
            elif name in app.tests:
                text = tested_note(app, str(name), test_summary(app.tests[name]))
            else:
                text = entry.get("description") or ""
            if cost := cost_text(entry.get("cost")):  # which server fills the model's context
                text = f"{text}\n{cost}" if text else cost
        self.query_one("#note", Static).update(text)

    def on_data_table_row_selected(self) -> None:
        self.action_open()

    def action_add(self) -> None:
        self.app.push_screen(AddMenu(), self.added)

    def added(self, choice: str | None) -> None:
        from mework_ui.detail import DetailScreen

        if choice == "add":
            self.app.push_screen(DetailScreen(None))
        elif choice == "import":
            self.app.push_screen(ImportDialog())
        elif choice == "browse":
            from mework_ui.browse import BrowseScreen

            self.app.push_screen(BrowseScreen())
        elif choice == "bundle":
            from mework_ui.bundle import BundleDialog

            self.app.push_screen(BundleDialog())

    def action_open(self, tab: str = "general") -> None:
        from mework_ui.detail import DetailScreen

        if (name := self.selected()) is not None:
            self.app.push_screen(DetailScreen(name, tab))

    def action_options(self) -> None:
        from mework_ui.options import OptionsScreen

        self.app.push_screen(OptionsScreen())

    def action_logs(self) -> None:
        self.action_open("logs")

    @work(group="servers")
    async def action_switch(self) -> None:
        name = self.selected()
        if name is not None and name in self.mework.servers:
            enabled = not self.mework.servers[name].get("enabled")
            await self.mework.call("servers.update", {"name": name, "patch": {"enabled": enabled}})

    @work(group="servers")
    async def action_test(self) -> None:
        """Testing is shown (status and note) until the outcome replaces it, also when the
        outcome is the failure the server already showed."""
        if (name := self.selected()) is None or name in self.mework.testing:
            return
        self.mework.testing.add(name)
        self.mework.changed()
        try:
            result = await self.mework.call("servers.test", {"name": name}) or {}
        finally:
            self.mework.testing.discard(name)
        self.mework.record_test(name, result)
        self.mework.changed()

    @work(group="servers")
    async def action_restart(self) -> None:
        """Close the server's sessions; each conversation dials it afresh on next use."""
        if (name := self.selected()) is not None:
            result = await self.mework.call("servers.closeSessions", {"name": name})
            if result is not None:
                self.notify(f"{name}: {result.get('sessionsClosed', 0)} sessions closed")

    @work(group="servers")
    async def action_reload(self) -> None:
        await self.mework.call("settings.reload")

    def action_remove(self) -> None:
        name = self.selected()
        if name is not None:
            self.app.push_screen(ConfirmRemove(name), self.removed)

    def removed(self, name: str | None) -> None:
        if name is not None:
            self.remove_server(name)

    @work(group="servers")
    async def remove_server(self, name: str) -> None:
        if name:
            result = await self.mework.call("servers.remove", {"name": name})
            if result is not None:
                self.notify(f"removed {name}")
