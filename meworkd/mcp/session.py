"""One MCP client session and the owner task that enters and exits it.

The SDK's transports and ``ClientSession`` are entered in :meth:`McpSession.run` and exited by
the same task (anyio cancel scopes demand it); every other task borrows the session through
:meth:`McpSession.lease`. Foreign exceptions from connecting are translated here, once.
"""

import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx2
import mcp_types as types
from anyio.abc import TaskStatus
from mcp import ClientSession, MCPError
from mcp_types import METHOD_NOT_FOUND
from pydantic import ValidationError

from meworkd import __version__
from meworkd.base.errors import ServerUnavailable
from meworkd.base.log import get_logger
from meworkd.mcp.transports import Connected, open_http, open_stdio
from meworkd.settings import ServerConfig

__all__ = [
    "CLIENT_INFO",
    "InvalidListing",
    "McpSession",
    "SessionGone",
    "describe_failure",
    "leaf",
    "list_all",
]

CLIENT_INFO = types.Implementation(name="meworkd", version=__version__)
STDERR_TAIL = 20  # lines of stderr quoted in a start-up failure

log = get_logger("meworkd.session")


class SessionGone(ServerUnavailable):
    """The session closed (server exited, connection lost, or meworkd closed it)."""


def leaf(exc: BaseException) -> BaseException:
    """The first non-group exception inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _safe_url(url: str | None) -> str:
    """The URL without credentials or query (a ``${TOKEN}`` may have been expanded there)."""
    if not url:
        return "the server"
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def describe_failure(exc: BaseException, config: ServerConfig) -> tuple[str, str]:
    """(reason, plain message) for a connect/talk failure, with no Python internals."""
    exc = leaf(exc)
    if isinstance(exc, FileNotFoundError):
        # Spawning reports a missing working directory as ENOENT too, naming the directory.
        if config.cwd is not None and exc.filename == os.path.expanduser(config.cwd):
            return "bad_cwd", f"working directory does not exist: {config.cwd}"
        return "command_not_found", f"command not found: {config.command}"
    if isinstance(exc, PermissionError):
        return "permission_denied", f"permission denied running {config.command}"
    if isinstance(exc, NotADirectoryError):
        return "bad_cwd", f"working directory does not exist: {config.cwd}"
    if isinstance(exc, TimeoutError):
        return "timeout", f"timed out after {config.timeout:g} s"
    if isinstance(exc, httpx2.ConnectError):
        return "connect_failed", f"could not connect to {_safe_url(config.url)}: connection refused"
    if isinstance(exc, httpx2.TimeoutException):
        return "timeout", f"timed out talking to {_safe_url(config.url)}"
    if isinstance(exc, httpx2.HTTPStatusError):
        return "http_status", f"HTTP {exc.response.status_code} from {_safe_url(config.url)}"
    if isinstance(exc, httpx2.HTTPError):
        return "http_error", f"HTTP error talking to {_safe_url(config.url)}: {type(exc).__name__}"
    if isinstance(exc, MCPError):
        return "protocol_error", f"the server answered with an error: {exc.message} ({exc.code})"
    if isinstance(exc, OSError):
        return "os_error", f"could not start {config.command}: {exc.strerror or 'OS error'}"
    return "failed", f"connection failed ({type(exc).__name__})"


async def _first_of(*events: anyio.Event) -> None:
    """Return as soon as any of ``events`` is set."""
    async with anyio.create_task_group() as tg:

        async def until(event: anyio.Event) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        for event in events:
            tg.start_soon(until, event)


class _EOFWatch:
    """Read-stream proxy that tells the owner when the transport's read side ends."""

    def __init__(self, inner: Any, on_eof: Callable[[], None]) -> None:
        self._inner, self._on_eof = inner, on_eof

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
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
    ) -> None:
        self.server = server
        self.conversation = conversation
        self.config = config
        self._environ = environ
        self._on_stderr = on_stderr
        self._on_spawn = on_spawn
        self._on_exit = on_exit
        self.session: ClientSession | None = None
        self.pid: int | None = None
        self.protocol_version: str | None = None
        self.server_info: types.Implementation | None = None
        self.capabilities: types.ServerCapabilities | None = None
        self.instructions: str | None = None
        self.stderr_tail: list[str] = []
        self.exit_code: int | None = None
        self.error: str | None = None
        self.connect_seconds: float | None = None
        self.in_flight = 0
        self.last_used = time.monotonic()
        self.retired = False
        self.dead = anyio.Event()
        self.closed = anyio.Event()
        self._stop = anyio.Event()
        self._drained = anyio.Event()
        self._force = False
        self._forced = anyio.Event()
        self._process: Connected | None = None

    # --- owner task ----------------------------------------------------------------------

    async def run(
        self, *, task_status: TaskStatus["McpSession"] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Connect, hand the session out, park until told to close or the server goes away."""
        started = False
        started_at = time.monotonic()
        try:
            async with AsyncExitStack() as stack:
                connected = await stack.enter_async_context(self._transport())
                self._process = connected
                session = await stack.enter_async_context(
                    ClientSession(
                        _EOFWatch(connected.read, self.dead.set),
                        connected.write,
                        client_info=CLIENT_INFO,
                        message_handler=self._message,
                    )
                )
                try:
                    with anyio.fail_after(self.config.timeout):
                        await self._handshake(session)
                except BaseException:
                    connected.abandoned = True  # report the failure now, not after the graces
                    raise
                self.connect_seconds = time.monotonic() - started_at
                self.session = session
                started = True
                task_status.started(self)
                await self._park()
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
            self.session = None
            self.dead.set()
            self.closed.set()
            if self.pid is not None:
                self._on_exit(self.pid)

    def _transport(self) -> Any:
        if self.config.type == "stdio":
            return open_stdio(
                self.config, self._environ, on_stderr=self._stderr, on_spawn=self._spawned
            )
        return open_http(self.config)

    def _spawned(self, pid: int) -> None:
        self.pid = pid
        self._on_spawn(pid)

    def _stderr(self, line: str) -> None:
        # Keep what the log ring stored (secrets redacted), not the raw line.
        self.stderr_tail.append(self._on_stderr(line))
        del self.stderr_tail[:-STDERR_TAIL]

    async def _handshake(self, session: ClientSession) -> None:
        """The initialize handshake first (no probe delay for older servers); a server that
        only speaks 2026-07-28 answers it with method-not-found, and is then discovered."""
        try:
            result = await session.initialize()
            self.protocol_version = result.protocol_version
            self.server_info = result.server_info
            self.capabilities = result.capabilities
            self.instructions = result.instructions
        except MCPError as exc:
            if exc.code != METHOD_NOT_FOUND:
                raise
            discovered = await session.discover()
            self.protocol_version = session.protocol_version
            self.server_info = session.server_info
            self.capabilities = session.server_capabilities
            self.instructions = getattr(discovered, "instructions", None)

    async def _park(self) -> None:
        await _first_of(self._stop, self.dead)
        # Retired by a reload: let the calls in flight finish first (unless forced or dead).
        while self.in_flight and not self._force and not self.dead.is_set():
            self._drained = anyio.Event()
            await _first_of(self._drained, self.dead, self._forced)

    def _startup_error(self, exc: BaseException) -> ServerUnavailable:
        reason, message = describe_failure(exc, self.config)
        inner = leaf(exc)
        process = self._process.process if self._process is not None else None
        if reason != "timeout" and process is not None and process.returncode is not None:
            self.exit_code = process.returncode
            reason = "exited"
            message = f"the server exited with code {process.returncode} during start-up"
        elif isinstance(inner, MCPError) and inner.code == -32000 and self.config.type == "stdio":
            reason, message = "exited", "the server closed its connection during start-up"
        elif (
            reason == "protocol_error"
            and self._process is not None
            and self._process.http_error is not None
        ):
            # The SDK reports an HTTP error status as a bare JSON-RPC error; say what it was.
            status, text = self._process.http_error
            reason = "http_status"
            message = f"HTTP {status} from {_safe_url(self.config.url)}" + (
                f": {text}" if text else ""
            )
        tail = list(self.stderr_tail)
        error = ServerUnavailable(message, server=self.server, reason=reason, stderrTail=tail)
        self.error = message
        return error

    async def _message(self, message: object) -> None:
        # A server's log notifications belong in its Logs tab next to its stderr. (Tool list
        # changes need nothing: every turn lists the tools afresh.)
        if isinstance(message, types.LoggingMessageNotification):
            params = message.params
            self._stderr(f"[{params.level}] {params.data}")

    # --- borrowers -----------------------------------------------------------------------

    @asynccontextmanager
    async def lease(self) -> AsyncIterator[ClientSession]:
        session = self.session
        if session is None or self.dead.is_set():
            raise SessionGone(
                f"the session to {self.server} has ended"
                + (f": {self.error}" if self.error else ""),
                server=self.server,
            )
        self.in_flight += 1
        try:
            yield session
        finally:
            self.in_flight -= 1
            self.last_used = time.monotonic()
            if self.in_flight == 0:
                self._drained.set()

    @property
    def alive(self) -> bool:
        return self.session is not None and not self.dead.is_set() and not self.retired

    # --- closing -------------------------------------------------------------------------

    def retire(self, *, force: bool = False) -> None:
        """Ask the owner to close: after the calls in flight (or at once with ``force``)."""
        self.retired = True
        if force:
            self._force = True
            self._forced.set()
        self._stop.set()


class InvalidListing(ServerUnavailable):
    """A ``*/list`` reply that does not follow the MCP schema (the SDK rejects the whole page).

    ``data["problems"]`` names the offending tools the way :func:`meworkd.probe.lint_tools`
    does, so Test connection can report them.
    """


def _invalid_listing(what: str, exc: ValidationError) -> InvalidListing:
    problems: list[dict[str, str]] = []
    details: list[str] = []
    for error in exc.errors()[:5]:
        loc = [str(part) for part in error["loc"]]
        item = f"#{loc[1]}" if len(loc) > 1 else "the reply"
        field = ".".join(loc[2:]) or ".".join(loc)
        # For a missing field pydantic reports the enclosing object as the input.
        parent = error.get("input") if error["type"] == "missing" else None
        if isinstance(parent, dict) and isinstance(parent.get("name"), str):
            item = f"{parent['name']!r} ({item})"
        details.append(f"{item}: {field}: {error['msg']}")
        if what == "tools" and len(loc) > 1:
            name = parent.get("name") if isinstance(parent, dict) else None
            missing_schema = error["type"] == "missing" and loc[2:] == ["inputSchema"]
            problems.append(
                {
                    "tool": str(name) if name is not None else item,
                    "problem": "missing_input_schema" if missing_schema else "invalid_tool",
                    "detail": f"{field}: {error['msg']}",
                }
            )
    wire = what.replace("resource_templates", "resources/templates")
    return InvalidListing(
        f"the server's {wire}/list reply does not follow the MCP schema ({'; '.join(details)})",
        reason="invalid_reply",
        problems=problems,
    )


async def list_all(session: ClientSession, what: str, *, limit: int = 10_000) -> list[Any]:
    """Every item of ``tools``/``prompts``/``resources``/``resource_templates``, all pages.

    ``limit`` stops a server whose cursors never end from looping forever.

    Raises:
        InvalidListing: a page that does not follow the MCP schema (e.g. a tool without
            ``inputSchema``); the SDK raises pydantic's ValidationError, which callers
            would otherwise let through as an internal error.
    """
    method = getattr(session, f"list_{what}")
    items: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        try:
            page = await method(params=params)
        except ValidationError as exc:
            raise _invalid_listing(what, exc) from None
        items += getattr(page, what)
        cursor = page.next_cursor
        if cursor is None or cursor in seen or len(items) >= limit:
            return items
        seen.add(cursor)
