"""Opening a tool call's MCP Apps view from a tool card (the ``v`` key of Conversations).

The same local web host as ``meworkctl view`` (:mod:`mework_client.viewhost`), run in this
process for as long as the UI: each view opened gets its page on 127.0.0.1, and the browser is
asked to open it (its address is also said, for when no browser can be opened).
"""

from typing import Any

__all__ = ["ViewOpener", "viewable"]


def viewable(cards: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The newest allowed call among ``cards`` (a view's own calls have no view to open)."""
    for card in reversed(cards):
        if card.get("decision") == "allow" and card.get("origin") != "app":
            found: dict[str, Any] = card
            return found
    return None


class ViewOpener:
    """The views this UI opened, served until :meth:`close`."""

    def __init__(self, socket_path: str | None) -> None:
        self._socket = socket_path
        self._hosts: list[Any] = []

    def open(self, call_id: str, turn_id: str | None) -> tuple[str, bool]:
        """Serve the call's view and ask the browser to open it: (address, opened).

        Blocking (it asks meworkd for the view): run it in a thread. Raises what ``apps.view``
        raises (``RpcError``), or ``ConnectionError`` when meworkd is not reachable.
        """
        import webbrowser  # here: only this key opens a browser

        from mework_client.viewhost.server import ViewHost

        host = ViewHost(self._socket, call_id, turn_id)
        host.start()
        self._hosts.append(host)
        return host.url, webbrowser.open(host.url)

    def close(self) -> None:
        for host in self._hosts:
            host.close()
        self._hosts.clear()
