"""JSON with comments (JSONC): reading it as JSON, and a map of where each value sits in the text.

JSONC is JSON plus ``//`` and ``/* */`` comments and trailing commas, as VS Code, Zed and many
READMEs publish it. :func:`as_json` turns such text into plain JSON of the *same length*:
comments and trailing commas become spaces and newlines stay where they were, so any JSON parser
can read it and its error positions (line, column) are positions in the user's text. Block
comments do not nest (as in JSONC and JavaScript): ``/* a /* b */ c */`` ends at the first
``*/`` and the rest is reported where the JSON breaks. A UTF-8 byte order mark is allowed.

:func:`parse_layout` maps an already accepted document: for every object its members with the
spans of their keys, values and commas. :mod:`meworkd.settings.jsonc_edit` edits the text with
it. Both are one linear pass of a regular expression, so they stay O(size of the text).
"""

import json
import re
from dataclasses import dataclass, field

__all__ = ["Layout", "Member", "as_json", "blank_comments", "parse_layout"]

_BOM = "\ufeff"

# A string (stopping at a line end when unterminated, as JSON strings hold no raw newline), a
# comment, or a character that starts a comment.
_STRING = r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"?'
_COMMENTS = re.compile(_STRING + r"|//[^\n]*|/\*(?:[^*]|\*(?!/))*(?:\*/)?", re.DOTALL)
_TRAILING_COMMA = re.compile(_STRING + r"|,(?=\s*[\]}])")
_TOKENS = re.compile(_STRING + r'|[{}\[\]:,]|[^\s{}\[\]:,"]+')


def _blank(text: str) -> str:
    """The same text with every character but a line end replaced by a space."""
    return re.sub(r"[^\r\n]", " ", text)


def blank_comments(text: str) -> str:
    """``text`` with comments (and a leading byte order mark) blanked out, positions kept.

    Raises :class:`json.JSONDecodeError` at an unterminated ``/*`` comment.
    """

    def replace(match: re.Match[str]) -> str:
        token = match.group()
        if token[0] == '"':
            return token
        if token.startswith("/*") and (len(token) < 4 or not token.endswith("*/")):
            raise json.JSONDecodeError("Unterminated /* comment", text, match.start())
        return _blank(token)

    if text.startswith(_BOM):
        text = " " + text[1:]
    return _COMMENTS.sub(replace, text)


def as_json(text: str) -> str:
    """Plain JSON text for JSONC ``text``: comments and trailing commas blanked, positions kept."""
    without_comments = blank_comments(text)
    return _TRAILING_COMMA.sub(
        lambda match: " " if match.group() == "," else match.group(), without_comments
    )


@dataclass(slots=True)
class Member:
    """One ``"key": value`` of an object: where its key, value and following comma are."""

    key: str
    key_start: int
    key_end: int
    value_start: int
    value_end: int
    value: "Layout | None"  # an object's layout; None for any other value
    comma: int | None = None  # position of the comma after the value, if there is one


@dataclass(slots=True)
class Layout:
    """An object in the text: its braces and its members in text order (repeats included)."""

    open: int
    close: int = -1
    members: list[Member] = field(default_factory=list)


class _Tokens:
    """A cursor over the tokens of blanked text (no comments left to skip)."""

    def __init__(self, text: str) -> None:
        self._iter = _TOKENS.finditer(text)
        self.current: re.Match[str] | None = next(self._iter, None)

    def take(self) -> re.Match[str]:
        token = self.current
        if token is None:
            raise ValueError("the text ended early")
        self.current = next(self._iter, None)
        return token


def _value(tokens: _Tokens) -> tuple[int, int, Layout | None]:
    """Consume one value; its span, and its layout when it is an object."""
    first = tokens.take()
    if first.group() == "{":
        layout = _object(tokens, first.start())
        return first.start(), layout.close + 1, layout
    if first.group() == "[":
        end = _array(tokens)
        return first.start(), end, None
    return first.start(), first.end(), None


def _array(tokens: _Tokens) -> int:
    """Consume the rest of an array; the position just after its ``]``."""
    while True:
        token = tokens.current
        if token is None:
            raise ValueError("the text ended inside an array")
        if token.group() == "]":
            return tokens.take().end()
        if token.group() == ",":
            tokens.take()
            continue
        _value(tokens)


def _object(tokens: _Tokens, open_at: int) -> Layout:
    """Consume the rest of an object whose ``{`` is at ``open_at``."""
    layout = Layout(open_at)
    while True:
        token = tokens.take()
        text = token.group()
        if text == "}":
            layout.close = token.start()
            return layout
        if text == ",":
            if not layout.members:
                raise ValueError("a comma before the first member")
            layout.members[-1].comma = token.start()
            continue
        if text[0] != '"' or tokens.take().group() != ":":
            raise ValueError("expected a key and a colon")
        start, end, nested = _value(tokens)
        key = json.loads(text)
        layout.members.append(Member(key, token.start(), token.end(), start, end, nested))


def parse_layout(text: str) -> Layout:
    """The layout of the top-level object of JSONC ``text`` (which must already parse).

    Raises :class:`ValueError` when the text is not an object this reader understands.
    """
    tokens = _Tokens(blank_comments(text))
    first = tokens.take()
    if first.group() != "{":
        raise ValueError("the document is not an object")
    layout = _object(tokens, first.start())
    if tokens.current is not None:
        raise ValueError("text after the document")
    return layout
