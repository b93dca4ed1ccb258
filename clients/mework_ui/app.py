"""The app: the screens over one Model, and the keys that reach them from anywhere."""

from typing import Any, ClassVar, Protocol, runtime_checkable

from textual import events, work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.widgets import Static

from mework_ui.conversations import ConversationsScreen
from mework_ui.model import Model
from mework_ui.questions import QuestionScreen
from mework_ui.servers import ServersScreen
from mework_ui.shell import HelpScreen, TooSmall, too_small
from mework_ui.tasks import ConfirmCancelTask, TasksScreen

__all__ = ["MeworkApp"]


@runtime_checkable
class Refreshable(Protocol):
    def refresh_model(self) -> None: ...


class MeworkApp(App[None]):
    TITLE = "meworkd"
    CSS_PATH = "mework.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f1", "help", "Help", priority=True),
        Binding("question_mark", "help", "Help", show=False),
        Binding("f2", "servers", "Servers", priority=True, show=False),
        Binding("f3", "conversations", "Chats", priority=True),
        Binding("f4", "questions", "Questions", priority=True),
        # Hidden in the footer (no room at 80 columns): the top bar names F5 while tasks run.
        Binding("f5", "tasks", "MCP tasks", priority=True, show=False),
        Binding("ctrl+q", "quit", "Quit", priority=True, show=False),
        # Not a priority: a text field that has focus takes the q as a letter.
        Binding("q", "quit", "Quit", show=False),
    ]

    def __init__(self, socket_path: str | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.model = Model(self, socket_path, self.refresh_views)
        self.asking = False  # whether F4 is offered: a question waits

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """At 80 columns the footer has room only for keys that do something here (False hides
        one): F4 while a question waits and its screen is not open, F3 off the Chats screen."""
        if action == "questions":
            return self.asking and not any(isinstance(s, QuestionScreen) for s in self.screen_stack)
        if action == "conversations":
            return not isinstance(self.screen, ConversationsScreen)
        return True

    def on_mount(self) -> None:
        self.push_screen(ServersScreen())
        self.fit(self.size.width, self.size.height)
        self.follow()

    def on_resize(self, event: events.Resize) -> None:
        self.fit(event.size.width, event.size.height)

    def fit(self, width: int, height: int) -> None:
        """Below 80×24 a notice covers the screens rather than a layout that falls apart."""
        top = self.screen
        if too_small(width, height):
            if isinstance(top, TooSmall):
                top.show(width, height)
            else:
                self.push_screen(TooSmall())
        elif isinstance(top, TooSmall):
            self.pop_screen()

    def covered(self) -> bool:
        """Keys that change screens wait while the notice or the help is up."""
        return isinstance(self.screen, TooSmall | HelpScreen)

    @work(exclusive=True, group="daemon")
    async def follow(self) -> None:
        await self.model.follow()

    def refresh_views(self) -> None:
        if self.asking != bool(self.model.questions):
            self.asking = not self.asking
            self.refresh_bindings()
        for screen in self.screen_stack:
            for bar in screen.query("#topbar"):
                if isinstance(bar, Static):
                    bar.update(self.model.bar_text())
            if isinstance(screen, Refreshable) and screen.is_mounted:
                try:
                    screen.refresh_model()
                except NoMatches:  # pushed, not composed yet: it draws itself on mount
                    pass

    def action_help(self) -> None:
        if not self.covered():
            self.push_screen(HelpScreen(key_sections(self.BINDINGS)))

    def action_servers(self) -> None:
        if self.covered():
            return
        while len(self.screen_stack) > 2:  # the default screen, then Settings → MCP
            self.pop_screen()

    def action_conversations(self) -> None:
        if self.covered():
            return
        self.action_servers()
        self.push_screen(ConversationsScreen())

    def action_tasks(self) -> None:
        if not self.covered() and not isinstance(self.screen, TasksScreen):
            self.push_screen(TasksScreen())

    def action_questions(self) -> None:
        if not self.covered() and not any(isinstance(s, QuestionScreen) for s in self.screen_stack):
            self.push_screen(QuestionScreen())


def key_sections(everywhere: list[BindingType]) -> list[tuple[str, list[BindingType]]]:
    """The help screen's sections: each screen's keys, read from its bindings."""
    from mework_ui.browse import BrowseScreen
    from mework_ui.detail import DetailScreen
    from mework_ui.dialogs import ConfirmRemove, ImportDialog
    from mework_ui.inspection import PromptsPane
    from mework_ui.options import OptionsScreen
    from mework_ui.tabs import ToolsPane

    return [
        ("Everywhere", everywhere),
        ("Settings → MCP (servers)", ServersScreen.BINDINGS),
        ("Server detail", DetailScreen.BINDINGS),
        ("  Tools tab", ToolsPane.BINDINGS),
        ("  Prompts tab", PromptsPane.BINDINGS),
        ("Import from JSON", ImportDialog.BINDINGS),
        ("Browse the MCP registry (a on servers)", BrowseScreen.BINDINGS),
        ("Remove a server", ConfirmRemove.BINDINGS),
        ("MCP options (o on servers)", OptionsScreen.BINDINGS),
        ("Conversations", ConversationsScreen.BINDINGS),
        ("Questions (approvals, forms)", QuestionScreen.BINDINGS),
        ("MCP tasks (F5; t on Conversations)", TasksScreen.BINDINGS),
        ("Cancel a task", ConfirmCancelTask.BINDINGS),
    ]
