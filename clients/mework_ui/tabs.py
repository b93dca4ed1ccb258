"""The detail page's tabs: Tools (switches per tool) and live Logs."""

from datetime import datetime
from typing import Any, ClassVar, cast

from mework_protocol.wording import tool_problem
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import DataTable, Log, Static

from mework_ui.model import HasModel, Model
from mework_ui.rows import selected, sync_rows

__all__ = [
    "NOTHING_YET",
    "LogsPane",
    "Pane",
    "ToolsPane",
    "approval_words",
    "interactive",
    "log_line",
]

NOTHING_YET = "nothing listed yet: ctrl+t tests the server and lists what it offers"
INTERACTIVE_KEY = "anthropic/requiresUserInteraction"


def interactive(tool: dict[str, Any]) -> bool:
    """A server-declared must-ask tool: auto-approve cannot apply to it."""
    meta = tool.get("_meta") or tool.get("meta") or {}
    return isinstance(meta, dict) and INTERACTIVE_KEY in meta and meta[INTERACTIVE_KEY] is not False


class Pane(Vertical):
    kind = ""
    # ctrl+t works in every tab, but the footer shows it on General only: at 80 columns the
    # tabs' own keys need the room (a focused widget's binding comes before the screen's).
    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+t", "screen.test", "Test", show=False)]

    def __init__(self, server: str | None) -> None:
        super().__init__()
        self.server = server

    @property
    def mework(self) -> Model:
        return cast(HasModel, self.app).model

    def listed(self, kind: str = "") -> list[dict[str, Any]]:
        """The last test's list, else what the server last reported (servers.tools)."""
        name = self.server or ""
        result = self.mework.tests.get(name) or self.mework.reported.get(name) or {}
        return list(result.get(kind or self.kind) or [])

    def on_mount(self) -> None:
        if self.server is not None and self.server not in self.mework.tests:
            self.fetch_known()

    @work(group="known")
    async def fetch_known(self) -> None:
        """The last tools the daemon saw (servers.tools), where this daemon keeps them."""
        if "servers.tools" in self.mework.link.missing:
            return
        result = await self.mework.call("servers.tools", {"name": self.server})
        if isinstance(result, dict):
            self.mework.reported[str(self.server)] = result
            self.mework.changed()

    def refresh_model(self) -> None:
        """Redraw from the app's model; each pane with a list overrides it."""


class ToolsPane(Pane):
    kind = "tools"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "switch", "On/off", tooltip="Offer the tool to the model, or not"),
        Binding("a", "auto", "Approval", tooltip="Auto-approve on/off (the Approval column)"),
        Binding("w", "why", "Why?", tooltip="Why the tool would be missing from a turn"),
    ]

    def compose(self) -> ComposeResult:
        yield DataTable(id="tool-table", cursor_type="row")
        yield Static(NOTHING_YET, id="tool-detail")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for label, key in (("On", "on"), ("Approval", "approval"), ("Tool", "tool")):
            table.add_column(label, key=key)
        super().on_mount()
        self.refresh_model()

    def refresh_model(self) -> None:
        table, entry = self.query_one(DataTable), self.mework.servers.get(self.server or "", {})
        if not table.columns:
            return  # composed but not mounted yet: on_mount adds the columns, then fills it
        off = set(entry.get("disabledTools") or [])
        asks = set(entry.get("disabledAutoApproveTools") or [])
        tools = {t["name"]: t for t in self.listed()}
        names = list(tools) + sorted(off - set(tools))  # a switched-off name no longer listed
        rows = [
            (
                name,
                (
                    "off" if name in off else "on",
                    approval_words(name, tools.get(name), off, asks),
                    name if name in tools else f"{name} (no longer listed)",
                ),
            )
            for name in names
        ]
        sync_rows(table, ("on", "approval", "tool"), rows)
        self.show_detail()

    def selected(self) -> str | None:
        return selected(self.query_one(DataTable))

    def on_data_table_row_highlighted(self) -> None:
        self.show_detail()

    def show_detail(self) -> None:
        name, result = self.selected(), self.mework.tests.get(self.server or "") or {}
        tool = next((t for t in self.listed() if t.get("name") == name), None)
        if tool is None:
            self.query_one("#tool-detail", Static).update("" if name else NOTHING_YET)
            return
        props = (tool.get("inputSchema") or {}).get("properties") or {}
        required = set((tool.get("inputSchema") or {}).get("required") or [])
        params = " · ".join(f"{p}{' (required)' * (p in required)}" for p in props)
        lines = [f"model sees {tool.get('boundName', '?')}", tool.get("description") or ""]
        lines += [f"arguments: {params}"] if params else []
        for problem in result.get("problems") or []:
            if problem.get("tool") == name:
                lines.append(f"! {tool_problem({**problem, 'tool': None})}")
        self.query_one("#tool-detail", Static).update("\n".join(lines))

    def action_why(self) -> None:
        from mework_ui.why import WhyScreen

        if (name := self.selected()) is not None and self.server is not None:
            self.app.push_screen(WhyScreen(self.server, name))

    @work(group="tools")
    async def action_switch(self) -> None:
        name, entry = self.selected(), self.mework.servers.get(self.server or "", {})
        if name is not None:
            enabled = name in (entry.get("disabledTools") or [])
            params = {"name": self.server, "tool": name, "enabled": enabled}
            await self.mework.call("servers.setToolEnabled", params)

    @work(group="tools")
    async def action_auto(self) -> None:
        name, entry = self.selected(), self.mework.servers.get(self.server or "", {})
        if name is not None:
            auto = name in (entry.get("disabledAutoApproveTools") or [])
            params = {"name": self.server, "tool": name, "autoApprove": auto}
            await self.mework.call("servers.setToolAutoApprove", params)


