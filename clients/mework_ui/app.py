"""The app: the screens over one Model, and the keys that reach them from anywhere."""

from typing import Any, ClassVar, Protocol, runtime_checkable

from textual import work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.widgets import Static

from mework_ui.conversations import ConversationsScreen
from mework_ui.model import Model
from mework_ui.questions import QuestionScreen
from mework_ui.servers import ServersScreen

__all__ = ["MeworkApp"]


@runtime_checkable
class Refreshable(Protocol):
    def refresh_model(self) -> None: ...


class MeworkApp(App[None]):
    TITLE = "meworkd"
    CSS_PATH = "mework.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f2", "servers", "Servers", priority=True, show=False),
        Binding("f3", "conversations", "Chats", priority=True),
        Binding("f4", "questions", "Questions", priority=True),
        Binding("ctrl+q", "quit", "Quit", priority=True, show=False),
    ]

    def __init__(self, socket_path: str | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.model = Model(self, socket_path, self.refresh_views)

    def on_mount(self) -> None:
        self.push_screen(ServersScreen())
        self.follow()

    @work(exclusive=True, group="daemon")
    async def follow(self) -> None:
        await self.model.follow()

    def refresh_views(self) -> None:
        for screen in self.screen_stack:
            for bar in screen.query("#topbar"):
                if isinstance(bar, Static):
                    bar.update(self.model.bar_text())
            if isinstance(screen, Refreshable) and screen.is_mounted:
                try:
                    screen.refresh_model()
                except NoMatches:  # pushed, not composed yet: it draws itself on mount
                    pass

    def action_servers(self) -> None:
        while len(self.screen_stack) > 2:  # the default screen, then Settings → MCP
            self.pop_screen()

    def action_conversations(self) -> None:
        self.action_servers()
        self.push_screen(ConversationsScreen())

    def action_questions(self) -> None:
        if not any(isinstance(s, QuestionScreen) for s in self.screen_stack):
            self.push_screen(QuestionScreen())
