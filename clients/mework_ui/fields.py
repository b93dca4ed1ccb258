"""The detail page's fields: how each settings key is shown as text and read back from it.

A field of the entry's ``oauth`` object is named ``oauth-<key>`` (``oauth-clientId``): it is
shown from and saved into that object, never into the entry itself.
"""

import shlex
from typing import Any

__all__ = [
    "FIELDS",
    "OAUTH",
    "OAUTH_TEXT_FIELDS",
    "SECRET_FIELDS",
    "TEXT_FIELDS",
    "oauth_with",
    "parse_field",
    "show_field",
]

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
FIELDS = frozenset(key for key, _label, _transport in TEXT_FIELDS)
OAUTH = "oauth-"
# (field, label) of the oauth object's text fields, in the page's order
OAUTH_TEXT_FIELDS: tuple[tuple[str, str], ...] = (
    ("oauth-clientId", "Client ID"),
    ("oauth-clientSecret", "Client secret"),
    ("oauth-scopes", "Scopes"),
    ("oauth-redirectPort", "Redirect port"),
    ("oauth-clientMetadataUrl", "Client metadata URL"),
)
PAIR_FIELDS = frozenset({"env", "headers"})  # NAME=value pairs, each value possibly a secret
SECRET_FIELDS = PAIR_FIELDS | {"oauth-clientSecret"}  # masked until revealed


class FieldError(ValueError):
    """Text a field cannot hold; the message is shown beside the field."""


def show_field(key: str, entry: dict[str, Any]) -> str:
    value = _oauth_value(key, entry) if key.startswith(OAUTH) else entry.get(key)
    if value is None:
        return ""
    if key == "args":
        return shlex.join(str(a) for a in value)
    if key in PAIR_FIELDS and isinstance(value, dict):
        return shlex.join(f"{k}={v}" for k, v in value.items())
    if key == "oauth-scopes" and isinstance(value, list):
        return " ".join(str(scope) for scope in value)
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
        if key in PAIR_FIELDS:
            return _pairs(shlex.split(text))
    except ValueError as exc:
        raise FieldError(f"unbalanced quotes ({exc})") from None
    if key == "timeoutSeconds":
        try:
            return float(text) if "." in text else int(text)
        except ValueError:
            raise FieldError("a number of seconds, e.g. 60") from None
    if key == "oauth-scopes":
        return text.split()
    if key == "oauth-redirectPort":
        try:  # the range is the daemon's to check: its message says what it accepts
            return int(text)
        except ValueError:
            raise FieldError("a port number, e.g. 8765") from None
    return text


def oauth_with(entry: dict[str, Any], field: str, value: Any) -> dict[str, Any] | None:
    """The entry's whole ``oauth`` object with ``field`` set (removed when None).

    An object left empty is None: the key goes, and the server logs in with discovery and
    dynamic registration, which is what an empty object means too.
    """
    current = entry.get("oauth")
    oauth = dict(current) if isinstance(current, dict) else {}
    key = field.removeprefix(OAUTH)
    if value is None:
        oauth.pop(key, None)
    else:
        oauth[key] = value
    return oauth or None


def _oauth_value(field: str, entry: dict[str, Any]) -> Any:
    oauth = entry.get("oauth")
    return oauth.get(field.removeprefix(OAUTH)) if isinstance(oauth, dict) else None


def _pairs(words: list[str]) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for word in words:
        name, sep, value = word.partition("=")
        if not sep or not name:
            raise FieldError(f"expected NAME=value, got {word!r}")
        pairs[name] = value
    return pairs
