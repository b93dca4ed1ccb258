"""The session pool: one MCP session per (conversation, server), shared by every frontend.

Opened on first use, closed after ``mcp.session_idle_minutes`` without use (a call in flight
keeps it open), dropped when its server dies (the next use reconnects), retired when a reload
changes the server's connection fields or removes or disables it. Beyond
``mcp.max_live_sessions`` the least recently used idle sessions close (never one with a request
in flight); they reconnect at their next use. A server with ``"sessionScope": "shared"`` has one
session for every conversation (pooled under no conversation). Every close is published as a
``server.status`` event with its ``reason`` (:data:`CloseReason`); :attr:`SessionPool.status`
publishes them, and the failures others meet (:mod:`meworkd.mcp.status`).
"""

import enum
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping
from typing import Literal, TypeVar

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp import ClientSession

from meworkd.base.errors import InvalidSettings, MeworkError, ServerUnavailable, ShuttingDown
from meworkd.base.events import EventBus
from meworkd.base.log import get_logger
from meworkd.mcp.asks import ServerAsksHost
from meworkd.mcp.auth import AuthRegistry
from meworkd.mcp.era import EraMemory
from meworkd.mcp.errors import TALK_ERRORS, is_session_forgotten, login_needed, talk_failure
from meworkd.mcp.ledger import PidLedger
from meworkd.mcp.session import McpSession
from meworkd.mcp.status import ServerStatus
from meworkd.settings import ServerConfig, Settings, SettingsDiff, expand_server, secret_values

__all__ = ["CLOSE_BOUND", "CloseReason", "PoolState", "SessionPool"]

CLOSE_BOUND = 8.0  # seconds for closing every session at shutdown (below the daemon's bound)
SWEEP_MAX_INTERVAL = 30.0

Key = tuple[str, str]
SHARED = ""  # the conversation part of a shared session's key (conversation ids are never "")
# Why a session closed: no use for the idle limit; over mcp.max_live_sessions; a reload changed,
# removed or disabled its server; it died on its own; its conversation was deleted or no longer
# selects the server; an HTTP server forgot it (404).
CloseReason = Literal["idle", "budget", "reload", "crash", "conversation", "forgotten"]
T = TypeVar("T")
# A sink for one session's stderr lines: it returns each line as stored (e.g. redacted).
LogWriter = Callable[[str, str | None], Callable[[str], str]]
log = get_logger("meworkd.pool")


class PoolState(enum.Enum):
    CREATED = "created"  # run() has not started: no task group to own sessions yet
    RUNNING = "running"
    STOPPING = "stopping"  # close_all() began: no session opens any more


