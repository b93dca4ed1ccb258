"""Small dialogs of the servers screen: the Add▾ menu, Import from JSON, and Remove's question."""

from typing import Any, ClassVar, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Footer, Input, OptionList, Select, Static, TextArea
from textual.widgets.option_list import Option

from mework_ui.fields import FieldError, parse_field
from mework_ui.link import describe
from mework_ui.model import HasModel, Model

__all__ = [
    "AddMenu",
    "ConfirmRemove",
    "ImportDialog",
    "PreviewDialog",
    "import_report",
    "read_inputs",
]


class AddMenu(ModalScreen[str | None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Back")]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog small"):
            yield Static("Add ▾")
            yield OptionList(
                Option("Add server", id="add"),
                Option("Import from JSON", id="import"),
                Option("Browse the MCP registry", id="browse"),
                Option("Install a bundle (.mcpb)", id="bundle"),
            )
        yield Footer(compact=True, show_command_palette=False)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)


def import_report(result: dict[str, Any], applied: bool) -> str:
    """What an import did, or (dry run) would do: one line per outcome, reasons in full."""
    verb = "" if applied else "would be "
    lines = [f"format: {result.get('format')}"]
    for key in ("added", "replaced", "skipped"):
        if result.get(key):
            lines.append(f"{verb}{key}: {', '.join(result[key])}")
    if result.get("duplicates"):
        lines.append(f"! duplicated in the text: {', '.join(result['duplicates'])}")
    lines += [f"✘ rejected {r.get('name')}: {r.get('reason')}" for r in result.get("rejected", [])]
    for need in result.get("needsInputs") or []:
        if isinstance(need, dict):
            servers = ", ".join(need.get("servers") or [])
            about = f" ({need['description']})" if need.get("description") else ""
            lines.append(f"needs input {need.get('id')}{about} for {servers}: fill Inputs")
    for rule in result.get("rules") or []:  # Claude Code's permission rules carried over
        if isinstance(rule, dict):
            lines.append(
                f"{verb}set: {rule.get('server')} {rule.get('field')} + {rule.get('pattern')} "
                f"(from permissions.{rule.get('list')} {rule.get('rule')})"
            )
    for warning in result.get("warnings") or []:
        if isinstance(warning, dict):
            where = ".".join(str(warning[k]) for k in ("name", "field") if warning.get(k))
            lines.append(f"! {where}: {warning.get('message')}")
        else:
            lines.append(f"! {warning}")
    return "\n".join(lines)


def read_inputs(screen: Screen[Any], report: Static) -> dict[str, str] | None:
    """The ``#inputs`` field (``ID=value …``, for ``${input:ID}``) of ``screen`` as a dict, or
    None when it does not read (then ``report`` says why)."""
    try:
        return parse_field("env", screen.query_one("#inputs", Input).value) or {}
    except FieldError as exc:
        report.update(f"✘ Inputs: {exc}")
        return None


class PreviewDialog(ModalScreen[None]):
    """A dialog that sends its fields to the daemon as a dry run (``#preview``, ctrl+e) or for
    real (``#apply``, ctrl+s); :meth:`send` is the subclass's."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Close"),
        Binding("ctrl+e", "preview", "Preview", priority=True),
        Binding("ctrl+s", "apply", "Apply", priority=True),
    ]

    @property
    def mework(self) -> Model:
        return cast(HasModel, self.app).model

    @on(Button.Pressed, "#preview")
    def action_preview(self) -> None:
        self.send(dry_run=True)

    @on(Button.Pressed, "#apply")
    def action_apply(self) -> None:
        self.send(dry_run=False)

    def send(self, dry_run: bool) -> None:
        raise NotImplementedError  # each dialog says what it sends


class ImportDialog(PreviewDialog):
    """Paste, preview (when the daemon can dry-run), then apply; the text is sent as pasted."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "apply", "Import", priority=True),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static("Import from JSON: paste mcpServers, servers, .mcp.json or a map")
            yield TextArea(id="text", soft_wrap=True)
            with Horizontal(classes="row"):
                yield Static("on conflict:", classes="label")
                choices = [("error", "error"), ("replace", "replace"), ("skip", "skip")]
                yield Select(choices, value="error", allow_blank=False, id="conflict")
                yield Button("Preview ^e", id="preview")
                yield Button("Import ^s", id="apply", variant="primary")
            with Horizontal(classes="row"):
                yield Static("Inputs:", classes="label")
                yield Input(placeholder="ID=value … for ${input:ID}", password=True, id="inputs")
            yield Static("", id="report")
        yield Footer(compact=True, show_command_palette=False)

    @work(exclusive=True, group="import")
    async def send(self, dry_run: bool) -> None:  # type: ignore[override]
        report = self.query_one("#report", Static)
        params: dict[str, Any] = {
            "text": self.query_one(TextArea).text,
            "onConflict": self.query_one(Select).value,
        }
        if (inputs := read_inputs(self, report)) is None:
            return
        if inputs:
            params["inputs"] = inputs
        if dry_run:
            if "servers.import/dryRun" in self.mework.link.missing:
                report.update("this meworkd cannot preview: Import applies at once")
                return
            params["dryRun"] = True
        try:
            result = await self.mework.link.call("servers.import", params)
        except Exception as exc:  # noqa: BLE001 - every failure is shown in the dialog
            report.update(self.failed(exc, dry_run))
            return
        report.update(import_report(result, applied=not dry_run))

    def failed(self, exc: Exception, dry_run: bool) -> str:
        data = getattr(exc, "data", None)
        if dry_run and getattr(exc, "kind", "") == "invalid_params" and "dryRun" in str(data):
            self.mework.link.missing.add("servers.import/dryRun")
            return "this meworkd cannot preview: Import applies at once"
        if isinstance(data, dict) and "line" in data:
            row, column = int(data["line"]) - 1, int(data.get("column", 1)) - 1
            area = self.query_one(TextArea)
            area.cursor_location = (max(row, 0), max(column, 0))
            area.focus()
            return f"✘ not valid JSON at line {row + 1}, column {column + 1}: {describe(exc)}"
        return f"✘ {describe(exc)}"


class ConfirmRemove(ModalScreen[str | None]):
    """No silent destructive action: the conversations that select the server are named."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "confirm", "Remove"),
        Binding("n,escape", "dismiss(None)", "Keep"),
    ]

    def __init__(self, name: str) -> None:
        super().__init__()
        self.server = name

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog small"):
            yield Static(f"Remove server {self.server!r}?", id="question")
            yield Static("", id="users")
            yield Static("y Remove   n Keep")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.find_users()

    @work
    async def find_users(self) -> None:
        app = cast(HasModel, self.app).model
        listed = await app.call("conversations.list") or {}
        users = [
            c["id"]
            for c in listed.get("conversations", [])
            if self.server in c.get("mcpServers", [])
        ]
        text = f"selected by: {', '.join(users)}" if users else "no conversation selects it"
        self.query_one("#users", Static).update(text)

    def action_confirm(self) -> None:
        self.dismiss(self.server)
