"""The detail page's fields: how each settings key is shown as text and read back from it.

A field of the entry's ``oauth`` object is named ``oauth-<key>`` (``oauth-clientId``): it is
shown from and saved into that object, never into the entry itself; so are ``sandbox-<key>``
(``sandbox-read`` is the sandbox's ``filesystem.read``) and ``limits-<key>``.
"""

import shlex
from typing import Any

__all__ = [
    "CONTAIN_TEXT_FIELDS",
    "FIELDS",
    "OAUTH",
    "OAUTH_TEXT_FIELDS",
    "SECRET_FIELDS",
    "TEXT_FIELDS",
    "nested_key",
    "nested_with",
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
# (field, label) of a stdio entry's sandbox paths and limits, in the page's order
CONTAIN_TEXT_FIELDS: tuple[tuple[str, str], ...] = (
    ("sandbox-read", "Sandbox reads"),
    ("sandbox-write", "Sandbox writes"),
    ("limits-memoryMiB", "Memory MiB"),
    ("limits-processes", "Processes"),
    ("limits-openFiles", "Open files"),
    ("limits-cpuSeconds", "CPU seconds"),
)
_PATHS = {"sandbox-read": "read", "sandbox-write": "write"}  # the sandbox's filesystem lists
NESTED = ("oauth", "sandbox", "limits")  # the entry's objects whose keys are fields of their own
PAIR_FIELDS = frozenset({"env", "headers"})  # NAME=value pairs, each value possibly a secret
SECRET_FIELDS = PAIR_FIELDS | {"oauth-clientSecret"}  # masked until revealed


class FieldError(ValueError):
    """Text a field cannot hold; the message is shown beside the field."""


def show_field(key: str, entry: dict[str, Any]) -> str:
    value = _nested_value(key, entry) if nested_key(key) else entry.get(key)
    if value is None:
        return ""
    if key == "args" or key in _PATHS:
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
        if key == "args" or key in _PATHS:
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
    if key.startswith("limits-"):
        try:  # the range is the daemon's to check: its message names it
            return int(text)
        except ValueError:
            raise FieldError("a whole number") from None
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


def nested_key(field: str) -> str | None:
    """The entry's object a field belongs to (``oauth``, ``sandbox``, ``limits``), if any."""
    head, sep, _rest = field.partition("-")
    return head if sep and head in NESTED else None


def nested_with(entry: dict[str, Any], field: str, value: Any) -> dict[str, Any] | None:
    """The whole object ``field`` belongs to, with ``field`` set (removed when None or empty).

    A sandbox's paths live in its ``filesystem``; an object left empty is None (the key goes).
    """
    key = nested_key(field)
    if key == "oauth":
        return oauth_with(entry, field, value)
    assert key is not None
    current = entry.get(key)
    whole = dict(current) if isinstance(current, dict) else {}
    name = field.removeprefix(f"{key}-")
    if field in _PATHS:
        files = dict(whole.get("filesystem") or {})
        _set(files, _PATHS[field], value or None)
        _set(whole, "filesystem", files or None)
    else:
        _set(whole, name, value)
    return whole or None


def _set(target: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        target.pop(key, None)
    else:
        target[key] = value


def _nested_value(field: str, entry: dict[str, Any]) -> Any:
    key = nested_key(field)
    assert key is not None
    whole = entry.get(key)
    if not isinstance(whole, dict):
        return None
    if field in _PATHS:
        return (whole.get("filesystem") or {}).get(_PATHS[field])
    return whole.get(field.removeprefix(f"{key}-"))


def _pairs(words: list[str]) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for word in words:
        name, sep, value = word.partition("=")
        if not sep or not name:
            raise FieldError(f"expected NAME=value, got {word!r}")
        pairs[name] = value
    return pairs
