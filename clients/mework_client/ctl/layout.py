"""Plain-text layout for meworkctl: terminal styling, tables, ``key: value`` lines, value cells.

Records are plain classes with ``__slots__``, not dataclasses or NamedTuples: importing
dataclasses (and the inspect module it pulls in) was ~5.5 ms of ``meworkctl status``'s start-up,
and ``typing`` another ~1.5 ms (bench B6); ``unicodedata`` is loaded by the first non-ASCII cell.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any, TextIO

__all__ = [
    "BOLD",
    "DESCRIPTION_WIDTH",
    "DIM",
    "GREEN",
    "PLAIN",
    "RED",
    "Cell",
    "Style",
    "describe",
    "dumps",
    "format_table",
    "items",
    "key_values",
    "listing",
    "obj",
    "truncate",
    "when",
]

BOLD, DIM, RED, GREEN = "1", "2", "31", "32"  # SGR codes
DESCRIPTION_WIDTH = 60


class Style:
    """ANSI styling that is a no-op unless ``color`` (a terminal without ``NO_COLOR``);
    ``width``: the terminal's columns, which a table's last column is cut to fit (None: a pipe
    or a file gets whole lines)."""

    __slots__ = ("color", "width")

    def __init__(self, color: bool = False, width: int | None = None) -> None:
        self.color = color
        self.width = width

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Style) and other.color == self.color

    def __hash__(self) -> int:
        return hash(self.color)

    def __repr__(self) -> str:
        return f"Style(color={self.color})"

    @classmethod
    def for_stream(cls, stream: TextIO) -> Style:
        try:
            tty = stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        if not tty:
            return cls()
        try:
            width: int | None = os.get_terminal_size(stream.fileno()).columns
        except (AttributeError, ValueError, OSError):
            width = None
        return cls(not os.environ.get("NO_COLOR"), width)

    def apply(self, sgr: str, text: str) -> str:
        return f"\x1b[{sgr}m{text}\x1b[0m" if self.color and sgr and text else text

    def bold(self, text: str) -> str:
        return self.apply(BOLD, text)

    def red(self, text: str) -> str:
        return self.apply(RED, text)

    def green(self, text: str) -> str:
        return self.apply(GREEN, text)

    def dim(self, text: str) -> str:
        return self.apply(DIM, text)


PLAIN = Style()


class Cell:
    """A table cell with its own colour (padding is measured on ``text`` alone)."""

    __slots__ = ("sgr", "text")

    def __init__(self, text: str, sgr: str = "") -> None:
        self.text = text
        self.sgr = sgr


def _width(text: str) -> int:
    if text.isascii():
        return len(text)
    import unicodedata  # only for non-ASCII text: start-up time (bench B6)

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _cell_text(value: object) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(_cell_text(v) for v in value) or "-"
    if isinstance(value, float):
        return f"{value:g}" if value.is_integer() or abs(value) >= 1e6 else f"{value:.6g}"
    return " ".join(str(value).split("\n"))


def format_table(
    headers: Sequence[str], rows: Iterable[Sequence[object]], style: Style = PLAIN
) -> str:
    """Columns padded to their widest cell, a bold header row, two spaces between columns."""
    cells = [[v if isinstance(v, Cell) else Cell(_cell_text(v)) for v in row] for row in rows]
    widths = [_width(h) for h in headers]
    for row in cells:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], _width(cell.text))

    if style.width and cells:
        _fit_last_column(cells, widths, style.width)

    def line(row: Sequence[Cell]) -> str:
        last = len(row) - 1
        parts = [
            style.apply(c.sgr, c.text) + ("" if i == last else " " * (widths[i] - _width(c.text)))
            for i, c in enumerate(row)
        ]
        return "  ".join(parts).rstrip()

    return "\n".join([line([Cell(h, BOLD) for h in headers]), *(line(r) for r in cells)])


MIN_LAST_COLUMN = 20  # narrower than this, wrapping reads better than a cut


def _fit_last_column(cells: list[list[Cell]], widths: list[int], columns: int) -> None:
    """Cut the last column's cells (with ``…``) so that each line fits ``columns``."""
    room = max(columns - sum(widths[:-1]) - 2 * (len(widths) - 1), MIN_LAST_COLUMN)
    if widths[-1] <= room:
        return
    widths[-1] = room
    for row in cells:
        if len(row) == len(widths) and _width(row[-1].text) > room:
            row[-1] = Cell(_cut(row[-1].text, room), row[-1].sgr)


def _cut(text: str, room: int) -> str:
    kept: list[str] = []
    used = 1  # the "…"
    for ch in text:
        used += _width(ch)
        if used > room:
            break
        kept.append(ch)
    return "".join(kept).rstrip() + "…"


def key_values(pairs: Iterable[tuple[str, object]], style: Style = PLAIN) -> str:
    """``key: value`` lines, values aligned; ``None`` values are left out."""
    kept = [(k, v) for k, v in pairs if v is not None]
    if not kept:
        return ""
    width = max(len(k) for k, _ in kept) + 1
    return "\n".join(
        style.bold(f"{k}:") + " " * (width - len(k)) + " " + _cell_text(v) for k, v in kept
    )


def listing(title: str, headers: Sequence[str], rows: list[list[object]], style: Style) -> str:
    """``Title (N):`` and a table of the rows (none: just the title)."""
    head = style.bold(f"{title} ({len(rows)}):")
    return head + "\n" + format_table(headers, rows, style) if rows else head


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 tool``, ``2 tools`` (``many`` for irregular plurals: ``entry``/``entries``)."""
    return f"{count} {word if count == 1 else many or word + 's'}"


def truncate(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def describe(item: Mapping[str, Any]) -> str:
    """An item's description, on one line and cut to fit a table."""
    return truncate(str(item.get("description") or ""), DESCRIPTION_WIDTH)


def when(value: object) -> str | None:
    """A timestamp (epoch seconds or ISO 8601) as local ``YYYY-MM-DD HH:MM:SS``."""
    from datetime import datetime  # here, not at the top: start-up time (bench B6)

    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            moment = datetime.fromtimestamp(value)
        elif isinstance(value, str) and value:
            moment = datetime.fromisoformat(value).astimezone()
        else:
            return None
    except (ValueError, OverflowError, OSError):
        return str(value)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def dumps(value: object, indent: int | None = 2) -> str:
    separators = None if indent else (",", ":")
    return json.dumps(value, indent=indent, ensure_ascii=False, separators=separators)


def obj(value: object, key: str | None = None) -> dict[str, Any]:
    """``value`` as an object (or its ``key`` member when it wraps one), ``{}`` otherwise."""
    if key is not None and isinstance(value, dict) and isinstance(value.get(key), dict):
        value = value[key]
    return value if isinstance(value, dict) else {}


def items(value: object, key: str) -> list[dict[str, Any]]:
    """The objects in the list ``value[key]`` (listings answer ``{key: [...]}``)."""
    found = value.get(key) if isinstance(value, dict) else value
    return [v for v in found if isinstance(v, dict)] if isinstance(found, list) else []
