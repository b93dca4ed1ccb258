"""The settings file's own state, as servers.list, servers.get and daemon.status show it.

A broken file or entry is reported where people look, not only in a ``settings.invalid``
event nobody may have been subscribed to.
"""

from typing import Any

from meworkd.settings import safety
from meworkd.settings.store import SettingsStore

__all__ = ["settings_state"]


def settings_state(store: SettingsStore) -> dict[str, Any]:
    """``{state, path, error, errors, invalidServers, warnings}`` of the settings file now.

    ``state``: ``unreadable`` when the file on disk is not in force (not JSON, unsafe
    permissions, not a readable regular file: ``error`` says which; the last good settings
    run), ``problems`` when it is in force but parts were refused (``errors`` such as a
    duplicated name, ``invalidServers`` by name), else ``ok``. ``warnings``: what is wrong
    with its permissions now, judged afresh (a file made writable by others since it was
    read shows here before its next change is refused).
    """
    settings = store.settings
    trust = safety.inspect(store.path)
    refusal = [trust.refusal] if trust.refusal and trust.refusal != store.unreadable else []
    if store.unreadable is not None:
        state = "unreadable"
    elif settings.errors or settings.server_errors:
        state = "problems"
    else:
        state = "ok"
    return {
        "state": state,
        "path": str(store.path),
        "error": store.unreadable,
        "errors": list(settings.errors),
        "invalidServers": dict(settings.server_errors),
        "warnings": [*refusal, *trust.warnings],
    }
