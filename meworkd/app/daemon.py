"""The composition root: builds the services, owns the task tree, signals and shutdown order.

The Daemon is the only place that builds things: the core's façades, the method table over them
(in ``__init__``, so that ``Daemon(paths).methods`` exists without running), the RPC server.
Everything is built here, each part after the parts it needs; ``run`` opens what touches the
disk (the settings file, the state database) and closes it.

Task tree::

    Daemon.run
    └── backend (cancelled last): settings watcher, signal handler, session pool
        └── frontend (stopped first): the RPC server and its connections
"""

import os
import signal
from collections.abc import Mapping
from enum import Enum

import anyio
from anyio.abc import SocketListener, TaskStatus

from meworkd import __version__
from meworkd.app import systemd
from meworkd.app.instance import InstanceLock, prepare_socket_dir, prepare_state_dir
from meworkd.app.paths import Paths
from meworkd.base.events import EventBus
from meworkd.base.gauge import Gauge
from meworkd.base.log import Redactor, get_logger
from meworkd.base.procgroup import kill_tree, orphans
from meworkd.core.approvals.gate import Approvals
from meworkd.core.apps import Apps
from meworkd.core.asks import ServerAsks
from meworkd.core.conversations import Conversations
from meworkd.core.inspect import Inventory
from meworkd.core.lifecycle import Lifecycle
from meworkd.core.listings import ListFollower
from meworkd.core.registry import Registries
from meworkd.core.serverlogs import ServerLogs
from meworkd.core.servers import Servers
from meworkd.core.settingsfile import SettingsFile
from meworkd.core.state import StateDB
from meworkd.core.turns import Turns
from meworkd.mcp import AuthRegistry, PidLedger, SessionPool
from meworkd.rpc.api import Services, build_table
from meworkd.rpc.dispatch import Dispatcher
from meworkd.rpc.server import RpcServer
from meworkd.settings import Settings, SettingsDiff, secret_values
from meworkd.settings.store import SettingsStore

__all__ = ["SHUTDOWN_BOUND", "Daemon", "DaemonState"]

SHUTDOWN_BOUND = 10.0  # seconds; the systemd unit's TimeoutStopSec is above this

log = get_logger("meworkd")


