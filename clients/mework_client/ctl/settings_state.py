"""How meworkctl prints the settings file's own state (servers list/get, status).

The daemon reports it as ``settings: {state, path, error, errors, invalidServers, warnings}``;
these lines make a broken file or entry visible wherever a person looks.
"""

from __future__ import annotations

from mework_client.ctl.layout import PLAIN, Style, obj

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (``meworkctl status``)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["in_own_words", "settings_lines"]


def in_own_words(text: object) -> str:
    """The daemon's sentence in meworkctl's words (loaded only when there is one to say)."""
    from mework_client.ctl import words

    return words.in_own_words(str(text))


def settings_lines(result: Any, style: Style = PLAIN, *, entries: bool = True) -> list[str]:
    """Red lines for everything wrong with the settings (none when all is well).

    ``entries=False`` leaves out the invalid entries (``servers list`` shows them in its table).
    """
    health = obj(obj(result).get("settings"))
    if not health:
        return []
    lines: list[str] = []
    if health.get("state") == "unreadable":
        from mework_protocol.wording import unreadable_settings  # only when there is one

        lines.append(style.red(unreadable_settings(health.get("error"))))
    lines += [style.red(f"settings error: {in_own_words(e)}") for e in health.get("errors") or []]
    if entries:
        invalid = obj(health.get("invalidServers"))
        lines += [style.red(f"invalid entry {n}: {in_own_words(e)}") for n, e in invalid.items()]
    lines += [style.red(f"settings warning: {w}") for w in health.get("warnings") or []]
    return lines
