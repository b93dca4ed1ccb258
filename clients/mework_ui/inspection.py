"""Prompts and Resources tabs: list them, read a resource, fill a prompt's arguments with the
server's completions and get it (servers.getPrompt / readResource / complete, where offered)."""

from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Input, Static

from mework_ui.link import describe
from mework_ui.tabs import NOTHING_YET, Pane

__all__ = ["PromptsPane", "ResourcesPane", "show_content"]

NOT_HERE = "this meworkd cannot {what} yet (it answers method_not_found)"


def show_content(result: dict[str, Any]) -> str:
    """Messages or contents as plain text; binary data only by its size."""
    lines: list[str] = []
    for message in result.get("messages") or []:
        content = message.get("content") or {}
        body = content.get("text") if content.get("type") == "text" else f"[{content.get('type')}]"
        lines.append(f"{message.get('role')}: {body}")
    for item in result.get("contents") or []:
        if item.get("text") is not None:
            lines.append(str(item["text"]))
        else:
            lines.append(f"[binary {item.get('mimeType') or ''}, {item.get('size', '?')} bytes]")
    lines += [f"(cut: {', '.join(map(str, result['cut']))})"] if result.get("cut") else []
    return "\n".join(lines)


class _Listing(Pane):
    columns: tuple[tuple[str, str], ...] = ()

    def compose(self) -> ComposeResult:
        yield DataTable(cursor_type="row", classes="listing")
        yield Vertical(classes="form")
        yield Static("", classes="hint")
        yield Static(NOTHING_YET, classes="out")

    def on_mount(self) -> None:
        for label, key in self.columns:
            self.query_one(DataTable).add_column(label, key=key)
        super().on_mount()
        self.refresh_model()

    def rows(self) -> list[tuple[str, tuple[str, ...]]]:
        return []

    def refresh_model(self) -> None:
        table = self.query_one(DataTable)
        if not table.columns:
            return  # composed but not mounted yet: on_mount adds the columns, then fills it
        rows = self.rows()
        if [str(k.value) for k in table.rows] != [key for key, _cells in rows]:
            table.clear()
            for key, cells in rows:
                table.add_row(*cells, key=key)
        if rows and str(self.query_one(".out", Static).render()) == NOTHING_YET:
            self.say("Enter on a row to " + ("get it" if self.kind == "prompts" else "read it"))

    def say(self, text: str) -> None:
        self.query_one(".out", Static).update(text)

    async def ask(self, method: str, params: dict[str, Any], what: str) -> None:
        if method in self.mework.link.missing:
            self.say(NOT_HERE.format(what=what))
            return
        try:
            result = await self.mework.link.call(method, {"name": self.server, **params})
        except Exception as exc:  # noqa: BLE001 - said where the answer would be, never a crash
            missing = method in self.mework.link.missing
            self.say(NOT_HERE.format(what=what) if missing else f"✘ {describe(exc)}")
            return
        self.say(show_content(result) or "(empty)" if isinstance(result, dict) else "(empty)")


class ResourcesPane(_Listing):
    kind = "resources"
    columns = (("URI", "uri"), ("Name", "name"), ("Type", "type"))

    def rows(self) -> list[tuple[str, tuple[str, ...]]]:
        rows: list[tuple[str, tuple[str, ...]]] = [
            (
                str(r.get("uri")),
                (str(r.get("uri")), str(r.get("name") or ""), str(r.get("mimeType") or "")),
            )
            for r in self.listed()
        ]
        templates = self.listed("resourceTemplates")
        return rows + [
            (str(t.get("uriTemplate")), (str(t.get("uriTemplate")), "", "template"))
            for t in templates
        ]

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """A resource is read; a template's URI is given to edit first (its {variables})."""
        uri = str(event.row_key.value)
        form = self.query_one(".form", Vertical)
        form.remove_children()
        if any(t.get("uriTemplate") == uri for t in self.listed("resourceTemplates")):
            field = Input(uri, id="r-uri", compact=True)
            form.mount(field)
            field.focus()
            self.say("a URI template: fill in its {variables}, Enter reads it")
        else:
            self.read(uri)

    @on(Input.Submitted, "#r-uri")
    def uri_submitted(self, event: Input.Submitted) -> None:
        self.read(event.value)

    @work(exclusive=True, group="read")
    async def read(self, uri: str) -> None:
        self.say("… reading")
        await self.ask("servers.readResource", {"uri": uri}, "read resources")


class PromptsPane(_Listing):
    kind = "prompts"
    columns = (("Prompt", "name"), ("Arguments (* required)", "args"))
    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+g", "get", "Get prompt")]
    chosen: str | None = None

    def rows(self) -> list[tuple[str, tuple[str, ...]]]:
        def args(p: dict[str, Any]) -> str:
            names = [
                f"{a.get('name')}{'*' * bool(a.get('required'))}" for a in p.get("arguments") or []
            ]
            return ", ".join(names)

        return [(str(p.get("name")), (str(p.get("name")), args(p))) for p in self.listed()]

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """A form with one field per argument; Enter in a field (or ctrl+g) gets the prompt."""
        self.chosen = str(event.row_key.value)
        prompt = next((p for p in self.listed() if p.get("name") == self.chosen), {})
        form = self.query_one(".form", Vertical)
        form.remove_children()
        fields, rows = [], []
        for argument in prompt.get("arguments") or []:
            name, required = str(argument.get("name")), bool(argument.get("required"))
            field = Input(placeholder=argument.get("description") or "", name=name, compact=True)
            # A label beside each field: a placeholder goes once something is typed.
            label = Static(f"{name}{' *' * required}", classes="arg-label")
            fields.append(field)
            rows.append(Horizontal(label, field, classes="row"))
        form.mount_all(rows)
        if fields:
            fields[0].focus()
            self.say(f"{self.chosen}: fill the arguments, Enter gets it")
        else:
            self.action_get()

    def values(self) -> dict[str, str]:
        return {i.name or "": i.value for i in self.query(".form Input").results(Input) if i.value}

    @on(Input.Submitted, ".form Input")
    def submitted(self) -> None:
        self.action_get()

    @work(exclusive=True, group="get")
    async def action_get(self) -> None:
        if self.chosen is not None:
            self.say("… getting")
            params = {"prompt": self.chosen, "arguments": self.values()}
            await self.ask("servers.getPrompt", params, "get prompts")

    @on(Input.Changed, ".form Input")
    def typed(self, event: Input.Changed) -> None:
        self.complete(event.input.name or "", event.value)

    @work(exclusive=True, group="complete")
    async def complete(self, argument: str, value: str) -> None:
        """The server's completions for what is typed so far, shown under the form."""
        if "servers.complete" in self.mework.link.missing or self.chosen is None:
            return
        context = {k: v for k, v in self.values().items() if k != argument}
        params = {
            "name": self.server,
            "ref": {"type": "ref/prompt", "name": self.chosen},
            "argument": {"name": argument, "value": value},
            "contextArguments": context,
        }
        try:
            result = await self.mework.link.call("servers.complete", params)
        except Exception:  # noqa: BLE001 - completion is a convenience: its absence is silent
            return
        values = result.get("values") or [] if isinstance(result, dict) else []
        hint = f"{argument}: {', '.join(map(str, values[:10]))}" if values else ""
        self.query_one(".hint", Static).update(hint)