class DaemonState(Enum):
    CREATED = "created"  # built; nothing opened yet
    RUNNING = "running"  # the state database is open, turns run, requests are answered
    STOPPING = "stopping"  # shutdown began: requests in flight may still finish
    STOPPED = "stopped"  # the state database is closed


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
        # Each is built once its parts exist, in order; nothing is set on one afterwards.
        self.store = SettingsStore(paths.settings, self.bus)
        self.store.add_listener(self._on_settings)
        self.state_db = StateDB(paths.database)  # opened by run()
        self.logs = ServerLogs(self.bus, self.redactor.redact)
        self.ledger = PidLedger(paths.pid_ledger, owner=str(paths.socket))
        self.auth = AuthRegistry(paths.state_dir, self.bus, self.environ, on_tokens=self._tokens)
        self.inventory = Inventory()
        self.lists = ListFollower(self.bus, self.inventory)
        self.asks = ServerAsks(
            self.bus, self.store, self.logs, self.state_db, self.lists, self.redactor.redact_value
        )
        self.pool = SessionPool(
            self.environ, self.logs.writer, self.ledger, self.bus, self.auth, host=self.asks
        )
        self.approvals = Approvals(self.bus, self.store, self.redactor)
        self.turns = Turns(
            self.store,
            self.pool,
            self.approvals,
            self.state_db,
            self.bus,
            self.redactor.redact_value,
            self.asks,
            inventory=self.inventory,
        )
        self.connections = Gauge()  # counted by the RPC server, reported by daemon.status
        self.lifecycle = Lifecycle(
            self.store,
            self.pool,
            self.state_db,
            self.turns,
            self.connections,
            socket=paths.socket,
            state_dir=paths.state_dir,
        )
        self.services = self._services()
        self.methods = build_table(self.services)
        self.rpc = RpcServer(
            Dispatcher(self.methods),
            self.bus,
            redact_events=self.redactor.redact_value,
            connections=self.connections,
        )
        self.state = DaemonState.CREATED
        self._notifier = systemd.Notifier()

    def _services(self) -> Services:
        """The core's façades, as the method handlers see them."""
        return Services(
            daemon=self.lifecycle,
            settings=SettingsFile(self.store),
            servers=Servers(
                self.store,
                self.pool,
                self.auth,
                self.logs,
                self.inventory,
                self.state_db,
                self.redactor.redact_value,
                self.environ,
                self.paths.state_dir / "bundles",
            ),
            conversations=Conversations(
                self.store,
                self.pool,
                self.state_db,
                self.turns,
                self.approvals,
                self.redactor.redact_value,
            ),
            turns=self.turns,
            apps=Apps(
                self.store,
                self.pool,
                self.state_db,
                self.bus,
                self.turns,
                self.redactor.redact_value,
                self.inventory,
            ),
            approvals=self.approvals,
            asks=self.asks,
            registries=Registries(self.store, self.paths.state_dir, self.environ),
        )

    # --- lifecycle -------------------------------------------------------------------------

    def request_shutdown(self) -> None:
        self.lifecycle.request_shutdown()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        prepare_socket_dir(self.paths.socket.parent)
        prepare_state_dir(self.paths.state_dir)
        lock = InstanceLock(self.paths.lock)
        lock.acquire(self.paths.socket)  # raises AlreadyRunning before anything is touched
        try:
            self.ledger.reap_leftovers()
            self.store.open()
            self.state_db.open()
            # No turn of an earlier run survives it: what it left unfinished was cut off.
            self.state_db.mark_interrupted()
            self.state = DaemonState.RUNNING
            self._refresh_secrets(self.store.settings)
            listener, owns_socket = await self._listener()
            try:
                await self._serve(listener, task_status)
                with anyio.CancelScope(shield=True):
                    await kill_tree(orphans())  # what no session claimed (as a subreaper)
            finally:
                if owns_socket:
                    self.paths.socket.unlink(missing_ok=True)
        finally:
            self.state = DaemonState.STOPPED
            self.state_db.close()
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
            await backend.start(self.auth.run)
            await backend.start(self.pool.run, self.store.settings)
            await backend.start(self.state_db.run_audit_writer)
            await backend.start(self.turns.background.serve)
            await backend.start(self.turns.tasks.serve)
            await backend.start(self.lists.run, self.pool)
            # Before READY=1: a SIGHUP (reload) sent once we say we are ready must not kill us.
            await backend.start(self._signals)
            async with anyio.create_task_group() as frontend:
                await frontend.start(self.rpc.serve, listener)
                log.info(
                    "daemon.ready",
                    version=__version__,
                    pid=os.getpid(),
                    socket=str(self.paths.socket),
                    settings=str(self.paths.settings),
                )
                self._notifier.ready(self.lifecycle.status_line())
                task_status.started()
                await self.lifecycle.stopping()
                self.state = DaemonState.STOPPING
                log.info("daemon.stopping")
                self._notifier.stopping()
                self.approvals.shutdown()
                self.asks.stop()
                self.rpc.stop()
            self.store.stop_watching()
            backend.cancel_scope.cancel()

    async def _signals(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            task_status.started()
            async for signum in signals:
                if signum == signal.SIGHUP:
                    log.info("daemon.sighup")
                    self._notifier.reloading()
                    await self.store.reload("signal")
                    self._notifier.ready(self.lifecycle.status_line())
                else:
                    log.info("daemon.signal", signal=signal.Signals(signum).name)
                    self.request_shutdown()

    # --- reactions -------------------------------------------------------------------------

    async def _on_settings(self, settings: Settings, diff: SettingsDiff) -> None:
        self._refresh_secrets(settings)
        await self.pool.apply_settings(settings, diff)
        self._notifier.status(self.lifecycle.status_line())

    def _refresh_secrets(self, settings: Settings) -> None:
        secrets: list[str] = []
        for config in settings.servers.values():
            secrets += secret_values(config, self.environ)
        secrets += self.auth.secrets()  # OAuth tokens and client secrets (never logged)
        # A process started with a secret the settings just dropped (a rotated token) may still
        # print it, at exit say: it stays known until every session alive now has closed.
        running = [session.closed for session in self.pool.sessions]
        self.redactor.update(secrets, retire_when=lambda: all(c.is_set() for c in running))

    def _tokens(self) -> None:
        self._refresh_secrets(self.store.settings)  # OAuth tokens came or went
