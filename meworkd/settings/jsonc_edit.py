"""Writing the settings file as small edits of the user's text, so comments and layout survive.

Why our own editor: the Python JSONC/JSON5 libraries either drop comments on write
(``commentjson``, ``jsonc-parser``, ``json5``) or keep them only for JSON5's wider grammar
through a low-level, slow round-trip model (``json-five``). What meworkd needs is narrow: the
document before and after one change is known, so :func:`rewrite` compares the two and edits
only the text of what differs. A changed scalar or list gets its value's text replaced; a changed
object is edited member by member; a removed key is cut with its comma (and its line when it had
one of its own, with a comment trailing on that line); an added key goes before the kept member
that follows it in the new document (``type`` first in an entry), else after the last member,
indented like its siblings; a key renamed in place (same position) has its key text replaced
and its value edited as above. Everything else, comments, blank lines, key order, indentation,
trailing commas, CRLF line ends and a byte order mark, stays byte for byte.

The result is parsed back and compared with the new document; when the text cannot be edited or
the edit would not read back as the document, :func:`rewrite` returns None and the caller writes
the document afresh (and says so in its log). Each step is linear in the size of the text.
"""

import json
import re
from dataclasses import dataclass
from typing import Any

from meworkd.settings.jsonc import Layout, Member, Source, as_json

__all__ = ["rewrite"]

# The first indented line, unless it is inside a block comment (" * text"): one level.
_FIRST_INDENT = re.compile(r"\n([ \t]+)[^\s*]")
_REST_OF_LINE = re.compile(r"[ \t]*(?://[^\r\n]*)?(?=\r?\n)")

Edit = tuple[int, int, str]


@dataclass(slots=True, frozen=True)
class _Style:
    newline: str
    unit: str  # one level of indentation

    @classmethod
    def of(cls, text: str) -> "_Style":
        match = _FIRST_INDENT.search(text)
        return cls("\r\n" if "\r\n" in text else "\n", match[1] if match else "  ")

    def dump(self, value: Any, indent: str) -> str:
        text = json.dumps(value, indent=self.unit, ensure_ascii=False)
        return text.replace("\n", self.newline + indent)


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _indent_at(text: str, pos: int) -> str:
    """The indentation of the line holding ``pos``."""
    start = _line_start(text, pos)
    match = re.compile(r"[ \t]*").match(text, start)
    assert match is not None  # matches the empty string at least
    return match.group()


def _starts_line(text: str, pos: int) -> bool:
    return not text[_line_start(text, pos) : pos].strip(" \t")


def _rest_of_line(text: str, pos: int) -> int | None:
    """Where the line of ``pos`` ends when only blanks and a ``//`` comment follow ``pos``."""
    match = _REST_OF_LINE.match(text, pos)
    return match.end() if match else None


def _after_newline(text: str, pos: int) -> int:
    return pos + (2 if text.startswith("\r\n", pos) else 1)


def _deletion(text: str, member: Member) -> Edit:
    """Cut ``member`` with its comma; with its whole line when it had a line of its own."""
    end = member.comma + 1 if member.comma is not None else member.value_end
    line_end = _rest_of_line(text, end)
    if line_end is not None and _starts_line(text, member.key_start):
        return _line_start(text, member.key_start), _after_newline(text, line_end), ""
    return member.key_start, end, ""


def _member_indent(text: str, layout: Layout, style: _Style) -> str:
    if layout.members and "\n" in text[layout.open : layout.members[0].key_start]:
        return _indent_at(text, layout.members[0].key_start)  # its line, comment-led or not
    return _indent_at(text, layout.open) + style.unit


def _key(key: str) -> str:
    return json.dumps(key, ensure_ascii=False)


def _renamed(old: dict[str, Any], new: dict[str, Any]) -> tuple[str, str] | None:
    """``(old_key, new_key)`` when exactly one key changed its name in place."""
    gone = [key for key in old if key not in new]
    came = [key for key in new if key not in old]
    if len(gone) != 1 or len(came) != 1 or len(old) != len(new):
        return None
    if list(old).index(gone[0]) != list(new).index(came[0]):
        return None
    return gone[0], came[0]


