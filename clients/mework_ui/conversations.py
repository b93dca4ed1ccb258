"""Conversations: pick one, select its servers and preset, set its level, see what is missing."""

from typing import Any, ClassVar, cast

from mework_client import RpcError
from mework_protocol.audit import is_question
from mework_protocol.levels import APPROVAL_LEVELS
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Select, SelectionList, Static

from mework_ui.model import HasModel, Model, why_missing
from mework_ui.rows import sync_rows
from mework_ui.tasks import TasksScreen
from mework_ui.views import ViewOpener, viewable
from mework_ui.words import call_card, check_summary, server_status

__all__ = ["ConversationsScreen"]

CARDS_SHOWN = 5  # the last calls of the conversation: what fits above the drawer's checks
# At 80 columns the table and the drawer share the width: a long id (a frontend's UUID) is cut
# in the table, and shown whole in the drawer's checks below.
ID_SHOWN = 14


def short_id(conversation: str) -> str:
    return conversation if len(conversation) <= ID_SHOWN else f"{conversation[: ID_SHOWN - 1]}…"


class ConversationsScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        Binding("r", "reload", "Reload"),
        Binding("y", "answer('allow')", "Allow"),
        Binding("c", "answer('allow', 'conversation')", "Allow for chat", show=False),
        Binding("n", "answer('deny')", "Deny"),
        Binding("v", "view", "View the last call's view", show=False),
        Binding("t", "tasks", "MCP tasks of this conversation", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.conversations: dict[str, dict[str, Any]] = {}
        self.chosen: str | None = None
        self.views: ViewOpener | None = None  # the views opened from here (MCP Apps)

    @property
    def mework(self) -> Model:
        return cast(HasModel, self.app).model

    def compose(self) -> ComposeResult:
        yield Static(self.mework.bar_text(), id="topbar")
        yield Static("Conversations: Enter opens one; space selects a server", id="title")
        with Horizontal():
            yield DataTable(id="conv-table", cursor_type="row")
            with Vertical(id="drawer"):
                levels = [(lv, lv) for lv in APPROVAL_LEVELS]  # no blank: a level is always set
                yield Select(levels, id="level", allow_blank=False, compact=True)
                yield Select([], id="preset", prompt="no preset", compact=True)
                yield SelectionList[str](id="conv-servers")
        yield Static("", id="cards")
        yield Static("", id="why")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for label, key in (("Conversation", "id"), ("Level", "level"), ("Servers", "n")):
            table.add_column(label, key=key)
        self.action_reload()

    @work(exclusive=True, group="conv")
    async def action_reload(self) -> None:
        listed = await self.mework.call("conversations.list") or {}
        self.conversations = {c["id"]: c for c in listed.get("conversations", [])}
        presets = await self.mework.call("presets.list") or {}
        options = [(p["name"], p["name"]) for p in presets.get("presets", [])]
        with self.prevent(Select.Changed):
            self.query_one("#preset", Select).set_options(options)
        self.refresh_model()

    def refresh_model(self) -> None:
        rows = [
            (
                key,
                (
                    short_id(key),
                    conv.get("approvalLevel", ""),
                    str(len(conv.get("mcpServers", []))),
                ),
            )
            for key, conv in self.conversations.items()
        ]
        sync_rows(self.query_one(DataTable), ("id", "level", "n"), rows)  # the cursor stays
        if not self.conversations:
            self.query_one("#why", Static).update("no conversations yet")
        self.show_drawer()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.chosen = str(event.row_key.value)
        self.show_drawer()
        self.query_one(SelectionList).focus()
        self.load_cards(self.chosen)

    @work(group="cards")
    async def load_cards(self, conversation: str) -> None:
        """The conversation's last calls from the audit log; events keep them current."""
        got = await self.mework.call("audit.list", {"conversationId": conversation, "limit": 10})
        for entry in (got or {}).get("entries", []):
            if is_question(entry):
                continue  # a server's question: its call has a card of its own
            self.mework.note_call(entry, finished=entry.get("decision") != "requested")
        self.show_cards()

    def show_cards(self) -> None:
        cards = self.mework.cards_of(self.chosen or "")[-CARDS_SHOWN:]
        lines = [
            call_card(c, self.mework.waiting_approval(c) is not None, self.task_of(c))
            for c in cards
        ]
        self.query_one("#cards", Static).update("\n".join(lines))
        self.query_one("#cards", Static).display = bool(lines)
        self.refresh_bindings()

    def task_of(self, card: dict[str, Any]) -> dict[str, Any] | None:
        """The MCP task a card's call waits for (a finished call's card says how it ended)."""
        task = self.mework.tasks.of_call(card.get("callId"))
        return task if task is not None and task.get("turnId") == card.get("turnId") else None

    def action_tasks(self) -> None:
        self.app.push_screen(TasksScreen(self.chosen))

    def first_waiting(self) -> dict[str, Any] | None:
        for card in self.mework.cards_of(self.chosen or ""):
            if (item := self.mework.waiting_approval(card)) is not None:
                return item
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The approve keys show only while a call of this conversation waits for one."""
        if action != "answer":
            return True
        item = self.first_waiting()  # False hides a key (None would show it greyed out)
        return item is not None and (
            parameters[-1] != "conversation" or bool(item.get("hookMayDecide"))
        )

    @work(group="view", thread=True, exclusive=True)
    def action_view(self) -> None:
        """Open the view of the conversation's newest allowed call in the browser."""
        card = viewable(self.mework.cards_of(self.chosen or ""))
        if card is None:
            self.app.call_from_thread(
                self.notify, "no allowed tool call to view", severity="warning"
            )
            return
        if self.views is None:
            self.views = ViewOpener(self.mework.link.socket_path)
        try:
            url, opened = self.views.open(str(card.get("callId")), card.get("turnId"))
        except RpcError as exc:
            self.say_from_thread(exc.message, "warning")
            return
        except (OSError, ConnectionError):
            self.say_from_thread("meworkd is not reachable", "error")
            return
        said = "opened in your browser" if opened else "served (open it in a browser)"
        self.say_from_thread(f"the view of {card.get('tool')} is {said}: {url}")

    def say_from_thread(self, text: str, severity: SeverityLevel = "information") -> None:
        self.app.call_from_thread(self.notify, text, severity=severity)

    def on_unmount(self) -> None:
        if self.views is not None:
            self.views.close()

    @work(group="answer")
    async def action_answer(self, decision: str, scope: str = "once") -> None:
        item = self.first_waiting()
        if item is not None:
            await self.mework.answer_approval(item, decision, scope)

    def show_drawer(self) -> None:
        conv = self.conversations.get(self.chosen or "")
        drawer = self.query_one("#drawer")
        drawer.display = conv is not None
        if conv is None:
            return
        picks = self.query_one(SelectionList)
        highlighted = picks.highlighted  # the rebuilt list keeps the person's place
        with self.prevent(SelectionList.SelectedChanged, Select.Changed):
            picks.clear_options()
            for name, entry in self.mework.servers.items():
                chosen = name in conv.get("mcpServers", [])
                status = server_status(entry, self.mework.failures.get(name))
                label = f"{'selected' if chosen else '—':8} {name} · {status}"
                picks.add_option((label, name, chosen))
            picks.highlighted = highlighted
            self.query_one("#level", Select).value = conv.get("approvalLevel", APPROVAL_LEVELS[0])
            preset = conv.get("preset")
            self.query_one("#preset", Select).value = preset if preset else Select.NULL
        self.show_cards()
        self.show_why(conv)

    def show_why(self, conv: dict[str, Any]) -> None:
        """The checks of the servers this conversation selects, each once (the others' tools
        are missing by choice: nothing to explain)."""
        lines = [f"{self.chosen}: why a server's tools would be missing from the next turn"]
        selected = list(dict.fromkeys(conv.get("mcpServers") or []))
        if not selected:
            lines.append("no server selected: select one above")
        for name in selected:
            entry, failure = self.mework.servers.get(name), self.mework.failures.get(name)
            lines += check_summary(name, why_missing(name, entry, conv, failure))
        self.query_one("#why", Static).update("\n".join(lines))

    @on(SelectionList.SelectedChanged)
    def servers_changed(self, event: SelectionList.SelectedChanged[str]) -> None:
        self.update_conversation({"mcpServers": list(event.selection_list.selected)})

    @on(Select.Changed, "#level")
    def level_changed(self, event: Select.Changed) -> None:
        if event.value != Select.NULL:
            self.update_conversation({"approvalLevel": event.value})

    @on(Select.Changed, "#preset")
    def preset_changed(self, event: Select.Changed) -> None:
        self.update_conversation({"preset": None if event.value == Select.NULL else event.value})

    @work(group="conv-update")
    async def update_conversation(self, change: dict[str, Any]) -> None:
        if self.chosen is None:
            return
        result = await self.mework.call("conversations.update", {"id": self.chosen, **change})
        if result is not None:
            self.conversations[self.chosen] = result
            table = self.query_one(DataTable)
            table.update_cell(self.chosen, "level", result.get("approvalLevel", ""))
            table.update_cell(self.chosen, "n", str(len(result.get("mcpServers", []))))
            self.show_drawer()

    def action_back(self) -> None:
        self.app.pop_screen()
