"""One MCP client session and the owner task that enters and exits it.

The transport and the SDK's ``ClientSession`` are entered in :meth:`McpSession.run` and exited by
the same task (anyio cancel scopes demand it); every other task borrows the session through
:meth:`McpSession.lease`. What a session is doing is one :class:`SessionState`; failures are
worded by :mod:`meworkd.mcp.errors`.
"""

import enum
import time
import warnings
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, cast

import anyio
import mcp_types as types
from anyio.abc import TaskStatus
from mcp import ClientSession, MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from meworkd import __version__
from meworkd.base.errors import ServerUnavailable
from meworkd.base.log import get_logger
from meworkd.mcp import direct
from meworkd.mcp.asks import LIST_CHANGES, ServerAsksHost, SessionCallbacks
from meworkd.mcp.connect import Connected, open_transport
from meworkd.mcp.direct import DirectClientSession
from meworkd.mcp.era import EraMemory, discover_first, initialize_first
from meworkd.mcp.errors import STREAM_ENDED, SessionGone, describe_failure, startup_failure
from meworkd.mcp.exits import Ending
from meworkd.mcp.http import HttpErrors
from meworkd.mcp.listfollow import follow_lists
from meworkd.mcp.model import PeerInfo
from meworkd.settings import ServerConfig

__all__ = ["CLIENT_INFO", "McpSession", "SessionState"]

CLIENT_INFO = types.Implementation(name="meworkd", version=__version__)
STDERR_TAIL = 20  # lines of stderr quoted in a start-up failure

log = get_logger("meworkd.session")


class SessionState(enum.IntEnum):
    """A session's life, in order; it only ever moves forward."""

    CONNECTING = 1  # the owner is opening the transport and shaking hands
    READY = 2  # calls may lease it
    DRAINING = 3  # retired: the calls in flight finish, no new ones (the pool forgot it)
    CLOSING = 4  # the owner is closing it (drained, forced, or the server went away)
    CLOSED = 5  # the owner task has finished


