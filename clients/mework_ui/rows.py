"""Tables keyed by name: the highlighted row's key, and rows updated in place (cursor kept)."""

from collections.abc import Iterable, Sequence
from typing import Any

from textual.widgets import DataTable

__all__ = ["selected", "sync_rows"]


def selected(table: DataTable[Any]) -> str | None:
    """The key of the row under the cursor, or None for an empty table."""
    if not table.row_count:
        return None
    return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)


def sync_rows(
    table: DataTable[Any], columns: Sequence[str], rows: Iterable[tuple[str, Sequence[str]]]
) -> None:
    """Make ``table`` hold ``rows`` (key, cells) in place, so the cursor stays put."""
    wanted = dict(rows)
    for key in [str(k.value) for k in table.rows if k.value not in wanted]:
        table.remove_row(key)
    for key, cells in wanted.items():
        if key in table.rows:
            for column, value in zip(columns, cells, strict=True):
                table.update_cell(key, column, value, update_width=True)
        else:
            table.add_row(*cells, key=key)
