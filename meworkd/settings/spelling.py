"""Keys of an entry that meworkd does not know but that look like a misspelling of one it does.

An entry with ``"comand"`` fails as "command: required"; naming the unknown key beside that
error, with the known key it is closest to, points at the typo instead of away from it.
"""

import difflib
from collections.abc import Iterable, Mapping

import msgspec

from meworkd.settings.model import ServerConfig

__all__ = ["SERVER_KEYS", "misspelled_keys"]

# The keys of a server entry, as the file spells them.
SERVER_KEYS = tuple(f.encode_name for f in msgspec.structs.fields(ServerConfig))


def misspelled_keys(
    prefix: str, raw: Mapping[str, object], known: Iterable[str] = SERVER_KEYS
) -> list[str]:
    """``prefix.key: unknown key; did you mean "known"?`` for each unknown key near a known one.

    Keys that are near none (another host's own fields) are left alone: meworkd keeps them.
    """
    choices = list(known)
    found: list[str] = []
    for key in raw:
        if key in choices or not isinstance(key, str):
            continue
        close = difflib.get_close_matches(key, choices, n=1, cutoff=0.75)
        if not close and key.lower() in {c.lower() for c in choices}:
            close = [c for c in choices if c.lower() == key.lower()]
        if close:
            found.append(f'{prefix}.{key}: unknown key; did you mean "{close[0]}"?')
    return found