class _EOFWatch:
    """Read-stream proxy that tells the owner when the transport's read side ends."""

    def __init__(self, inner: Any, on_eof: Callable[[], None]) -> None:
        self._inner, self._on_eof = inner, on_eof

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except STREAM_ENDED:
            self._on_eof()
            raise

    def __aiter__(self) -> "_EOFWatch":
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        self._inner.close()

    @property
    def last_context(self) -> Any:  # the HTTP transport carries contextvars on its streams
        return getattr(self._inner, "last_context", None)

    async def __aenter__(self) -> "_EOFWatch":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class McpSession:
    """A live (or starting, or finished) session to one server for one conversation."""

    def __init__(
        self,
        server: str,
        conversation: str | None,
        config: ServerConfig,
        environ: dict[str, str],
        *,
        on_stderr: Callable[[str], str],
        on_spawn: Callable[[int], None] = lambda _pid: None,
        on_exit: Callable[[int], None] = lambda _pid: None,
        secrets: Sequence[str] = (),
        auth: Any = None,
        host: ServerAsksHost | None = None,
        eras: EraMemory | None = None,
    ) -> None:
        self.server = server
        self.conversation = conversation
        self.config = config
        self._environ = environ
        self._on_stderr = on_stderr
        self._on_spawn = on_spawn
        self._on_exit = on_exit
        self._secrets = secrets  # the server's own, out of what its failure quotes
        self._auth = auth  # HTTP: the server's shared OAuth login (an httpx2.Auth), or None
        self._eras = eras  # HTTP: the URLs known to be of the handshake era (the pool's)
        self.state = SessionState.CONNECTING
        self.pid: int | None = None
        self.protocol_version: str | None = None
        self.server_info: PeerInfo | None = None
        self.capabilities: dict[str, Any] | None = None  # as on the wire, no nulls
        self.instructions: str | None = None
        self.stderr_tail: list[str] = []
        self.exit_code: int | None = None
        self.error: str | None = None
        self.ending = Ending(config, on_stderr)  # a death on a limit, a sandbox not built
        self.connect_seconds: float | None = None
        self.in_flight = 0
        self.last_used = time.monotonic()
        # Set by _set_state only: DRAINING or later / CLOSING or later (the server is gone or
        # going: no call is served any more) / CLOSED.
        self._stopping = anyio.Event()
        self.dead = anyio.Event()
        self.closed = anyio.Event()
        self._client: DirectClientSession | None = None
        self._connected: Connected | None = None
        # What the server may ask of its host; without a host it may ask nothing.
        self._callbacks = SessionCallbacks(host, server, conversation) if host else None

    def _set_state(self, state: SessionState) -> None:
        """Move to ``state`` (never back) and wake whoever waits for it."""
        if state <= self.state:
            return
        self.state = state
        if state >= SessionState.DRAINING:
            self._stopping.set()
        if state >= SessionState.CLOSING:
            self.dead.set()
        if state is SessionState.CLOSED:
            self.closed.set()

    # --- owner task ----------------------------------------------------------------------

    async def run(
        self, *, task_status: TaskStatus["McpSession"] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Connect, hand the session out, park until told to close or the server goes away."""
        started = False
        started_at = time.monotonic()
        try:
            async with AsyncExitStack() as stack:
                connected = await stack.enter_async_context(
                    open_transport(
                        self.config,
                        self._environ,
                        on_stderr=self._stderr,
                        on_spawn=self._spawned,
                        auth=self._auth,
                    )
                )
                self._connected = connected
                client = await stack.enter_async_context(self._client_session(connected))
                try:
                    with anyio.fail_after(self.config.timeout):
                        await self._handshake(client)
                except BaseException:
                    connected.abandoned = True  # report the failure now, not after the graces
                    raise
                self.connect_seconds = time.monotonic() - started_at
                client.direct = self._direct_calls(connected)
                self._client = client
                self._set_state(SessionState.READY)
                started = True
                task_status.started(self)
                async with anyio.create_task_group() as followers:
                    if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                        followers.start_soon(follow_lists, client, self.server, self._list_changed)
                    await self._park()
                    followers.cancel_scope.cancel()
        except Exception as exc:  # noqa: BLE001 - the owner task is a supervision boundary
            if not started:
                raise self._startup_error(exc) from None
            # After start-up a transport failure (e.g. an HTTP peer gone) ends this session
            # only; it must not escape into the pool's task group.
            self.error = describe_failure(exc, self.config)[1]
            log.info(
                "session.failed",
                server=self.server,
                conversation=self.conversation,
                error=self.error,
            )
        finally:
            self._client = None
            last = self._connected
            process = last.process if started and last is not None else None
            self.error = self.ending.after_start(process, self.stderr_tail) or self.error
            self._set_state(SessionState.CLOSED)
            if self.pid is not None:
                self._on_exit(self.pid)

    def _client_session(self, connected: Connected) -> DirectClientSession:
        options = self._callbacks.client_options() if self._callbacks else {}
        return DirectClientSession(
            _EOFWatch(connected.read, self._server_gone),
            connected.write,
            client_info=CLIENT_INFO,
            message_handler=self._message,
            log_level=cast(Any, self.config.log_level),  # how a 2026-07-28 session asks for logs
            **options,
        )

    def _direct_calls(self, connected: Connected) -> direct.DirectCalls | None:
        """The pipes' own tools/call, where it is what the SDK would do: a stdio session of a
        handshake-era revision (a 2026-07-28 call may need input rounds and request stamps)."""
        version = self.protocol_version
        if not direct.PASS_THROUGH or version is None or version >= "2026":
            return None
        return connected.direct

    @property
    def sandbox(self) -> dict[str, object] | None:
        """What the server's sandbox lets it see and do (None: it runs unsandboxed)."""
        view = self._connected.sandbox if self._connected is not None else None
        return None if view is None else view.as_dict()

    def _spawned(self, pid: int) -> None:
        self.pid = pid
        self._on_spawn(pid)

    def _server_gone(self) -> None:
        self.ending.gone_by_itself = self.state <= SessionState.READY
        self._set_state(SessionState.CLOSING)

    def _stderr(self, line: str) -> None:
        # Keep what the log ring stored (secrets redacted), not the raw line.
        self.stderr_tail.append(self._on_stderr(line))
        del self.stderr_tail[:-STDERR_TAIL]

    async def _handshake(self, client: ClientSession) -> None:
        """Learn the server's era and what it offers (:mod:`meworkd.mcp.era`)."""
        connected = self._connected
        if connected is not None and connected.http is not None and self.config.url:
            await discover_first(client, self.config.url, connected.http, self._eras)
        else:
            await initialize_first(client)
        self._learn(client.protocol_version, client.server_info, client.server_capabilities)
        self.instructions = client.instructions
        if client.initialize_result is not None:
            await self._set_log_level(client)  # a 2026-07-28 session asks per request instead

    async def _set_log_level(self, client: ClientSession) -> None:
        level = self.config.log_level
        if level is None or "logging" not in (self.capabilities or {}):
            return
        try:
            with warnings.catch_warnings():  # deprecated in 2026-07-28, current in ours
                warnings.simplefilter("ignore")
                await client.set_logging_level(level)  # type: ignore[arg-type]
        except MCPError as exc:
            log.info("session.log_level_refused", server=self.server, code=exc.code)

    async def send_roots_changed(self) -> None:
        """Tell the server its roots changed (handshake-era sessions only; 2026 has none)."""
        client = self._client
        if client is None or self.state is not SessionState.READY:
            return
        if self.protocol_version is not None and self.protocol_version >= "2026":
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.send_roots_list_changed()

    def _learn(
        self,
        protocol_version: str | None,
        info: types.Implementation | None,
        capabilities: types.ServerCapabilities | None,
    ) -> None:
        self.protocol_version = protocol_version
        self.server_info = PeerInfo(info.name, info.version) if info is not None else None
        self.capabilities = (
            capabilities.model_dump(by_alias=True, mode="json", exclude_none=True)
            if capabilities is not None
            else None
        )

    async def _park(self) -> None:
        await self._stopping.wait()
        # Retired by a reload: the calls in flight finish first (unless forced or dead).
        await self.dead.wait()

    def _startup_error(self, exc: BaseException) -> ServerUnavailable:
        connected = self._connected
        process = connected.process if connected is not None else None
        returncode = process.returncode if process is not None else None
        reason, message = startup_failure(
            exc,
            self.config,
            returncode=returncode,
            http=connected.http if connected is not None else None,
            secrets=self._secrets,
        )
        if (
            reason == "auth_required"
            and self._auth is not None
            and (why := self._auth.unavailable())
        ):
            reason, message = "auth_unavailable", why  # the AS is failing: not a logout
        if reason == "exited" and returncode is not None:
            self.exit_code = returncode
            reason, message = self.ending.classify(returncode, self.stderr_tail) or (
                reason,
                message,
            )
        self.error = message
        tail = list(self.stderr_tail)
        kw = {"limit": self.ending.limit} if reason == "resource_limit" else {}
        return ServerUnavailable(message, server=self.server, reason=reason, stderrTail=tail, **kw)

    def _list_changed(self, what: str) -> None:
        """A 2026-07-28 server's list change (its listen stream), as a handshake-era one."""
        if self._callbacks is not None:
            self._callbacks.list_changed(what)

    async def _message(self, message: object) -> None:
        # With a host, log lines reach it through the logging callback, with their level;
        # list changes and URL completions become its notices. A list kept as fresh
        # (2026-07-28 ttlMs) is dropped when the server says it changed.
        changed = LIST_CHANGES.get(type(message))
        if changed is not None and self._client is not None:
            self._client.listings.forget(changed)
        if self._callbacks is not None:
            self._callbacks.notification(message)
        elif isinstance(message, types.LoggingMessageNotification):
            params = message.params
            self._stderr(f"[{params.level}] {params.data}")

    # --- borrowers -----------------------------------------------------------------------

    @asynccontextmanager
    async def lease(self) -> AsyncIterator[ClientSession]:
        client = self._client
        if client is None or self.state not in (SessionState.READY, SessionState.DRAINING):
            raise SessionGone(
                f"the session to {self.server} has ended"
                + (f": {self.error}" if self.error else ""),
                server=self.server,
            )
        self.in_flight += 1
        try:
            yield client
        finally:
            self.in_flight -= 1
            self.last_used = time.monotonic()
            if self.in_flight == 0 and self.state is SessionState.DRAINING:
                self._set_state(SessionState.CLOSING)

    @property
    def passes_through(self) -> bool:
        """True when meworkd writes and answers this session's tools/call itself."""
        return self._client is not None and self._client.direct is not None

    @property
    def alive(self) -> bool:
        return self.state is SessionState.READY

    @property
    def http(self) -> HttpErrors | None:
        """What the HTTP error responses said (None for stdio)."""
        return self._connected.http if self._connected is not None else None

    # --- closing -------------------------------------------------------------------------

    def retire(self, *, force: bool = False) -> None:
        """Ask the owner to close: after the calls in flight (or at once with ``force``)."""
        drain = self.in_flight and not force
        self._set_state(SessionState.DRAINING if drain else SessionState.CLOSING)

    async def close(self, within: float) -> None:
        """Retire with force and wait (shielded, at most ``within`` seconds) until closed."""
        self.retire(force=True)
        with anyio.move_on_after(within, shield=True):
            await self.closed.wait()