class SessionPool:
    """Sessions by (conversation, server).

    ``writer(server, conversation)`` gives each session its stderr sink (the Logs tab). The
    pool reads no settings itself: each use names the server's config, and ``run`` and
    ``apply_settings`` hand it the idle limit.
    """

    def __init__(
        self,
        environ: Mapping[str, str],
        writer: LogWriter,
        ledger: PidLedger,
        bus: EventBus,
        auth: AuthRegistry | None = None,
        host: ServerAsksHost | None = None,
    ) -> None:
        self._environ = dict(environ)
        self._auth = auth  # OAuth logins shared by every session of a server
        self._host = host  # what every session's server may ask of (None: nothing)
        self._eras = EraMemory()  # HTTP servers found to be of the handshake era
        self._writer = writer
        self._ledger = ledger
        self.status = ServerStatus(bus)  # server.status events, each server's last failure
        self._idle = 0.0  # seconds without use before a session closes; set by run()
        self._sampling = False  # mcp.sampling the open sessions declared; set by run()
        self._apps = True  # mcp.apps, likewise (the MCP Apps extension advertised)
        self._max_live = 1  # live sessions before the least recently used idle ones close
        self._sessions: dict[Key, McpSession] = {}
        self._locks: defaultdict[Key, anyio.Lock] = defaultdict(anyio.Lock)
        self._state = PoolState.CREATED
        self._tg: TaskGroup | None = None
        self._wake_sweeper = anyio.Event()

    # --- lifecycle -----------------------------------------------------------------------

    async def run(
        self, settings: Settings, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        self._idle = settings.mcp.session_idle_minutes * 60.0
        self._sampling = settings.mcp.sampling
        self._apps = settings.mcp.apps
        self._max_live = settings.mcp.max_live_sessions
        async with anyio.create_task_group() as tg:
            self._tg = tg
            self._state = PoolState.RUNNING
            task_status.started()
            try:
                await self._sweep_idle()
            finally:
                with anyio.CancelScope(shield=True):
                    await self.close_all()

    async def close_all(self) -> None:
        """Close every session concurrently, bounded by ``CLOSE_BOUND``."""
        self._state = PoolState.STOPPING
        sessions = list(self._sessions.values())
        self._sessions.clear()
        for s in sessions:
            s.retire(force=True)
        with anyio.move_on_after(CLOSE_BOUND):
            for s in sessions:
                await s.closed.wait()

    # --- getting sessions ----------------------------------------------------------------

    async def get(self, conversation: str, server: str, config: ServerConfig) -> McpSession:
        """The live session for (conversation, server), opening it with ``config`` if needed."""
        shared = config.session_scope == "shared"
        key = (SHARED if shared else conversation, server)
        existing = self._sessions.get(key)
        if existing is not None and existing.alive:
            # The common case needs no lock (taking even a free one costs a loop pass).
            existing.last_used = time.monotonic()
            return existing
        async with self._locks[key]:
            existing = self._sessions.get(key)
            if existing is not None and existing.alive:
                existing.last_used = time.monotonic()
                return existing
            if existing is not None:
                # Dead, but its owner task has not cleaned up yet. Once replaced below, the
                # owner finds its key taken and stays silent: report the close here instead,
                # so every "connected" event is preceded by the previous session's "closed".
                del self._sessions[key]
                self._closed(existing, "crash")
            if not config.enabled:
                raise ServerUnavailable(f"{server} is disabled", server=server, reason="disabled")
            session = await self.open(server, None if shared else conversation, config)
            self._sessions[key] = session
            self._wake_sweeper.set()  # its idle deadline may be the nearest now
            self.status.connected(server, session.conversation)
            self._keep_budget(session)
            return session

    def prepare(self, conversation: str, servers: Mapping[str, ServerConfig]) -> list[str]:
        """Connect ``servers`` for ``conversation`` in the background; the names being connected.

        A turn that begins meanwhile waits for the same connection instead of opening another.
        A failure is published (``server.status`` ``failed``), never raised: nobody awaits it.
        """
        if self._state is not PoolState.RUNNING or self._tg is None:
            raise ShuttingDown("meworkd is shutting down")
        cold = [n for n, c in servers.items() if not self._is_live(conversation, n, c)]
        for server in cold:
            self._tg.start_soon(self._warm, conversation, server, servers[server])
        return cold

    def _is_live(self, conversation: str, server: str, config: ServerConfig) -> bool:
        key = (SHARED if config.session_scope == "shared" else conversation, server)
        session = self._sessions.get(key)
        return session is not None and session.alive

    async def _warm(self, conversation: str, server: str, config: ServerConfig) -> None:
        try:
            await self.get(conversation, server, config)
        except ShuttingDown:
            pass
        except MeworkError as exc:  # any of ours: an error here would end the pool's task group
            self.status.failed(server, conversation, exc)

    async def using(
        self,
        conversation: str,
        server: str,
        config: ServerConfig,
        use: Callable[[ClientSession], Awaitable[T]],
        *,
        within: float | None = None,
    ) -> T:
        """Run ``use`` with the pooled session of (conversation, server), leased.

        ``within``: seconds for all of it, connecting included. A Streamable HTTP server that
        forgot the session (HTTP 404 after a restart or expiry) gets one fresh session and
        ``use`` runs once more. What talking to the server raises leaves as a MeworkError.

        Raises:
            ServerUnavailable: the server is disabled or cannot be reached; a
                :class:`~meworkd.mcp.errors.TalkFailed` when a request to it failed.
            ShuttingDown: the pool is closing.
        """
        try:
            if within is None:  # (a cancel scope less on the call path)
                return await self._use(conversation, server, config, use)
            with anyio.fail_after(within):
                return await self._use(conversation, server, config, use)
        except TALK_ERRORS as exc:
            raise talk_failure(exc, server, config) from None

    async def _use(
        self,
        conversation: str,
        server: str,
        config: ServerConfig,
        use: Callable[[ClientSession], Awaitable[T]],
    ) -> T:
        session = await self.get(conversation, server, config)
        try:
            async with session.lease() as client:
                return await use(client)
        except TALK_ERRORS as exc:
            if (needs_login := login_needed(exc, server, config, session.http)) is not None:
                raise needs_login from None
            if not is_session_forgotten(exc, session.http):
                raise
            log.info("session.forgotten", server=server, conversation=conversation)
            self.retire(lambda s: s is session, force=True, reason="forgotten")
        session = await self.get(conversation, server, config)
        async with session.lease() as client:
            return await use(client)

    async def open(self, server: str, conversation: str | None, config: ServerConfig) -> McpSession:
        """Start a session (pooled or not) in the pool's task group; raise if it fails."""
        if self._state is not PoolState.RUNNING or self._tg is None:
            raise ShuttingDown("meworkd is shutting down")
        try:
            expanded = expand_server(server, config, self._environ)
        except InvalidSettings as exc:
            raise ServerUnavailable(exc.message, server=server, reason="unset_variable") from None
        session = McpSession(
            server,
            conversation,
            expanded,
            self._environ,
            on_stderr=self._writer(server, conversation),
            on_spawn=lambda pid: self._ledger.add(pid, server),
            on_exit=self._ledger.remove,
            secrets=secret_values(config, self._environ),
            host=self._host,
            auth=None if self._auth is None else self._auth.bearer(server, expanded),
            eras=self._eras,
        )
        try:
            await self._tg.start(self._own, session)
        except ServerUnavailable as exc:
            log.warning(
                "session.connect_failed",
                server=server,
                conversation=conversation,
                error=exc.message,
            )
            raise
        except anyio.get_cancelled_exc_class():
            # Cut off while starting (a turn's timeout): its failure quotes what it printed.
            self.status.cut_off(server, session.stderr_tail)
            raise
        log.info(
            "session.opened",
            server=server,
            conversation=conversation,
            protocol=session.protocol_version,
            pid=session.pid,
            ms=round((session.connect_seconds or 0) * 1000, 1),
        )
        return session

    async def _own(self, session: McpSession, *, task_status: TaskStatus[McpSession]) -> None:
        await session.run(task_status=task_status)
        key = (session.conversation or SHARED, session.server)
        if self._sessions.get(key) is session:
            del self._sessions[key]
            self._closed(session, "crash")
        # One lock per key ever used would grow with every conversation; drop idle ones.
        lock = self._locks.get(key)
        if key not in self._sessions and lock is not None and _unused(lock):
            del self._locks[key]

    def _closed(self, session: McpSession, reason: CloseReason) -> None:
        self.status.publish(
            session.server, session.conversation, "closed", reason=reason, error=session.error
        )
        if reason == "crash" and session.ending.limit is not None and session.error is not None:
            # It died on one of its limits: that is the server's failure (lastError, an event).
            failure = ServerUnavailable(
                session.error,
                server=session.server,
                reason="resource_limit",
                limit=session.ending.limit,
                stderrTail=list(session.stderr_tail),
            )
            self.status.failed(session.server, session.conversation, failure)

    # --- closing -------------------------------------------------------------------------

    def retire(
        self,
        predicate: Callable[[McpSession], bool],
        *,
        force: bool = False,
        reason: CloseReason = "conversation",
    ) -> int:
        """Retire matching sessions (they close once their calls finish, or now with force)."""
        count = 0
        for key, session in list(self._sessions.items()):
            if predicate(session):
                del self._sessions[key]
                session.retire(force=force)
                self.status.publish(session.server, session.conversation, "closed", reason=reason)
                count += 1
        return count

    async def roots_changed(self, conversation: str) -> None:
        """Tell the live sessions of ``conversation`` that its roots changed (best effort)."""
        for session in [s for s in self._sessions.values() if s.conversation == conversation]:
            try:
                with anyio.move_on_after(session.config.timeout):
                    await session.send_roots_changed()
            except TALK_ERRORS as exc:
                log.info(
                    "session.roots_notice_failed", server=session.server, error=type(exc).__name__
                )

    def close_conversation(self, conversation: str) -> int:
        """Close the conversation's own sessions; shared ones serve other conversations."""
        return self.retire(lambda s: s.conversation == conversation, force=True)

    def _keep_budget(self, keep: McpSession | None = None) -> None:
        """Close the least recently used idle sessions beyond ``max_live_sessions``."""
        excess = len(self._sessions) - self._max_live
        if excess <= 0:
            return
        idle = [s for s in self._sessions.values() if s.in_flight == 0 and s is not keep]
        idle.sort(key=lambda s: s.last_used)
        victims = {id(s) for s in idle[:excess]}
        count = self.retire(lambda s: id(s) in victims, reason="budget")
        log.info("pool.over_budget", limit=self._max_live, closed=count)

    async def apply_settings(self, settings: Settings, diff: SettingsDiff) -> None:
        self._idle = settings.mcp.session_idle_minutes * 60.0
        self._max_live = settings.mcp.max_live_sessions
        # A failure belongs to the definition that met it: a server removed (and perhaps added
        # again) or whose command, URL or environment changed starts with none.
        for name in (*diff.removed, *diff.connection_changed):
            self.status.forget(name)
        gone = set(diff.removed) | set(diff.connection_changed)
        gone |= {n for n, c in settings.servers.items() if not c.enabled}
        if (settings.mcp.sampling, settings.mcp.apps) != (self._sampling, self._apps):
            # Capabilities are fixed per session: every one reconnects with the new declaration.
            self._sampling, self._apps = settings.mcp.sampling, settings.mcp.apps
            gone |= {s.server for s in self._sessions.values()}
        if gone:
            count = self.retire(lambda s: s.server in gone, reason="reload")
            if count:
                log.info("pool.retired", servers=sorted(gone), sessions=count)
        self._keep_budget()
        self._wake_sweeper.set()  # the idle limit may have changed

    # --- idle sweeping -------------------------------------------------------------------

    async def _sweep_idle(self) -> None:
        while True:
            idle = self._idle
            now = time.monotonic()
            self.retire(_idle_for(idle, now), reason="idle")
            # Sessions all in use when the budget was passed close once they are idle.
            self._keep_budget()
            # A session in use is not idle, however long its call runs: its deadline starts
            # when the lease ends, and the next pass (at most SWEEP_MAX_INTERVAL on) sees it.
            waiting = (s.last_used + idle - now for s in self._sessions.values() if not s.in_flight)
            nearest = min(waiting, default=idle)
            self._wake_sweeper = anyio.Event()
            with anyio.move_on_after(max(0.05, min(nearest, SWEEP_MAX_INTERVAL))):
                await self._wake_sweeper.wait()

    # --- views ---------------------------------------------------------------------------

    @property
    def sessions(self) -> list[McpSession]:
        return list(self._sessions.values())

    def count_for(self, server: str) -> int:
        return sum(1 for s in self._sessions.values() if s.server == server)


def _idle_for(idle: float, now: float) -> Callable[[McpSession], bool]:
    def expired(session: McpSession) -> bool:
        return session.in_flight == 0 and now - session.last_used >= idle

    return expired


def _unused(lock: anyio.Lock) -> bool:
    return not lock.locked() and lock.statistics().tasks_waiting == 0
