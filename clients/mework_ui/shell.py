"""What every screen shares: the help screen of keys, and the notice shown below 80×24."""

from collections.abc import Iterable, Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

__all__ = ["MIN_SIZE", "HelpScreen", "TooSmall", "keys_text", "too_small"]

MIN_SIZE = (80, 24)
# Shown in a key's place: Textual's names are not what the keyboard says.
KEY_NAMES = {"escape": "esc", "delete": "del", "enter": "⏎", "question_mark": "?"}


def too_small(width: int, height: int) -> bool:
    return width < MIN_SIZE[0] or height < MIN_SIZE[1]


def _key(binding: Binding) -> str:
    keys = [KEY_NAMES.get(k, k) for k in binding.key.split(",")]
    return "/".join(keys)


def keys_text(sections: Iterable[tuple[str, Sequence[BindingType]]]) -> str:
    """Every binding of every screen by name, the hidden ones too (the footer clips)."""
    lines: list[str] = []
    for title, bindings in sections:
        keys: dict[tuple[str, str], list[str]] = {}  # one line per action, all its keys
        for binding in bindings:
            if isinstance(binding, Binding) and binding.description:
                what = binding.tooltip or binding.description  # the footer's words are short
                keys.setdefault((binding.action, what), []).append(_key(binding))
        lines.append(title)
        lines += [f"  {'/'.join(k):12} {what}" for (_action, what), k in keys.items()]
        lines.append("")
    return "\n".join(lines).rstrip()


class HelpScreen(ModalScreen[None]):
    """The keys of each screen; the footer shows what fits, this shows all of them."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,f1", "dismiss(None)", "Close")
    ]

    def __init__(self, sections: Sequence[tuple[str, Sequence[BindingType]]]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static("Keys (esc closes; ctrl+p lists every action by name)", id="help-title")
            with VerticalScroll(id="help-body"):
                yield Static(keys_text(self.sections), id="help-keys")
        yield Footer(compact=True, show_command_palette=False)


class TooSmall(ModalScreen[None]):
    """Covers everything while the terminal is smaller than the layout needs."""

    def compose(self) -> ComposeResult:
        yield Static("", id="too-small")

    def on_mount(self) -> None:
        self.show(self.app.size.width, self.app.size.height)

    def show(self, width: int, height: int) -> None:
        need_w, need_h = MIN_SIZE
        self.query_one("#too-small", Static).update(
            f"make the terminal at least {need_w}×{need_h}\n(now {width}×{height})"
        )
