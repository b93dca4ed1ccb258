"""The detail page's Rules tab: the server's per-tool rules, what each does, and removing one.

The rules are the entry's ``alwaysAllowTools`` (an approval answered "always" adds one) and
``disabledTools``, names or globs, as ``servers.list`` gives them, so a rule written into the
settings file by hand shows once meworkd has reloaded it. Removing one goes through the
daemon's own edits (``servers.setToolEnabled``, ``servers.update``), which change only that
value in the file: the user's comments stay.
"""

from fnmatch import fnmatchcase
from typing import Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Static

from mework_ui.rows import selected, sync_rows
from mework_ui.tabs import Pane

__all__ = ["RULE_LISTS", "RulesPane", "rule_matches"]

# Each list of rules and what a rule in it does, in words.
RULE_LISTS = {
    "alwaysAllowTools": "runs without asking",
    "disabledTools": "never offered or callable",
}
NO_RULES = (
    "No per-tool rules. Answering a question with a (always) adds one to alwaysAllowTools; "
    "rules written in the settings file show here once meworkd has read it."
)
HOW_TO_REMOVE = "delete removes the selected rule from the settings file (your comments stay)"
_SEPARATOR = "\x1f"  # between a row key's list and pattern: no tool name holds it


def rule_matches(pattern: str, tools: list[str] | None) -> str:
    """Which of the tools the server last listed ``pattern`` matches, as the daemon matches
    them (shell-style globs, case-sensitive; docs/api.md "Per-tool rules")."""
    if tools is None:
        return "? not listed yet"  # the server has not reported its tools
    hits = [t for t in tools if t == pattern or fnmatchcase(t, pattern)]
    if not hits:
        return "none listed"
    if len(hits) == 1 and hits[0] == pattern:
        return "this tool"
    shown = ", ".join(hits[:3]) + (f" (+{len(hits) - 3})" if len(hits) > 3 else "")
    return shown


class RulesPane(Pane):
    kind = "tools"  # the listing its "matches" column is held against
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("delete", "remove", "Remove rule", tooltip="Remove the rule from the file"),
        Binding("x", "remove", "Remove rule", show=False),
    ]

    def compose(self) -> ComposeResult:
        yield DataTable(id="rule-table", cursor_type="row")
        yield Static("", id="rule-note")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        columns = (("Rule", "rule"), ("In", "list"), ("What it does", "does"), ("Matches", "hits"))
        for label, key in columns:
            table.add_column(label, key=key)
        super().on_mount()
        self.refresh_model()

    def rules(self) -> list[tuple[str, str]]:
        """(list, pattern) of every rule of the server, in the file's order."""
        entry = self.mework.servers.get(self.server or "", {})
        return [
            (field, str(pattern))
            for field in RULE_LISTS
            for pattern in entry.get(field) or []
        ]  # fmt: skip

    def refresh_model(self) -> None:
        table = self.query_one(DataTable)
        if not table.columns:
            return  # composed but not mounted yet: on_mount fills it
        known = self.listed()
        tools = [str(t.get("name")) for t in known] if known else None
        rows = [
            (
                f"{field}{_SEPARATOR}{pattern}",
                (pattern, field, RULE_LISTS[field], rule_matches(pattern, tools)),
            )
            for field, pattern in self.rules()
        ]
        sync_rows(table, ("rule", "list", "does", "hits"), rows)
        self.query_one("#rule-note", Static).update(HOW_TO_REMOVE if rows else NO_RULES)

    @work(group="rules")
    async def action_remove(self) -> None:
        key = selected(self.query_one(DataTable))
        if key is None or self.server is None:
            return
        field, pattern = key.split(_SEPARATOR, 1)
        if field == "disabledTools":  # the Tools tab's switch, for a name or a pattern alike
            params: dict[str, Any] = {"name": self.server, "tool": pattern, "enabled": True}
            done = await self.mework.call("servers.setToolEnabled", params)
        else:
            entry = self.mework.servers.get(self.server, {})
            kept = [p for p in entry.get(field) or [] if p != pattern]
            patch = {field: kept or None}  # null removes the key
            done = await self.mework.call("servers.update", {"name": self.server, "patch": patch})
        if done is not None:
            self.notify(f"removed {pattern} from {field}")
