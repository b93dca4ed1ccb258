"""The composition root: builds the services, owns the task tree, signals and shutdown order.

Task tree::

    Daemon.run
    └── backend (cancelled last): settings watcher, signal handler, session pool
        └── frontend (stopped first): the RPC server and its connections
"""

import os
import signal
import time
from collections.abc import Mapping

import anyio
from anyio.abc import SocketListener, TaskStatus

from meworkd import __version__
from meworkd.app import systemd
from meworkd.app.instance import InstanceLock, prepare_private_dir
from meworkd.app.paths import Paths
from meworkd.base.errors import ShuttingDown
from meworkd.base.events import EventBus
from meworkd.base.log import Redactor, get_logger
from meworkd.core.approvals.gate import Approvals
from meworkd.core.serverlogs import ServerLogs
from meworkd.core.state import StateDB
from meworkd.core.turns import Turns
from meworkd.mcp import PidLedger, SessionPool
from meworkd.rpc.dispatch import Dispatcher
from meworkd.rpc.methods import build_methods
from meworkd.rpc.server import RpcServer
from meworkd.settings import Settings, SettingsDiff, secret_values
from meworkd.settings.store import SettingsStore

__all__ = ["SHUTDOWN_BOUND", "Daemon"]

SHUTDOWN_BOUND = 10.0  # seconds; the systemd unit's TimeoutStopSec is above this

log = get_logger("meworkd")


class Daemon:
    def __init__(
        self,
        paths: Paths,
        *,
        environ: Mapping[str, str] | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.paths = paths
        self.environ = dict(os.environ if environ is None else environ)
        self.redactor = redactor or Redactor()
        self.bus = EventBus()
        self.store = SettingsStore(paths.settings, self.bus)
        self.store.add_listener(self._on_settings)
        self.logs = ServerLogs(self.bus, self.redactor.redact)
        self.ledger = PidLedger(paths.pid_ledger)
        self.pool = SessionPool(self.environ, self.logs.writer, self.ledger, self.bus)
        self.approvals = Approvals(self.bus)
        self.db: StateDB | None = None
        self._turns: Turns | None = None
        self.started_at = time.monotonic()
        self.methods = build_methods(self)
        self.rpc = RpcServer(
            Dispatcher(self.methods), self.bus, redact_events=self.redactor.redact_value
        )
        self._stop = anyio.Event()
        self._notifier = systemd.Notifier()

    # --- lifecycle -------------------------------------------------------------------------

    def request_shutdown(self) -> None:
        self._stop.set()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        prepare_private_dir(self.paths.socket.parent)
        prepare_private_dir(self.paths.state_dir)
        lock = InstanceLock(self.paths.lock)
        lock.acquire(self.paths.socket)  # raises AlreadyRunning before anything is touched
        try:
            self.ledger.reap_leftovers()
            self.store.open()
            self.db = StateDB(self.paths.database)
            self._turns = Turns(
                self.store, self.pool, self.approvals, self.db, self.bus, self.redactor.redact_value
            )
            self._refresh_secrets(self.store.settings)
            listener, owns_socket = await self._listener()
            try:
                await self._serve(listener, task_status)
            finally:
                if owns_socket:
                    self.paths.socket.unlink(missing_ok=True)
        finally:
            if self.db is not None:
                self.db.close()
            self._notifier.close()
            lock.release()
            log.info("daemon.stopped")

    async def _listener(self) -> tuple[SocketListener, bool]:
        activated = systemd.listen_unix_socket()
        if activated is not None:
            log.info("daemon.socket_activated")
            return await SocketListener.from_socket(activated), False
        listener = await anyio.create_unix_listener(self.paths.socket, mode=0o600)
        return listener, True

    async def _serve(self, listener: SocketListener, task_status: TaskStatus[None]) -> None:
        async with anyio.create_task_group() as backend:
            await backend.start(self.store.watch)
            await backend.start(self.pool.run, self.store.settings)
            await backend.start(self.state.run_audit_writer)
            backend.start_soon(self._signals)
            async with anyio.create_task_group() as frontend:
                await frontend.start(self.rpc.serve, listener)
                log.info(
                    "daemon.ready",
                    version=__version__,
                    pid=os.getpid(),
                    socket=str(self.paths.socket),
                    settings=str(self.paths.settings),
                )
                self._notifier.ready(self.status_line())
                task_status.started()
                await self._stop.wait()
                log.info("daemon.stopping")
                self._notifier.stopping()
                self.approvals.shutdown()
                self.rpc.stop()
            self.store.stop_watching()
            backend.cancel_scope.cancel()

    async def _signals(self) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async for signum in signals:
                if signum == signal.SIGHUP:
                    log.info("daemon.sighup")
                    self._notifier.reloading()
                    await self.store.reload("signal")
                    self._notifier.ready(self.status_line())
                else:
                    log.info("daemon.signal", signal=signal.Signals(signum).name)
                    self.request_shutdown()

    # --- reactions -------------------------------------------------------------------------

    async def _on_settings(self, settings: Settings, diff: SettingsDiff) -> None:
        self._refresh_secrets(settings)
        await self.pool.apply_settings(settings, diff)
        self._notifier.status(self.status_line())

    def _refresh_secrets(self, settings: Settings) -> None:
        secrets: list[str] = []
        for config in settings.servers.values():
            secrets += secret_values(config, self.environ)
        self.redactor.update(secrets)

    # --- views -----------------------------------------------------------------------------

    def status_line(self) -> str:
        servers = self.store.settings.servers
        enabled = sum(1 for c in servers.values() if c.enabled)
        return f"{len(servers)} servers ({enabled} enabled), {len(self.pool.sessions)} sessions"

    @property
    def turns(self) -> Turns:
        if self._turns is None:
            raise ShuttingDown("meworkd is not running")
        return self._turns

    @property
    def state(self) -> StateDB:
        if self.db is None:
            raise ShuttingDown("meworkd is not running")
        return self.db

    def uptime(self) -> float:
        return time.monotonic() - self.started_at
