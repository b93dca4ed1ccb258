"""What the UI knows of meworkd, kept current by the Link's events; every screen reads it."""

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import anyio
from mework_client import RpcError
from mework_protocol.wording import unreadable_settings
from textual.app import App

from mework_ui.link import Link, Offline, describe
from mework_ui.taskbook import TaskBook

__all__ = ["Check", "Coalescer", "HasModel", "Model", "failure_kind", "why_missing"]

MAX_CARDS = 200  # tool cards kept across conversations, oldest dropped first


@dataclass(frozen=True)
class Check:
    """One reason a tool may be missing from a turn: met (True), not met, or unknown here."""

    ok: bool | None
    text: str
    source: str  # where it was read: the method, or "outside meworkd"
    detail: tuple[str, ...] = ()


LOGGED_IN = ("none", "authorized")


def why_missing(
    name: str,
    entry: dict[str, Any] | None,
    conversation: dict[str, Any],
    failure: dict[str, Any] | None,
    tool: str | None = None,
    listed: list[str] | None = None,
) -> list[Check]:
    """Every check between a server's tool and a conversation's next turn, in order (§2.7).

    ``listed``: the tool names the server last reported (None when nothing is known yet).
    """
    if entry is None:
        return [Check(False, f"server {name!r} is not registered", "servers.list")]
    selected = name in (conversation.get("mcpServers") or [])
    invalid = entry.get("status") == "invalid"
    checks = [
        Check(
            not invalid,
            f"invalid: {entry.get('error')}" if invalid else f"server {name!r} is valid",
            "servers.list",
        ),
        Check(
            bool(entry.get("enabled")),
            "enabled" if entry.get("enabled") else "disabled in Settings → MCP (space)",
            "servers.list",
        ),
        # "this": the conversation is named above the checks; a frontend's UUID is long.
        Check(
            selected,
            f"{'' if selected else 'not '}selected in this conversation",
            "conversations.get",
        ),
    ]
    if tool is not None:
        on = tool not in (entry.get("disabledTools") or [])
        checks.append(Check(on, f"tool {tool!r} switched {'on' if on else 'off'}", "servers.list"))
        if listed is None:
            checks.append(Check(None, "not known yet what it lists: test it (ctrl+t)", "—"))
        else:
            there = tool in listed
            said = "the server lists it" if there else "the server no longer lists it"
            checks.append(Check(there, said, "servers.tools"))
    auth = entry.get("auth")
    if isinstance(auth, dict) and auth.get("state") not in LOGGED_IN:
        checks.append(Check(False, f"login {auth.get('state')}", "servers.list auth"))
    checks.append(_failure_check(failure))
    if tool is not None:
        checks.append(Check(None, "the chat model must support tool calling", "outside meworkd"))
    return checks


def failure_kind(failure: dict[str, Any]) -> str:
    """The classified kind: ``kind`` (older daemons' servers.test said ``reason``)."""
    return str(failure.get("kind") or failure.get("reason") or "error")


def _failure_check(failure: dict[str, Any] | None) -> Check:
    if failure is None:
        return Check(True, "no failure seen", "server.status")
    source = "servers.test" if "ok" in failure else "server.status"
    stderr = tuple(f"stderr: {line}" for line in failure.get("stderrTail") or [])
    text = f"failed: {failure_kind(failure)}"
    return Check(False, text, source, (str(failure.get("error") or ""), *stderr))


class Coalescer:
    """One re-read per burst of events: each event marks what is stale, one task reads it.

    Marks made while a read runs are kept for the next one, so nothing is missed and a burst
    of N events costs at most two reads.
    """

    def __init__(self) -> None:
        self.stale: set[str] = set()
        self.rounds = 0  # re-reads done so far
        self._wake = anyio.Event()

    def mark(self, *parts: str) -> None:
        self.stale.update(parts)
        self._wake.set()

    async def run(self, reread: Callable[[set[str]], Awaitable[None]]) -> None:
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            parts, self.stale = self.stale, set()
            await reread(parts)
            self.rounds += 1


