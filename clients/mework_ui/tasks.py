"""MCP tasks: the tasks of tool calls, live from the daemon's events, and cancelling one.

A server may answer a tool call with a task, which can run for minutes; this screen is where a
person sees what runs, for every conversation (F5) or one (``t`` on Conversations): status,
server and tool, age and the server's message. A task that asks for input points to the
question (F4: the form itself is the Questions screen's, as any server's question).
"""

from typing import Any, ClassVar, cast

from mework_client import RpcError
from mework_protocol.wording import age, task_state
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Static

from mework_ui.link import Offline, describe
from mework_ui.model import HasModel, Model
from mework_ui.rows import selected
from mework_ui.taskbook import is_open

__all__ = ["ConfirmCancelTask", "TasksScreen", "status_cell", "task_note"]

COLUMNS = ("status", "what", "conv", "age", "message")
MARKS = {"working": "…", "input_required": "⚑", "completed": "✓"}


def status_cell(task: dict[str, Any]) -> str:
    return f"{MARKS.get(str(task.get('status')), '✘')} {task_state(task)}"


def task_note(task: dict[str, Any] | None, question: dict[str, Any] | None = None) -> str:
    """The selected task in full: what it is, what it said, and what a person can do;
    ``question``: the question of its call waiting for an answer, if the UI has it."""
    if task is None:
        return (
            "no MCP tasks yet: a server may answer a tool call with a task, shown here while it "
            "runs"
        )
    lines = [
        f"{task.get('server')} › {task.get('tool')} · conversation {task.get('conversationId')}"
        f" · call {task.get('callId')}",
        f"{task_state(task)}: {task.get('message') or 'no message from the server'}",
    ]
    if question is not None and question.get("message"):
        lines.append(f"⚑ it asks you: {question['message']} (F4 answers it)")
    elif task.get("status") == "input_required":
        lines.append("⚑ it asks you a question: F4 answers it")
    if is_open(task):
        lasts = "outlives a restart of meworkd" if task.get("resumable") else "ends with meworkd"
        lines.append(f"{lasts} · x cancels it on its server (its call ends, saying so)")
    return "\n".join(lines)


class TasksScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        Binding("x,delete", "cancel_task", "Cancel task"),
    ]

    def __init__(self, conversation: str | None = None) -> None:
        super().__init__()
        self.conversation = conversation  # None: every conversation's tasks

    @property
    def mework(self) -> Model:
        return cast(HasModel, self.app).model

    def compose(self) -> ComposeResult:
        whose = f"conversation {self.conversation}" if self.conversation else "every conversation"
        yield Static(self.mework.bar_text(), id="topbar")
        yield Static(f"MCP tasks of {whose}, newest first", id="title")
        yield DataTable(id="task-table", cursor_type="row")
        yield Static("", id="task-note")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        labels = ("Status", "Server › tool", "Conversation", "Age", "Message")
        for label, key in zip(labels, COLUMNS, strict=True):
            table.add_column(label, key=key)
        self.refresh_model()
        self.set_interval(1.0, self.refresh_model)  # the ages move on

    def tasks(self) -> list[dict[str, Any]]:
        return self.mework.tasks.newest_first(self.conversation)

    def refresh_model(self) -> None:
        table = self.query_one(DataTable)
        rows = {
            str(t["callId"]): (
                status_cell(t),
                f"{t.get('server')} › {t.get('tool')}",
                str(t.get("conversationId")),
                age(t.get("createdAt")),
                str(t.get("message") or ""),
            )
            for t in self.tasks()
        }
        if [str(k.value) for k in table.rows] != list(rows):  # a new task goes on top
            keep = selected(table)
            table.clear()
            for key, cells in rows.items():
                table.add_row(*cells, key=key)
            if keep in rows:
                table.move_cursor(row=table.get_row_index(keep))
        else:  # in place: the cursor stays
            for key, cells in rows.items():
                for column, value in zip(COLUMNS, cells, strict=True):
                    table.update_cell(key, column, value, update_width=True)
        self.show_note()

    def chosen(self) -> dict[str, Any] | None:
        key = selected(self.query_one(DataTable))
        return None if key is None else self.mework.tasks.of_call(key)

    def show_note(self) -> None:
        task = self.chosen()
        self.query_one("#task-note", Static).update(task_note(task, self.question_of(task)))

    def question_of(self, task: dict[str, Any] | None) -> dict[str, Any] | None:
        """The question waiting for an answer in this task's call (a form, an approval)."""
        if task is None:
            return None
        for question in self.mework.questions.values():
            if question.get("callId") == task.get("callId"):
                return question
        return None

    def on_data_table_row_highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self.show_note()

    def action_cancel_task(self) -> None:
        task = self.chosen()
        if task is None:
            return
        if not is_open(task):
            self.notify(f"{task.get('callId')} had ended already: nothing to cancel")
            return
        self.app.push_screen(ConfirmCancelTask(task), self.confirmed)

    def confirmed(self, call_id: str | None) -> None:
        if call_id is not None:
            self.cancel(call_id)

    @work(group="task-cancel")
    async def cancel(self, call_id: str) -> None:
        try:
            result = await self.mework.link.call("tasks.cancel", {"callId": call_id})
        except (RpcError, Offline, ConnectionError, OSError) as exc:
            self.notify(f"not cancelled: {describe(exc)}", severity="error")
            return
        if result.get("cancelled"):
            self.notify(f"cancelled {call_id}")
        else:
            self.notify(f"{call_id} had ended already: nothing to cancel")

    def action_back(self) -> None:
        self.app.pop_screen()


class ConfirmCancelTask(ModalScreen[str | None]):
    """No silent destructive action: what is cancelled, and what happens to its call."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "confirm", "Cancel task"),
        Binding("n,escape", "dismiss(None)", "Keep"),
    ]

    def __init__(self, task: dict[str, Any]) -> None:
        super().__init__()
        self.task_shown = task

    def compose(self) -> ComposeResult:
        t = self.task_shown
        with Vertical(classes="dialog small"):
            yield Static(f"Cancel the task of {t.get('server')} › {t.get('tool')}?", id="question")
            yield Static(
                f"conversation {t.get('conversationId')} · call {t.get('callId')}\n"
                "the server stops it; its call ends with a reply saying it was cancelled",
                id="consequence",
            )
            yield Static("y Cancel task   n Keep")
        yield Footer(compact=True, show_command_palette=False)

    def action_confirm(self) -> None:
        self.dismiss(str(self.task_shown.get("callId")))
