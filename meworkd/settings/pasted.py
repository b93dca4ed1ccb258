"""JSON text a person pasted or edited (``servers.import``, ``servers.replace``): read as JSONC
with repeated keys noted, a failure said with where it broke, and the result made plain."""

import json
from collections.abc import Callable
from typing import Any

from meworkd.base.errors import InvalidParams
from meworkd.settings.parse import loads_keyed

__all__ = ["loads_pasted", "plain_json"]


def loads_pasted(text: str, what: str, hint: Callable[[str], str] = lambda _text: "") -> Any:
    """:func:`loads_keyed` for text a person pasted or edited (``what``: "the entry", "the
    document"): a parse failure is :class:`InvalidParams` with ``line`` and ``column`` and
    ``hint(text)`` after the reason."""
    try:
        return loads_keyed(text)
    except json.JSONDecodeError as exc:
        raise InvalidParams(
            f"{what} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
            + hint(text),
            line=exc.lineno,
            column=exc.colno,
        ) from None
    except RecursionError:
        raise InvalidParams(f"{what} is nested too deeply") from None


def plain_json(value: Any) -> Any:
    """``value`` with every :class:`KeyedObject` copied into a plain dict (once its repeated
    keys have been looked at), as the settings document holds it."""
    if isinstance(value, dict):
        return {k: plain_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_json(v) for v in value]
    return value
