"""The detail page's fields: how each settings key is shown as text and read back from it."""

import shlex
from typing import Any

__all__ = ["FIELDS", "SECRET_FIELDS", "TEXT_FIELDS", "parse_field", "show_field"]

# (key, label, transport it belongs to or None for both)
TEXT_FIELDS: tuple[tuple[str, str, str | None], ...] = (
    ("name", "Name", None),
    ("description", "Description", None),
    ("command", "Command", "stdio"),
    ("args", "Args", "stdio"),
    ("cwd", "Cwd", "stdio"),
    ("env", "Env", "stdio"),
    ("url", "URL", "streamable_http"),
    ("headers", "Headers", "streamable_http"),
    ("timeoutSeconds", "Timeout s", None),
)
SECRET_FIELDS = frozenset({"env", "headers"})
FIELDS = frozenset(key for key, _label, _transport in TEXT_FIELDS)


class FieldError(ValueError):
    """Text a field cannot hold; the message is shown beside the field."""


def show_field(key: str, entry: dict[str, Any]) -> str:
    value = entry.get(key)
    if value is None:
        return ""
    if key == "args":
        return shlex.join(str(a) for a in value)
    if key in SECRET_FIELDS and isinstance(value, dict):
        return shlex.join(f"{k}={v}" for k, v in value.items())
    if key == "timeoutSeconds":
        return f"{float(value):g}"
    return str(value)


def parse_field(key: str, text: str) -> Any:
    """The value to patch for ``text``; an empty field removes the key (null)."""
    text = text.strip()
    if not text:
        return [] if key == "args" else None
    try:
        if key == "args":
            return shlex.split(text)
        if key in SECRET_FIELDS:
            return _pairs(shlex.split(text))
    except ValueError as exc:
        raise FieldError(f"unbalanced quotes ({exc})") from None
    if key == "timeoutSeconds":
        try:
            return float(text) if "." in text else int(text)
        except ValueError:
            raise FieldError("a number of seconds, e.g. 60") from None
    return text


def _pairs(words: list[str]) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for word in words:
        name, sep, value = word.partition("=")
        if not sep or not name:
            raise FieldError(f"expected NAME=value, got {word!r}")
        pairs[name] = value
    return pairs