class Model:
    def __init__(self, app: App[Any], socket_path: str | None, changed: Callable[[], None]) -> None:
        self.app = app
        self.link = Link(socket_path)
        self.changed = changed  # redraw every view
        self.connection = "connecting to meworkd…"
        self.online = False
        self.version = ""
        self.servers: dict[str, dict[str, Any]] = {}
        self.failures: dict[str, dict[str, Any]] = {}
        self.tests: dict[str, dict[str, Any]] = {}  # the last servers.test result per server
        self.testing: set[str] = set()  # servers whose Test connection is running now
        self.tested_at: dict[str, str] = {}  # when each server's last test ended (local time)
        self.reported: dict[str, dict[str, Any]] = {}  # servers.tools: what it last reported
        self.login_urls: dict[str, str] = {}  # a pending login's authorization URL, by server
        self.settings_state: dict[str, Any] = {}
        self.questions: dict[str, dict[str, Any]] = {}  # approvals and elicitations, by id
        # When each question stops waiting (monotonic), from the daemon's ``expiresAt``.
        self.deadlines: dict[str, float] = {}
        self.cards: dict[str, dict[str, Any]] = {}  # "turnId/callId" → the call's audit entry
        self.tasks = TaskBook()  # the MCP tasks of calls, by call id
        self.stale = Coalescer()

    async def follow(self) -> None:
        """The daemon's link, and beside it the one task that re-reads what events made stale."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.stale.run, self.reread)
            await self.link.run(self.on_event, self.set_connection, self.snapshot)

    async def reread(self, parts: set[str]) -> None:
        try:
            if "settings" in parts:
                await self.load_settings()
            if "servers" in parts:
                await self.load_servers()
        except Exception:  # noqa: BLE001 - offline or refused: the next snapshot re-reads all
            return
        self.changed()

    def set_connection(self, text: str, online: bool) -> None:
        self.connection, self.online = text, online
        if not online:  # no session outlives its daemon: "connected" would be a stale claim
            for entry in self.servers.values():
                if entry.get("status") == "connected":
                    entry["status"] = "unknown"
        self.changed()

    async def snapshot(self) -> None:
        """Everything a view shows, re-read after every (re)connect."""
        status = await self.link.call("daemon.status")
        self.version = str(status.get("version", ""))
        await self.load_settings()
        await self.load_servers()
        self.questions = {}
        for item in (await self.link.call("approvals.list")).get("approvals", []):
            self.questions[item["approvalId"]] = {"kind": "approval", **item}
            self.note_deadline(item["approvalId"], item)
        try:
            listed = await self.link.call("elicitations.list")
        except Exception:  # noqa: BLE001 - a daemon without elicitations (method_not_found)
            listed = {}
        for item in listed.get("elicitations", []):
            self.questions[item["elicitationId"]] = {"kind": "elicitation", **item}
            self.note_deadline(item["elicitationId"], item)
        self.deadlines = {k: v for k, v in self.deadlines.items() if k in self.questions}
        try:
            self.tasks.load((await self.link.call("tasks.list", {"openOnly": True}))["tasks"])
        except Exception:  # noqa: BLE001 - a daemon without tasks (method_not_found)
            self.tasks.load([])

    async def load_servers(self) -> None:
        listed = (await self.link.call("servers.list")).get("servers", [])
        self.servers = {entry["name"]: entry for entry in listed}
        self.failures = {k: v for k, v in self.failures.items() if k in self.servers}
        for entry in listed:
            name, last = entry["name"], entry.get("lastError", False)
            if isinstance(last, dict):
                self.failures[name] = last
            elif last is None:
                # The daemon's word: it connected, passed a test or was redefined since.
                self.failures.pop(name, None)

    async def load_settings(self) -> None:
        self.settings_state = await self.link.call("settings.get")

    async def on_event(self, topic: str, data: Any) -> None:
        if not isinstance(data, dict):
            return
        if topic == "server.status":
            self.note_status(data)
            self.stale.mark("servers")
        elif topic == "server.auth":
            self.note_login(data)
            self.stale.mark("servers")
        elif topic == "settings.reloaded":
            self.stale.mark("servers", "settings")
        elif topic == "settings.invalid":
            self.stale.mark("settings")
            if data.get("error"):
                self.app.notify(unreadable_settings(data["error"]), severity="error")
        elif topic in ("call.started", "call.finished"):
            self.note_call(data, finished=topic == "call.finished")
        elif topic in ("approval.requested", "elicitation.requested"):
            self.ask(topic.split(".")[0], data)
        elif topic in ("approval.resolved", "elicitation.resolved"):
            self.settle(str(data.get("approvalId") or data.get("elicitationId")))
        elif topic.startswith("task."):
            self.tasks.note(data)
        self.changed()

    def settle(self, key: str) -> None:
        """A question no longer waits: answered here or elsewhere, or given up on."""
        self.questions.pop(key, None)
        self.deadlines.pop(key, None)

    def note_status(self, data: dict[str, Any]) -> None:
        server = str(data.get("server"))
        if data.get("status") == "failed":
            self.failures[server] = data
        elif data.get("status") == "connected":
            self.failures.pop(server, None)

    def note_login(self, data: dict[str, Any]) -> None:
        """A login prompt with its URL, wherever the person is (the browser step is theirs)."""
        server, url = str(data.get("name")), data.get("authorizationUrl")
        if data.get("state") == "pending" and url:
            self.login_urls[server] = str(url)
            self.app.notify(f"{server}: log in at {url}", timeout=30)
        else:
            self.login_urls.pop(server, None)

    def ask(self, kind: str, data: dict[str, Any]) -> None:
        """A question never takes focus: it is queued, counted in the bar, announced."""
        key = str(data.get("approvalId") or data.get("elicitationId"))
        self.questions[key] = {"kind": kind, **data}
        self.note_deadline(key, data)
        self.app.bell()
        if kind == "approval":
            what = f"{data.get('server')} › {data.get('tool')}"
        else:
            what = f"{data.get('server')}: {'a link to open' if data.get('url') else 'a form'}"
        self.app.notify(f"question: {what} (F4 to answer)", timeout=4)

    def note_call(self, entry: dict[str, Any], finished: bool) -> None:
        """A tool card: started (on record, maybe waiting for approval), then its outcome."""
        key = f"{entry.get('turnId')}/{entry.get('callId')}"
        known = self.cards.get(key)
        if not finished and known is not None and known.get("decision") != "requested":
            return  # the outcome arrived first (an audit.list read): keep it
        self.cards.pop(key, None)  # re-inserted last: the newest card is the last one
        self.cards[key] = {**entry, "decision": entry.get("decision") or "requested"}
        while len(self.cards) > MAX_CARDS:
            del self.cards[next(iter(self.cards))]

    def cards_of(self, conversation: str) -> list[dict[str, Any]]:
        return [c for c in self.cards.values() if c.get("conversationId") == conversation]

    def waiting_approval(self, card: dict[str, Any]) -> dict[str, Any] | None:
        """The approval a card's call waits for, if any."""
        for item in self.questions.values():
            same = (item.get("turnId"), item.get("callId")) == (
                card.get("turnId"),
                card.get("callId"),
            )
            if item["kind"] == "approval" and same:
                return item
        return None

    async def answer_approval(
        self, item: dict[str, Any], decision: str, scope: str = "once", reason: str = ""
    ) -> bool:
        """The one way an approval is answered, from the question screen or a tool card."""
        params = {"decision": decision, "scope": scope, **({"reason": reason} if reason else {})}
        return await self.answer(item, params)

    async def answer_form(self, item: dict[str, Any], action: str, content: Any = None) -> bool:
        params = {"action": action, **({"content": content} if content is not None else {})}
        return await self.answer(item, params)

    async def answer(self, item: dict[str, Any], params: dict[str, Any]) -> bool:
        """Send an answer; True once the question is settled, False if it still waits.

        The first answer across frontends wins: the daemon's ``approval_not_found`` (or
        ``elicitation_not_found``) means another one answered first, or time ran out. That is
        no error here: the question is dropped as its ``resolved`` event would drop it.
        """
        kind = str(item["kind"])
        key = str(item[f"{kind}Id"])
        try:
            await self.link.call(f"{kind}s.respond", {f"{kind}Id": key, **params})
        except RpcError as exc:
            if exc.kind != f"{kind}_not_found":
                self.app.notify(f"answer refused: {describe(exc)}", severity="error")
                return False
            self.app.notify("already answered elsewhere (or expired)")
        except (Offline, ConnectionError, OSError) as exc:
            self.app.notify(describe(exc), severity="error")
            return False
        self.settle(key)
        self.changed()
        return True

    def note_deadline(self, key: str, question: dict[str, Any]) -> None:
        """The daemon gives up on a question at its ``expiresAt`` (a wall-clock time)."""
        try:
            expires = datetime.fromisoformat(str(question["expiresAt"]))
        except (KeyError, ValueError):
            return  # no countdown rather than a wrong one
        left = (expires - datetime.now(UTC)).total_seconds()
        self.deadlines[key] = time.monotonic() + left

    def time_left(self, key: str) -> float | None:
        """Seconds until the question is given up on, if known."""
        if key not in self.deadlines:
            return None
        return max(self.deadlines[key] - time.monotonic(), 0.0)

    def record_test(self, name: str, result: dict[str, Any]) -> None:
        """Keep a test's verdict: a success clears a failure, a failure replaces it."""
        self.tested_at[name] = time.strftime("%H:%M:%S")
        if result.get("ok"):
            self.tests[name] = result
            self.failures.pop(name, None)
        elif result:
            self.failures[name] = result
        self.stale.mark("servers")  # the daemon recorded the outcome: read its word again
        self.changed()

    def bar_text(self) -> str:
        version = f"meworkd {self.version} · " if self.version else ""
        waiting = len(self.questions)
        badge = f" · ⚑ {waiting} question{'s' * (waiting != 1)} (F4)" if waiting else ""
        running = self.tasks.open_count()
        badge += f" · ⏵ {running} task{'s' * (running != 1)} (F5)" if running else ""
        return f"{version}{self.connection}{badge}"

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """A call from a worker; a failure is shown and becomes None (a worker must not raise)."""
        try:
            return await self.link.call(method, params)
        except (Offline, ConnectionError, OSError) as exc:
            self.app.notify(describe(exc), severity="error")
        except Exception as exc:  # noqa: BLE001 - RpcError and kin: shown, never a crash
            if method not in self.link.missing:
                self.app.notify(f"{method}: {describe(exc)}", severity="error")
        return None


class HasModel(Protocol):
    model: Model
