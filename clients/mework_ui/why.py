"""Why would this tool be missing from a conversation's next turn: each check and its source."""

from typing import Any, ClassVar, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Select, Static

from mework_ui.model import HasModel, Model, why_missing
from mework_ui.words import check_lines

__all__ = ["WhyScreen"]


class WhyScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Close")]

    def __init__(self, server: str, tool: str) -> None:
        super().__init__()
        self.server, self.tool = server, tool
        self.conversations: dict[str, dict[str, Any]] = {}

    @property
    def mework(self) -> Model:
        return cast(HasModel, self.app).model

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(f"Why would {self.server} › {self.tool} be missing?", id="why-title")
            yield Select([], id="why-conv", prompt="pick a conversation", compact=True)
            yield Static("", id="why-lines")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.load()

    @work(group="why")
    async def load(self) -> None:
        listed = await self.mework.call("conversations.list") or {}
        self.conversations = {c["id"]: c for c in listed.get("conversations", [])}
        if not self.conversations:
            self.query_one("#why-lines", Static).update("no conversations yet (F3)")
            return
        picker = self.query_one("#why-conv", Select)
        picker.set_options([(key, key) for key in self.conversations])
        chosen = next(
            (k for k, c in self.conversations.items() if self.server in c.get("mcpServers", [])),
            next(iter(self.conversations)),
        )
        picker.value = chosen  # the first that selects the server, else the first
        self.show(chosen)

    @on(Select.Changed, "#why-conv")
    def chosen(self, event: Select.Changed) -> None:
        if event.value != Select.NULL:
            self.show(str(event.value))

    def show(self, conversation: str) -> None:
        model = self.mework
        result = model.tests.get(self.server) or model.reported.get(self.server) or {}
        tools = result.get("tools")
        listed = [str(t.get("name")) for t in tools] if isinstance(tools, list) else None
        checks = why_missing(
            self.server,
            model.servers.get(self.server),
            self.conversations.get(conversation, {"id": conversation}),
            model.failures.get(self.server),
            self.tool,
            listed,
        )
        self.query_one("#why-lines", Static).update("\n".join(check_lines(checks)))
