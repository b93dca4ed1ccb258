"""Every server's :class:`~.server.ServerAuth`, the logins running, and the ``server.auth`` event.

One :class:`AuthRegistry` per daemon: sessions of a server get their ``BearerAuth`` here (one
``ServerAuth`` per server URL, so every conversation and Test connection share one login), and
``servers.login``/``servers.logout`` run here. A login runs in the registry's own task group,
so ``servers.login`` answers as soon as the authorization URL is known and the login completes
in the background (the loopback redirect). Each state change is published as ``server.auth``
``{name, state, authorizationUrl?, error?}``; tokens never leave this package.
"""

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import httpx2
from anyio.abc import TaskGroup, TaskStatus

from meworkd.base.errors import InvalidSettings
from meworkd.base.events import EventBus
from meworkd.mcp.auth.bearer import BearerAuth
from meworkd.mcp.auth.login import login
from meworkd.mcp.auth.loopback import LoginFailed
from meworkd.mcp.auth.machine import machine_grant
from meworkd.mcp.auth.server import LoginRequired, ServerAuth
from meworkd.mcp.auth.store import auth_file_for
from meworkd.mcp.http import tls_context
from meworkd.settings import MACHINE_GRANTS, OAuthConfig, ServerConfig, expand_server

__all__ = ["AUTH_TOPIC", "AuthRegistry", "uses_oauth"]

AUTH_TOPIC = "server.auth"
REFRESH_TIMEOUT = 30.0  # seconds for one call to the token endpoint
LOGIN_WAIT_SECONDS = 600.0  # how long a person has to finish a login in the browser


class _Login:
    """One login in progress: its URL published (or it failed first), its end."""

    def __init__(self) -> None:
        self.url_known = anyio.Event()
        self.done = anyio.Event()
        self.error: LoginFailed | None = None
        self.scope = anyio.CancelScope()  # cancelled when its server is removed


def uses_oauth(config: ServerConfig) -> bool:
    """HTTP, not ``"oauth": false``, and no static ``Authorization`` header of its own."""
    static = any(k.lower() == "authorization" for k in config.headers)
    return config.type == "streamable_http" and config.oauth is not False and not static


