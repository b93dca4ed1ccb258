"""One server entry written by hand as text (``servers.replace``): JSON or JSONC, read strictly.

A person editing an entry in their editor may leave comments and trailing commas, as VS Code's
``mcp.json`` and meworkd's own settings file allow; they are read here, never by the client, so
every frontend accepts the same text. A key written twice is refused rather than silently
resolved to its last value: the person meant one of them.
"""

from typing import Any

from meworkd.base.errors import InvalidParams
from meworkd.settings.parse import KeyedObject
from meworkd.settings.pasted import loads_pasted, plain_json

__all__ = ["entry_from_text"]


def entry_from_text(text: str) -> dict[str, Any]:
    """The entry ``text`` holds; :class:`InvalidParams` (with ``line``/``column`` when it does
    not parse) saying what is wrong with it."""
    value = loads_pasted(text, "the entry")
    if not isinstance(value, dict):
        raise InvalidParams("the entry must be a JSON object: {...}")
    repeated = _repeated_key(value, "")
    if repeated is not None:
        raise InvalidParams(f"{repeated} appears more than once in the entry; keep one")
    return dict(plain_json(value))


def _repeated_key(value: object, path: str) -> str | None:
    if isinstance(value, KeyedObject):
        if value.duplicates:
            return repr(f"{path}.{value.duplicates[0]}" if path else value.duplicates[0])
        children = ((f"{path}.{k}" if path else k, v) for k, v in value.items())
    elif isinstance(value, list):
        children = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for where, child in children:
        found = _repeated_key(child, where)
        if found is not None:
            return found
    return None