@dataclass(slots=True)
class _ObjectEdit:
    """The edits of one object of the text, from its old and new contents."""

    source: Source
    style: _Style
    edits: list[Edit]

    @property
    def text(self) -> str:
        return self.source.text

    def object(self, layout: Layout, old: dict[str, Any], new: dict[str, Any]) -> None:
        by_key: dict[str, list[Member]] = {}
        for member in layout.members:
            by_key.setdefault(member.key, []).append(member)
        renamed = _renamed(old, new)
        dropped: set[int] = set()
        for key in old:
            if key not in new and (renamed is None or key != renamed[0]):
                dropped.update(id(member) for member in by_key.get(key, ()))
        added: list[str] = []
        for key in new:
            was = renamed[0] if renamed is not None and key == renamed[1] else key
            members = by_key.get(was)
            if was not in old or not members:
                added.append(key)
                continue
            if was != key:
                dropped.update(id(member) for member in members[:-1])
                self.edits.append((members[-1].key_start, members[-1].key_end, _key(key)))
            if old[was] != new[key]:
                self.value(members[-1], old[was], new[key])
        self.edits.extend(_deletion(self.text, m) for m in layout.members if id(m) in dropped)
        survivors = [m for m in layout.members if id(m) not in dropped]
        at_end = self.insert_in_order(layout, survivors, new, set(added))
        self.tail(layout, survivors, {key: new[key] for key in at_end})

    def insert_in_order(
        self, layout: Layout, survivors: list[Member], new: dict[str, Any], added: set[str]
    ) -> list[str]:
        """Put each added key before the kept member that follows it in ``new`` (``type`` goes
        first in an entry, as meworkd orders it); the keys that follow all of them are left."""
        following = {m.key: m for m in survivors}
        waiting: list[str] = []
        for key in new:
            if key in added:
                waiting.append(key)
            elif waiting and key in following:
                self.insert_before(layout, following[key], {k: new[k] for k in waiting})
                waiting = []
        return waiting

    def insert_before(self, layout: Layout, member: Member, added: dict[str, Any]) -> None:
        text = self.text
        if "\n" in text[layout.open : layout.close] and _starts_line(text, member.key_start):
            indent = _indent_at(text, member.key_start)
            block = "".join(
                f"{indent}{_key(k)}: {self.style.dump(v, indent)},{self.style.newline}"
                for k, v in added.items()
            )
            self.edits.append((_line_start(text, member.key_start),) * 2 + (block,))
            return
        inline = "".join(
            f"{_key(k)}: {json.dumps(v, ensure_ascii=False)}, " for k, v in added.items()
        )
        self.edits.append((member.key_start, member.key_start, inline))

    def value(self, member: Member, old: Any, new: Any) -> None:
        opens = self.source.is_object(member.value_start)
        if opens and isinstance(old, dict) and isinstance(new, dict):
            self.object(self.source.object_at(member.value_start), old, new)
            return
        indent = _indent_at(self.text, member.key_start)
        self.edits.append((member.value_start, member.value_end, self.style.dump(new, indent)))

    def tail(self, layout: Layout, survivors: list[Member], added: dict[str, Any]) -> None:
        """Commas at the end of the object, and the added members after its last one."""
        trailing = bool(layout.members) and layout.members[-1].comma is not None
        last = survivors[-1] if survivors else None
        if not added:
            if last is not None and last.comma is not None and not trailing:
                self.edits.append((last.comma, last.comma + 1, ""))
            return
        if last is not None and last.comma is None:
            self.edits.append((last.value_end, last.value_end, ","))
        if last is None:
            anchor = layout.open + 1
        else:
            anchor = last.value_end if last.comma is None else last.comma + 1
        one_line = "\n" not in self.text[layout.open : layout.close]
        if one_line and last is not None:
            entries = [f"{_key(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in added.items()]
            self.edits.append((anchor, anchor, "".join(f" {e}," for e in entries)[:-1]))
            return
        anchor = _rest_of_line(self.text, anchor) or anchor
        indent = _member_indent(self.text, layout, self.style)
        entries = [f"{_key(k)}: {self.style.dump(v, indent)}" for k, v in added.items()]
        block = "".join(f"{self.style.newline}{indent}{e}," for e in entries)
        block = block if trailing else block[:-1]
        if one_line:  # an empty {} opens up, its brace on a line of its own
            block += self.style.newline + _indent_at(self.text, layout.open)
        self.edits.append((anchor, anchor, block))


def _apply(text: str, edits: list[Edit]) -> str | None:
    """``text`` with ``edits`` made (None if two of them overlap)."""
    pieces: list[str] = []
    done = 0
    for start, end, replacement in sorted(edits, key=lambda edit: (edit[0], edit[1])):
        if start < done:
            return None
        pieces.append(text[done:start])
        pieces.append(replacement)
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


def rewrite(data: bytes, old: dict[str, Any], new: dict[str, Any]) -> bytes | None:
    """The settings text ``data`` (holding ``old``) edited to hold ``new``; None if it cannot be.

    None tells the caller to write ``new`` afresh: ``data`` is not JSONC this editor reads, or
    the edited text would not read back as ``new``.
    """
    try:
        text = data.decode("utf-8")
        source = Source(text)
        editor = _ObjectEdit(source, _Style.of(text), [])
        editor.object(source.root(), old, new)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    edited = _apply(text, editor.edits)
    if edited is None:
        return None
    try:
        if json.loads(as_json(edited)) != new:
            return None
    except (ValueError, RecursionError):
        return None
    return edited.encode("utf-8")
