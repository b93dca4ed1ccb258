"""JSON with comments (JSONC): reading it as JSON, and a map of where each value sits in the text.

JSONC is JSON plus ``//`` and ``/* */`` comments and trailing commas, as VS Code, Zed and many
READMEs publish it. :func:`as_json` turns such text into plain JSON of the *same length*:
comments and trailing commas become spaces and newlines stay where they were, so any JSON parser
can read it and its error positions (line, column) are positions in the user's text. Block
comments do not nest (as in JSONC and JavaScript): ``/* a /* b */ c */`` ends at the first
``*/`` and the rest is reported where the JSON breaks. A UTF-8 byte order mark is allowed.

:class:`Source` maps an already accepted document: for an object, its members with the spans of
their keys, values and commas. :mod:`meworkd.settings.jsonc_edit` edits the text with it. All of
it is linear in the size of the text, the scanning done by regular expressions and the C JSON
decoder.
"""

import json
import re
from dataclasses import dataclass, field

__all__ = ["Layout", "Member", "Source", "as_json", "blank_comments"]

_BOM = "\ufeff"

# A string, stopping at a line end when unterminated (JSON strings hold no raw newline). Each
# pattern below also matches strings, so that "//" or "," inside one is left alone as text.
_STRING = r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"?'
_COMMENTS = re.compile(_STRING + r"|//[^\n]*|/\*.*?(?:\*/|\Z)", re.DOTALL)
_TRAILING_COMMA = re.compile(_STRING + r"|,(?=\s*[\]}])")
_BLANKS = re.compile(r"[ \t\r\n]*")
_DECODER = json.JSONDecoder()


def _blank_matches(text: str, pattern: re.Pattern[str], *, check: bool = False) -> str:
    """``text`` with what ``pattern`` matches outside strings blanked (line ends kept)."""
    pieces: list[str] = []
    done = 0
    for match in pattern.finditer(text):
        found = match.group()
        if found[0] == '"':
            continue
        if check and found.startswith("/*") and (len(found) < 4 or not found.endswith("*/")):
            raise json.JSONDecodeError("Unterminated /* comment", text, match.start())
        pieces.append(text[done : match.start()])
        pieces.append(re.sub(r"[^\r\n]", " ", found))
        done = match.end()
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def blank_comments(text: str) -> str:
    """``text`` with comments (and a leading byte order mark) blanked out, positions kept.

    Raises :class:`json.JSONDecodeError` at an unterminated ``/*`` comment.
    """
    if text.startswith(_BOM):
        text = " " + text[1:]
    return _blank_matches(text, _COMMENTS, check=True)


def as_json(text: str) -> str:
    """Plain JSON text for JSONC ``text``: comments and trailing commas blanked, positions kept."""
    return _blank_matches(blank_comments(text), _TRAILING_COMMA)


@dataclass(slots=True)
class Member:
    """One ``"key": value`` of an object: where its key, value and following comma are."""

    key: str
    key_start: int
    key_end: int
    value_start: int
    value_end: int
    comma: int | None = None  # position of the comma after the value, if there is one


@dataclass(slots=True)
class Layout:
    """An object in the text: its braces and its members in text order (repeats included)."""

    open: int
    close: int = -1
    members: list[Member] = field(default_factory=list)


class Source:
    """JSONC text (already known to parse), mapped object by object on demand.

    Only the objects an edit descends into are mapped; the values in between are skipped by
    the C JSON decoder, so mapping stays linear in the size of the text and fast.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._bare = blank_comments(text)  # commas kept: trailing ones are layout too
        self._plain = _blank_matches(self._bare, _TRAILING_COMMA)

    def _skip(self, pos: int) -> int:
        match = _BLANKS.match(self._bare, pos)
        assert match is not None  # matches the empty string at least
        return match.end()

    def _at(self, pos: int) -> str:
        return self._bare[pos : pos + 1]

    def is_object(self, pos: int) -> bool:
        return self._at(pos) == "{"

    def root(self) -> Layout:
        """The top-level object; :class:`ValueError` when the text does not hold one."""
        start = self._skip(0)
        layout = self.object_at(start)
        if self._skip(layout.close + 1) != len(self._bare):
            raise ValueError("text after the document")
        return layout

    def object_at(self, open_at: int) -> Layout:
        """The members of the object whose ``{`` is at ``open_at``."""
        if not self.is_object(open_at):
            raise ValueError("not an object")
        layout = Layout(open_at)
        pos = self._skip(open_at + 1)
        while self._at(pos) != "}":
            key, key_end = _DECODER.raw_decode(self._plain, pos)
            colon = self._skip(key_end)
            if not isinstance(key, str) or self._at(colon) != ":":
                raise ValueError("expected a key and a colon")
            value_start = self._skip(colon + 1)
            _, value_end = _DECODER.raw_decode(self._plain, value_start)
            member = Member(key, pos, key_end, value_start, value_end)
            layout.members.append(member)
            pos = self._skip(value_end)
            if self._at(pos) == ",":
                member.comma = pos
                pos = self._skip(pos + 1)
            elif self._at(pos) != "}":
                raise ValueError("expected a comma or the end of the object")
        layout.close = pos
        return layout