def approval_words(name: str, tool: dict[str, Any] | None, off: set[str], asks: set[str]) -> str:
    """The effect of the switches in words (a switch must state its effect)."""
    if name in off:
        return "— not offered"
    if tool is not None and interactive(tool):
        return "⚑ asks every call (server)"
    return "asks every call" if name in asks else "level decides"


def log_line(item: dict[str, Any]) -> str:
    """A stderr line with its local time and, when known, whose session wrote it.

    servers.logs gives ``{time, line}`` (the time in UTC, no session); a live server.log event
    gives ``{server, conversation, line}``, its time being now and a null conversation a test.
    """
    try:
        stamp = datetime.fromisoformat(str(item["time"])).astimezone()
    except (KeyError, ValueError):
        stamp = datetime.now().astimezone()
    who = f"{item.get('conversation') or 'test'}: " if "conversation" in item else ""
    return f"{stamp:%H:%M:%S} {who}{item.get('line')}"


NOTHING_LOGGED = (
    "Nothing on stderr yet: the server has not run (a conversation or t starts it) or has "
    "written nothing. New lines appear here as they come."
)


class LogsPane(Pane):
    """stderr as plain text (never red: stderr is not failure), following live."""

    def compose(self) -> ComposeResult:
        yield Static("", id="log-note")
        yield Log(max_lines=1000, id="log")

    def on_mount(self) -> None:
        if self.server is not None:
            self.follow()

    def refresh_model(self) -> None:
        return

    def write(self, item: dict[str, Any]) -> None:
        if self.empty:  # the first line: "nothing yet" is no longer true
            self.empty = False
            self.query_one("#log-note", Static).update("")
        self.query_one(Log).write_line(log_line(item))

    empty = False  # the "nothing yet" note is shown

    @work(exclusive=True, group="logs")
    async def follow(self) -> None:
        got = await self.mework.call("servers.logs", {"name": self.server, "tail": 1000})
        if got is not None:
            if got.get("dropped"):
                note = f"{got['dropped']} older lines were dropped"
                self.query_one("#log-note", Static).update(note)
            elif not got.get("lines"):
                self.empty = True
                self.query_one("#log-note", Static).update(NOTHING_LOGGED)
            for item in got.get("lines", []):
                self.write(item)
        try:
            await self.mework.link.follow_logs(str(self.server), self.write)
        except (OSError, ConnectionError, ValueError):
            self.query_one("#log-note", Static).update("live lines stopped: meworkd went away")