class AuthRegistry:
    def __init__(
        self,
        state_dir: Path,
        bus: EventBus,
        environ: Mapping[str, str],
        on_tokens: Callable[[], None] = lambda: None,
    ) -> None:
        self._state_dir = state_dir
        self._environ = dict(environ)  # ${VAR} of the url and the oauth secrets
        self._bus = bus
        self._on_tokens = on_tokens  # the set of secrets to redact changed
        self._servers: dict[str, ServerAuth] = {}
        self._names: dict[str, str] = {}  # server URL -> the name it was last used under
        self._http: httpx2.AsyncClient | None = None
        self._tg: TaskGroup | None = None
        self._oauth: dict[str, OAuthConfig | None] = {}  # server URL -> its oauth settings
        self._logins: dict[str, _Login] = {}  # server URL -> its last (or running) login

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Own the HTTP client of refreshes and the running logins until cancelled."""
        async with (
            # The process's one TLS context: a fresh one costs ~40 ms of CPU (the CA store) and
            # ~850 KiB at every start, for a client most daemons never use.
            httpx2.AsyncClient(
                timeout=REFRESH_TIMEOUT, follow_redirects=False, verify=tls_context()
            ) as http,
            anyio.create_task_group() as tg,
        ):
            self._http, self._tg = http, tg
            task_status.started()
            try:
                await anyio.sleep_forever()
            finally:
                self._http = self._tg = None

    def server(self, name: str, config: ServerConfig) -> ServerAuth | None:
        """The shared state of ``config``'s server, or None when it does not use OAuth."""
        if not uses_oauth(config) or config.url is None or self._http is None:
            return None
        self._names[config.url] = name
        found = self._servers.get(config.url)
        if found is None:
            file = auth_file_for(self._state_dir, config.url)
            found = ServerAuth(config.url, file, self._http, on_change=self._changed)
            self._servers[config.url] = found
            found.request_login = functools.partial(self._wanted, found)
        oauth = config.oauth
        self._oauth[config.url] = oauth if isinstance(oauth, OAuthConfig) else None
        if isinstance(oauth, OAuthConfig) and oauth.grant in MACHINE_GRANTS:
            found.machine = functools.partial(self._machine, found, oauth)
        else:
            found.machine = None
        return found

    @staticmethod
    async def _machine(auth: ServerAuth, oauth: OAuthConfig) -> None:
        try:
            await machine_grant(auth, oauth)
        except LoginFailed as exc:
            auth.set_phase("failed", exc.message)
            raise

    def bearer(self, name: str, config: ServerConfig) -> BearerAuth | None:
        auth = self.server(name, config)
        return None if auth is None else BearerAuth(auth)

    def status(self, name: str, config: ServerConfig) -> dict[str, Any] | None:
        try:
            config = expand_server(name, config, self._environ)
        except InvalidSettings:
            return None  # cannot connect either: servers.test says why
        auth = self.server(name, config)
        return None if auth is None else auth.status()

    def secrets(self) -> list[str]:
        """Every token and client secret held now, for the log and event redactor."""
        found: list[str] = []
        for auth in self._servers.values():
            tokens = auth.state.get("tokens") or {}
            client = auth.state.get("client") or {}
            values = (tokens.get("access_token"), tokens.get("refresh_token"))
            found += [v for v in (*values, client.get("client_secret")) if v]
        return found

    def _changed(self, auth: ServerAuth) -> None:
        event: dict[str, Any] = {"name": self._names.get(auth.server_url), "state": auth.phase}
        if auth.authorization_url:
            event["authorizationUrl"] = auth.authorization_url
        if auth.error:
            event["error"] = auth.error
        self._on_tokens()
        self._bus.publish(AUTH_TOPIC, event)
        if auth.phase == "required" and auth.machine is None:
            # A session met a 401 (a turn's discovery, say): a fresh URL goes out at once in a
            # server.auth event; the turn does not wait for it.
            self._begin(auth)

    async def login(self, name: str, config: ServerConfig) -> dict[str, Any]:
        """Start a login: ``{"state": "authorized"}`` when no browser is needed, else
        ``{"state": "pending", "authorizationUrl"}`` with the login going on in the background."""
        config = self._expanded(name, config)
        auth = self.server(name, config)
        if auth is None or self._tg is None:
            raise LoginFailed(f"{name} does not log in with OAuth")
        if auth.machine is not None:
            auth.retry_not_before = 0.0  # asked by a person: try the AS now
            async with auth.lock:
                await auth.run_machine()  # no person: a fresh token each time it is asked for
            return {"state": "authorized"}
        if auth.step_up_scope is None:
            auth.retry_not_before = 0.0  # asked by a person: try the AS now, not after a pause
            try:
                with anyio.fail_after(REFRESH_TIMEOUT):
                    await auth.token()
                return {"state": "authorized"}
            except (LoginRequired, httpx2.HTTPError, TimeoutError):
                pass
        running = self._begin(auth)
        await running.url_known.wait()
        if running.error is not None and auth.phase != "pending":
            raise running.error
        if auth.phase == "authorized":
            return {"state": "authorized"}
        return {"state": "pending", "authorizationUrl": auth.authorization_url}

    def _begin(self, auth: ServerAuth) -> "_Login":
        """The login of ``auth``'s server running now, started if there is none."""
        running = self._logins.get(auth.server_url)
        if running is not None and not running.done.is_set():
            return running
        running = self._logins[auth.server_url] = _Login()
        if self._tg is None:  # the daemon is stopping
            running.error = LoginFailed("meworkd is shutting down")
            running.url_known.set()
            running.done.set()
            return running
        self._tg.start_soon(self._run_login, auth, running)
        return running

    async def _run_login(self, auth: ServerAuth, running: "_Login") -> None:
        oauth = self._oauth.get(auth.server_url)

        async def publish_url(_url: str) -> None:
            running.url_known.set()  # auth is "pending" with the URL: the event went out

        try:
            with running.scope:
                await login(auth, oauth, publish_url, wait_seconds=LOGIN_WAIT_SECONDS)
        except LoginFailed as exc:
            running.error = exc
        finally:
            running.url_known.set()
            running.done.set()

    def _wanted(self, auth: ServerAuth) -> anyio.Event:
        """A session needs a login (step-up, or none yet): start it; its end, to wait on."""
        return self._begin(auth).done

    def _expanded(self, name: str, config: ServerConfig) -> ServerConfig:
        """``config`` as the pool connects it: the same URL key, the real secrets."""
        try:
            return expand_server(name, config, self._environ)
        except InvalidSettings as exc:
            raise LoginFailed(exc.message) from None

    async def logout(self, name: str, config: ServerConfig) -> bool:
        config = self._expanded(name, config)
        auth = self.server(name, config)
        if auth is None:
            raise LoginFailed(f"{name} does not log in with OAuth")
        revoked = await auth.logout()
        self._on_tokens()
        return revoked

    async def forget(
        self, name: str, config: ServerConfig, remaining: Mapping[str, ServerConfig]
    ) -> bool:
        """``servers.remove`` of ``name``: revoke and delete its login and registration, unless
        an entry in ``remaining`` (the settings after the removal) logs in to the same URL.
        Returns whether anything was deleted. (A hand edit that drops the entry keeps them, for
        a re-add: only this explicit removal deletes, as ``claude mcp remove`` does.)"""
        try:
            config = expand_server(name, config, self._environ)
        except InvalidSettings:
            return False  # no URL to know its file by; nothing was ever stored under it then
        url = config.url
        if not uses_oauth(config) or url is None or self._http is None:
            return False
        for other, kept in remaining.items():
            try:
                if uses_oauth(kept) and expand_server(other, kept, self._environ).url == url:
                    return False  # shared with another entry: still its login
            except InvalidSettings:
                continue
        auth = self.server(name, config)
        assert auth is not None
        for table in (self._servers, self._names, self._oauth):
            table.pop(url, None)
        if (running := self._logins.pop(url, None)) is not None:
            running.scope.cancel()
        await auth.forget()
        self._on_tokens()
        return True
