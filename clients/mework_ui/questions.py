"""Questions to the person: approvals with their full arguments, and elicitation forms.

The queue is the model's (``Model.questions``) and answers go through the model, as the tool
cards' do; an answer given elsewhere removes the item, so this screen shows whatever is first and
closes when nothing waits.
"""

import json
from typing import Any, ClassVar, cast

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Footer, Input, Static, TextArea

from mework_ui.model import HasModel, Model
from mework_ui.words import time_left_text

__all__ = ["QuestionScreen", "approval_text"]


def approval_text(item: dict[str, Any], position: str) -> str:
    mandatory = "" if item.get("hookMayDecide", True) else "⚑ mandatory: asks every call · "
    if item.get("origin") == "app":
        mandatory = "asked by the tool's view · " + mandatory
    return (
        f"Approval {position} · conversation {item.get('conversationId')}\n"
        f"{item.get('server')} › {item.get('tool')}   {item.get('name')}\n"
        f"{mandatory}{item.get('reason') or ''}"
    )


def head_text(item: dict[str, Any], position: str) -> str:
    if item["kind"] == "approval":
        return approval_text(item, position)
    return f"Question {position} from {item.get('server')}: {item.get('message') or ''}"


class QuestionScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "allow", "Allow once"),
        Binding("c", "allow_conversation", "For conversation"),
        Binding("a", "allow_always", "Always"),
        Binding("n", "deny", "Deny…"),
        Binding("ctrl+s", "submit", "Accept", priority=True, tooltip="Send the form / accept"),
        Binding("d", "decline", "Decline"),
        Binding("j", "step(1)", "Next"),
        Binding("k", "step(-1)", "Prev", show=False),
        Binding("escape", "later", "Later"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.index = 0
        self.shown: str | None = None
        self.shown_at: tuple[str, str] | None = None  # the question and its place in the queue
        self.clock: Timer | None = None

    @property
    def mework(self) -> Model:
        return cast(HasModel, self.app).model

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static("", id="q-head")
            yield Static("", id="q-clock")
            yield TextArea("", id="q-args", read_only=True)
            yield VerticalScroll(id="q-form")
            yield Input(placeholder="reason for denying (Enter sends)", id="q-reason")
            yield Static("", id="q-note")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one("#q-reason").display = False
        self.refresh_model()

    def on_screen_resume(self) -> None:
        self.refresh_model()
        self.clock = self.set_interval(1, self.tick)  # the countdown moves only while shown

    def on_screen_suspend(self) -> None:
        if self.clock is not None:
            self.clock.stop()

    def tick(self) -> None:
        item = self.current()
        key = str(item.get("approvalId") or item.get("elicitationId")) if item else ""
        self.query_one("#q-clock", Static).update(time_left_text(self.mework.time_left(key)))

    def current(self) -> dict[str, Any] | None:
        items = list(self.mework.questions.values())
        if not items:
            return None
        self.index %= len(items)
        return items[self.index]

    def refresh_model(self) -> None:
        item = self.current()
        if item is None:
            if self.app.screen is self:  # else on resume: dismiss pops the top screen
                self.dismiss(None)  # answered here or elsewhere: nothing waits
            return
        key = str(item.get("approvalId") or item.get("elicitationId"))
        position = f"{self.index + 1} of {len(self.mework.questions)}"
        if (key, position) != self.shown_at:
            self.shown_at = (key, position)  # "j Next" shows only with more than one
            self.refresh_bindings()
            self.query_one("#q-head", Static).update(head_text(item, position))
        if key == self.shown:
            return  # the same question: a half-typed answer stays
        self.shown = key
        self.tick()
        self.query_one("#q-reason").display = False
        if item["kind"] == "approval":
            self.show_approval(item)
        else:
            self.show_form(item)

    def show_approval(self, item: dict[str, Any]) -> None:
        args = json.dumps(item.get("arguments"), indent=2, ensure_ascii=False)
        area = self.query_one("#q-args", TextArea)
        area.display, area.text = True, args
        self.query_one("#q-form").display = False
        area.focus()  # on the arguments, never on a button: Enter approves nothing
        scoped = item.get("hookMayDecide")
        keys = (
            "y once · c for the conversation · a always · n deny" if scoped else "y once · n deny"
        )
        self.query_one("#q-note", Static).update(f"{keys} · esc later")

    def show_form(self, item: dict[str, Any]) -> None:
        self.query_one("#q-args").display = False
        form = self.query_one("#q-form", VerticalScroll)
        form.display = True
        form.remove_children()
        if item.get("url"):
            form.mount(Static(f"open this address: {item['url']}"))
        schema = item.get("requestedSchema") or {}
        required = set(schema.get("required") or [])
        for field, spec in (schema.get("properties") or {}).items():
            mark = " *" if field in required else ""
            label = f"{spec.get('title') or field}{mark}: {spec.get('description', '')}"
            form.mount(Static(label), Input(id=f"e-{field}", placeholder=field_hint(spec)))
        send = "ctrl+s accept (once it is done there)" if item.get("url") else "ctrl+s send"
        self.query_one("#q-note", Static).update(f"{send} · d decline · esc later")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Only the keys that apply to the question shown are offered (False hides one)."""
        item = self.current()
        kind = item["kind"] if item is not None else ""
        if action in ("allow", "deny"):
            return kind == "approval"
        if action in ("allow_conversation", "allow_always"):
            # A tool that asks every time takes neither (the daemon would refuse them).
            return kind == "approval" and item is not None and bool(item.get("hookMayDecide"))
        if action in ("submit", "decline"):
            return kind == "elicitation"
        if action == "step":
            return len(self.mework.questions) > 1
        return True

    def action_step(self, delta: int) -> None:
        self.index += delta
        self.shown = None
        self.refresh_model()

    def action_later(self) -> None:
        self.dismiss(None)

    def action_allow(self) -> None:
        self.respond("allow")

    def action_allow_conversation(self) -> None:
        item = self.current()
        if item is not None and item["kind"] == "approval" and item.get("hookMayDecide"):
            self.respond("allow", scope="conversation")

    def action_allow_always(self) -> None:
        """Allow the tool for good: it joins its server's alwaysAllowTools (every conversation)."""
        item = self.current()
        if item is not None and item["kind"] == "approval" and item.get("hookMayDecide"):
            self.respond("allow", scope="always")

    def action_deny(self) -> None:
        reason = self.query_one("#q-reason", Input)
        reason.display = True
        reason.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "q-reason":
            self.respond("deny", reason=event.value)

    @work(group="answer")
    async def respond(self, decision: str, scope: str = "once", reason: str = "") -> None:
        item = self.current()
        if item is not None and item["kind"] == "approval":
            await self.mework.answer_approval(item, decision, scope, reason)

    def action_submit(self) -> None:
        self.answer_form("accept")

    def action_decline(self) -> None:
        self.answer_form("decline")

    @work(group="answer")
    async def answer_form(self, action: str) -> None:
        item = self.current()
        if item is None or item["kind"] != "elicitation":
            return
        schema = (item.get("requestedSchema") or {}).get("properties") or {}
        content = {
            field: typed(i.value, schema.get(field) or {})
            for i in self.query("#q-form Input").results(Input)
            if i.value and (field := (i.id or "")[2:])
        }
        await self.mework.answer_form(item, action, content if action == "accept" else None)


def field_hint(spec: dict[str, Any]) -> str:
    """What a form field takes: its type, its choices, and what leaving it empty gives."""
    hint = str(spec.get("type", ""))
    if isinstance(spec.get("enum"), list):
        hint += f", one of {', '.join(map(str, spec['enum']))}"
    if "default" in spec:
        hint += f" (empty: {spec['default']})"  # meworkd fills a left-out field's default
    return hint


def typed(text: str, spec: dict[str, Any]) -> Any:
    """A form field's text as the schema's type (elicitation schemas are flat primitives)."""
    kind = spec.get("type")
    if kind == "boolean":
        return text.strip().lower() in ("y", "yes", "true", "1", "on")
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
    except ValueError:
        return text  # the daemon (or the server) says what is wrong with it
    return text
