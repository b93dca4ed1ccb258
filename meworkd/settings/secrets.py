"""Secrets in server entries: ``env``/``headers`` masked for display, listed for the redactor.

:func:`secret_values` is every value that must never reach a log, an event or a reply.
"""

import re
from collections.abc import Mapping
from typing import Any

from meworkd.settings.expand import VARIABLE, UnsetVariable, expand
from meworkd.settings.model import ServerConfig

__all__ = ["masked_entry", "secret_values"]

_MASK = "********"
_HARMLESS = re.compile(r"^\s*(?:(?:Bearer|Basic|Token)\s*)?$", re.IGNORECASE)
_MIN_SECRET_LENGTH = 4  # shorter values would redact ordinary words in logs


def _is_reference_only(value: str) -> bool:
    """``${TOKEN}`` or ``Bearer ${TOKEN}``: shows where a secret comes from, not the secret."""
    return bool(VARIABLE.search(value)) and bool(_HARMLESS.match(VARIABLE.sub("", value)))


def masked_entry(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a raw entry with ``env`` and ``headers`` values masked."""
    out = dict(raw)
    for key in ("env", "headers"):
        values = raw.get(key)
        if isinstance(values, dict):
            out[key] = {
                k: v if isinstance(v, str) and _is_reference_only(v) else _MASK
                for k, v in values.items()
            }
    return out


def secret_values(config: ServerConfig, environ: Mapping[str, str]) -> list[str]:
    """Every value that must never reach a log, event or reply: raw and expanded."""
    found: set[str] = set()
    for values in (config.env, config.headers):
        for value in values.values():
            forms = {value}
            try:
                forms.add(expand(value, environ))
            except UnsetVariable:
                pass
            for form in forms:
                found.add(form)
                # A header like "Bearer abc" is a secret in its token part too.
                found.update(part for part in form.split() if not _HARMLESS.match(part))
    return sorted(
        (s for s in found if len(s) >= _MIN_SECRET_LENGTH and not _is_reference_only(s)),
        key=len,
        reverse=True,
    )
