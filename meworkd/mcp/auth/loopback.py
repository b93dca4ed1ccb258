"""The RFC 8252 loopback redirect receiver: ``http://127.0.0.1:<port>/callback`` for one login.

A tiny HTTP/1.1 listener (anyio, no web framework) that waits for the browser's redirect and
hands the code, ``state`` and ``iss`` to the SDK's flow, which checks them. It listens only on
127.0.0.1 and answers anything but ``/callback`` with 404.
"""

from types import TracebackType
from urllib.parse import parse_qs, urlsplit

import anyio
from anyio.abc import ByteStream, SocketAttribute, TaskGroup
from mcp.client.auth import AuthorizationCodeResult

from meworkd.base.errors import ServerUnavailable

__all__ = ["LoginFailed", "LoopbackReceiver"]

_HEAD_LIMIT = 16 * 1024
_PAGE = b"Signed in to the MCP server. You can close this window."


class LoginFailed(ServerUnavailable):
    """The login did not complete (refused, timed out, or the redirect port was busy)."""

    kind = "login_failed"


class LoopbackReceiver:
    """Listens on 127.0.0.1:``port`` (0: any free port) for one ``GET /callback``."""

    def __init__(self, port: int = 0, timeout: float = 600.0) -> None:
        self._port = port
        self._timeout = timeout
        self._got = anyio.Event()
        self._result: dict[str, str] = {}
        self.port = 0
        self.redirect_uri = ""

    async def __aenter__(self) -> "LoopbackReceiver":
        try:
            self._listener = await anyio.create_tcp_listener(
                local_host="127.0.0.1", local_port=self._port
            )
        except OSError:
            raise LoginFailed(
                f"cannot listen for the login redirect on 127.0.0.1 port {self._port}: "
                "it is in use (choose another oauth.redirectPort)"
            ) from None
        self.port = self._listener.extra(SocketAttribute.local_port)
        self.redirect_uri = f"http://127.0.0.1:{self.port}/callback"
        self._tg: TaskGroup = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._listener.serve, self._handle)
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self._tg.cancel_scope.cancel()
            await self._tg.__aexit__(None, None, None)
        finally:  # also when the login itself is cancelled (its server removed, a shutdown)
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await self._listener.aclose()

    async def _handle(self, stream: ByteStream) -> None:
        async with stream:
            head = b""
            with anyio.move_on_after(10):
                while b"\r\n\r\n" not in head and len(head) < _HEAD_LIMIT:
                    head += await stream.receive()
            parts = head.split(b" ", 2)
            url = urlsplit(parts[1].decode("latin-1") if len(parts) == 3 else "/")
            if url.path != "/callback" or self._got.is_set():
                await stream.send(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                return
            self._result = {k: v[0] for k, v in parse_qs(url.query).items()}
            await stream.send(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(_PAGE), _PAGE)
            )
            self._got.set()

    async def callback_handler(self) -> AuthorizationCodeResult:
        """The SDK's callback: the code once the browser comes back (bounded: a person may not)."""
        with anyio.move_on_after(self._timeout):
            await self._got.wait()
        if not self._got.is_set():
            raise LoginFailed("the login was not completed in the browser in time")
        if "error" in self._result or "code" not in self._result:
            # The AS's error code only (a short token like access_denied), never other fields.
            raise LoginFailed(f"the authorization server refused: {self._result.get('error', '?')}")
        return AuthorizationCodeResult(
            code=self._result["code"], state=self._result.get("state"), iss=self._result.get("iss")
        )
