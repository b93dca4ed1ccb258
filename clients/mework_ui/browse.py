"""Browse: find a server in the MCP registries as you type, see what it needs, install it.

The list is ``servers.search`` (words of the name or the description); the detail of the
highlighted server is a dry run of ``servers.install`` (its ways to run, the command it would
run, the inputs it asks for); Install sends the inputs typed as ``NAME=value`` (a ``${VAR}``
value stores a reference to meworkd's environment instead of the secret).
"""

from typing import Any, ClassVar, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Footer, Input, Static

from mework_ui.dialogs import read_inputs
from mework_ui.link import describe
from mework_ui.model import HasModel, Model

__all__ = ["BrowseScreen", "install_words"]


def install_words(result: dict[str, Any]) -> str:
    """A dry run's or an install's result, in lines a person reads."""
    lines = []
    for choice in result.get("choices") or []:
        mark = "▸" if choice.get("index") == result.get("choice") else " "
        what = choice.get("identifier") or choice.get("url") or ""
        why = "" if choice.get("supported") else f" ✘ {choice.get('why')}"
        lines.append(f"{mark} {choice.get('kind')} {what}{why}")
    server = result.get("server") or {}
    runs = server.get("url") or " ".join([str(server.get("command")), *server.get("args", [])])
    lines.append(f"runs: {runs}")
    lines += [f"! {w}" for w in result.get("warnings") or []]
    for need in result.get("needsInputs") or []:
        secret = " (secret)" if need.get("secret") else ""
        about = f": {need['description']}" if need.get("description") else ""
        lines.append(f"needs {need.get('id')}{secret}{about}")
    if result.get("installed"):
        lines.append(f"✓ installed as {result.get('name')}")
    return "\n".join(lines)


class BrowseScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Back"),
        Binding("ctrl+s", "install", "Install", priority=True),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static("Browse the MCP registry: type words of a name or a description")
            yield Input(placeholder="search", id="query")
            yield DataTable(id="found", cursor_type="row")
            yield Static("", id="detail")
            with Horizontal(classes="row"):
                yield Static("Inputs:", classes="label")
                yield Input(placeholder="NAME=value …", password=True, id="inputs")
                yield Button("Install ^s", id="install", variant="primary")
        yield Footer(compact=True, show_command_palette=False)

    @property
    def mework(self) -> Model:
        return cast(HasModel, self.app).model

    def on_mount(self) -> None:
        table = self.query_one("#found", DataTable)
        table.add_columns("NAME", "VERSION", "DESCRIPTION")
        self.search("")

    @on(Input.Changed, "#query")
    def typed(self, event: Input.Changed) -> None:
        self.search(event.value)

    @work(exclusive=True, group="search")
    async def search(self, query: str) -> None:
        detail = self.query_one("#detail", Static)
        try:
            result = await self.mework.link.call("servers.search", {"query": query})
        except Exception as exc:  # noqa: BLE001 - every failure is shown on the screen
            detail.update(f"✘ {describe(exc)}")
            return
        table = self.query_one("#found", DataTable)
        table.clear()
        for server in result.get("servers") or []:
            status = " (deprecated)" if server.get("status") == "deprecated" else ""
            description = str(server.get("description") or "")[:60]
            table.add_row(server["name"], server.get("version"), description + status,
                          key=server["name"])  # fmt: skip
        offline = [r for r in result.get("registries") or [] if not r.get("ok")]
        detail.update(
            "\n".join(f"offline, from the last copy: {r.get('error')}" for r in offline)
            or f"{result.get('total', 0)} found"
        )

    def chosen(self) -> str | None:
        table = self.query_one("#found", DataTable)
        if table.row_count == 0:
            return None
        return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)

    @on(DataTable.RowHighlighted, "#found")
    def highlighted(self) -> None:
        self.send(dry_run=True)

    @on(Button.Pressed, "#install")
    def action_install(self) -> None:
        self.send(dry_run=False)

    @work(exclusive=True, group="install")
    async def send(self, dry_run: bool) -> None:
        detail = self.query_one("#detail", Static)
        name = self.chosen()
        if name is None:
            return
        if (inputs := read_inputs(self, detail)) is None:
            return
        params = {"name": name, "inputs": inputs, "dryRun": dry_run}
        try:
            result = await self.mework.link.call("servers.install", params)
        except Exception as exc:  # noqa: BLE001 - every failure is shown on the screen
            detail.update(f"✘ {describe(exc)}")
            return
        detail.update(install_words(result))
