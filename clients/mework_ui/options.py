"""The ``mcp`` options of the settings file, each saved on change with the verdict beside it."""

from typing import Any, ClassVar, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Static, Switch

from mework_ui.link import describe
from mework_ui.model import HasModel, Model

__all__ = ["OPTIONS", "OptionsScreen", "parse_option"]

# (key, label, kind): what settings.setMcpOptions takes, as the file spells it.
OPTIONS: tuple[tuple[str, str, str], ...] = (
    ("approval_timeout_seconds", "Approval wait s", "number"),
    ("question_timeout_seconds", "Question wait s", "number"),
    ("session_idle_minutes", "Idle close min", "number"),
    ("max_reply_bytes", "Max reply bytes", "integer"),
    ("max_live_sessions", "Live sessions max", "integer"),
    ("mandatory_description_prefix", "Must-ask prefix", "text"),
)


NOTE = (
    "Waits: how long meworkd waits for a person's answer before giving up.\n"
    "Idle close: an unused session is closed after this long.\n"
    "Live sessions max: beyond it the least recently used idle one is closed.\n"
    "Sampling: servers may ask the model (a frontend must run it)."
)


class OptionError(ValueError):
    """Text an option cannot hold; shown beside it."""


def parse_option(kind: str, text: str) -> Any:
    """The value to send for ``text``; the daemon checks the range and says why it refuses."""
    if kind == "text":
        return text
    try:
        return int(text) if kind == "integer" else float(text)
    except ValueError:
        whole = "a whole number" if kind == "integer" else "a number"
        raise OptionError(f"{whole}, e.g. {'65536' if kind == 'integer' else '600'}") from None


def show_option(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value if value is not None else "")


class OptionsScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "back", "Back")]

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, Any] = {}

    @property
    def mework(self) -> Model:
        return cast(HasModel, self.app).model

    def compose(self) -> ComposeResult:
        yield Static(self.mework.bar_text(), id="topbar")
        yield Static("MCP options: Enter or leaving a field saves it", id="title")
        with VerticalScroll():
            for key, label, _kind in OPTIONS:
                with Horizontal(classes="row"):
                    yield Static(label, classes="label wide")
                    yield Input(id=f"o-{key}", compact=True)
                    yield Static("", id=f"m-{key}", classes="msg")
            with Horizontal(classes="row"):
                yield Static("Sampling", classes="label wide")
                yield Switch(id="o-sampling")
                yield Static("", id="m-sampling", classes="msg")
            yield Static(NOTE, id="o-note")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.load()

    @work(group="options")
    async def load(self) -> None:
        got = await self.mework.call("settings.get")
        if isinstance(got, dict):
            self.show(dict(got.get("mcp") or {}))

    def show(self, values: dict[str, Any]) -> None:
        self.values = values
        with self.prevent(Input.Changed, Switch.Changed):
            for key, _label, _kind in OPTIONS:
                self.query_one(f"#o-{key}", Input).value = show_option(values.get(key))
            self.query_one("#o-sampling", Switch).value = bool(values.get("sampling"))
        self.say("sampling", sampling_words(bool(values.get("sampling"))))

    def say(self, key: str, text: str) -> None:
        self.query_one(f"#m-{key}", Static).update(text)

    @on(Input.Submitted)
    @on(Input.Blurred)
    def commit(self, event: Input.Submitted | Input.Blurred) -> None:
        key = (event.input.id or "")[2:]
        kind = next((k for name, _label, k in OPTIONS if name == key), "text")
        if show_option(self.values.get(key)) == event.value:
            return  # unchanged: every write rewrites and reloads the file
        try:
            value = parse_option(kind, event.value.strip() if kind != "text" else event.value)
        except OptionError as exc:
            self.say(key, f"✘ {exc} (not saved)")
            return
        self.save(key, value)

    @on(Switch.Changed, "#o-sampling")
    def commit_sampling(self, event: Switch.Changed) -> None:
        self.save("sampling", event.value)

    @work(group="save-option")
    async def save(self, key: str, value: Any) -> None:
        try:
            result = await self.mework.link.call("settings.setMcpOptions", {key: value})
        except Exception as exc:  # noqa: BLE001 - the daemon's reason, beside the field
            self.say(key, f"✘ {describe(exc)} (not saved)")
            return
        self.values = dict(result.get("mcp") or {})
        self.mework.settings_state["mcp"] = self.values
        saved = sampling_words(bool(value)) if key == "sampling" else "✓ saved"
        self.say(key, saved)

    def action_back(self) -> None:
        self.app.pop_screen()


def sampling_words(on: bool) -> str:
    return "on: servers may sample" if on else "off: servers cannot sample"
