"""Each server's connection key, computed once per settings snapshot instead of once per call.

A call compares its binding's definition with the server's ``connection_key()`` before and
after its approval; the key sorts the server's ``env`` and ``headers`` each time. A reload
replaces the ``ServerConfig`` objects, so the cached key is reused only for the very object it
was computed from.
"""

from meworkd.settings import ServerConfig, Settings

__all__ = ["Definitions"]


class Definitions:
    def __init__(self) -> None:
        self._keys: dict[str, tuple[ServerConfig, tuple[object, ...]]] = {}

    def of(self, settings: Settings, server: str) -> tuple[object, ...]:
        """``settings.servers[server].connection_key()``."""
        config = settings.servers[server]
        cached = self._keys.get(server)
        if cached is not None and cached[0] is config:
            return cached[1]
        key = config.connection_key()
        self._keys[server] = (config, key)
        return key
