"""What a server asks of its host mid-session, translated between the SDK and plain data.

A session's SDK callbacks (elicitation, sampling, roots, logging, notifications) land here and
go to a :class:`ServerAsksHost` the composition root supplies (core's broker), as plain dicts.
A callback never raises: whatever goes wrong becomes an ``ErrorData`` with no Python text in it
(a raising callback would put ``str(exc)`` on the wire). Which call a question belongs to is the
:data:`CURRENT_CALL` the caller set (seen by the callback over HTTP and 2026-07-28 rounds).
One session may have at most :data:`MAX_PENDING_QUESTIONS` questions waiting for a person; a
server that asks more at once gets an error reply for each one beyond, and asks no one.
"""

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

import mcp_types as types
from mcp.client import ClientRequestContext
from pydantic import ValidationError

from meworkd.base.log import get_logger
from meworkd.mcp.views import APP_MIME_TYPE, APPS_EXTENSION

__all__ = [
    "ASKED_BY_CURRENT_CALL",
    "CURRENT_CALL",
    "MAX_PENDING_QUESTIONS",
    "TASKS_EXTENSION",
    "AskOrigin",
    "ServerAsksHost",
    "SessionCallbacks",
]

log = get_logger("meworkd.asks")

# Elicitation and sampling requests of one session waiting at once: a person answers a few, and
# a server flooding more must not pile up questions (and their events) without bound.
MAX_PENDING_QUESTIONS = 8
# Set by whoever sends a tools/call to what identifies that call (core's in-flight slot).
CURRENT_CALL: ContextVar[object | None] = ContextVar("meworkd_current_call", default=None)
# True while a call hands its own questions to the host (an MCP task's input requests,
# meworkd.mcp.tasks): then CURRENT_CALL is surely the asker, whatever else is in flight.
ASKED_BY_CURRENT_CALL: ContextVar[bool] = ContextVar("meworkd_asked_by_call", default=False)
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"  # declared on every request (mcp.tasks)
LIST_CHANGES: dict[type, str] = {
    types.ToolListChangedNotification: "tools",
    types.PromptListChangedNotification: "prompts",
    types.ResourceListChangedNotification: "resources",
}


@dataclass(frozen=True, slots=True)
class AskOrigin:
    """Who asks: the server (its settings name), the conversation, the call if known
    (``certain``: surely that call, see :data:`ASKED_BY_CURRENT_CALL`)."""

    server: str
    conversation: str | None
    call: object | None
    certain: bool = False


class ServerAsksHost(Protocol):
    """The host side. ``elicit`` answers ``{action, content?}``; ``sample`` a
    ``CreateMessageResult`` as JSON; either may answer ``{"error": {code, message}}``."""

    async def elicit(self, origin: AskOrigin, request: dict[str, Any]) -> dict[str, Any]: ...
    async def sample(self, origin: AskOrigin, request: dict[str, Any]) -> dict[str, Any]: ...
    def roots(self, conversation: str | None) -> list[dict[str, str]]: ...
    def log(self, origin: AskOrigin, level: str, logger: str | None, data: Any) -> None: ...
    def notice(self, origin: AskOrigin, topic: str, data: dict[str, Any]) -> None: ...
    @property
    def sampling(self) -> bool: ...
    @property
    def apps(self) -> bool: ...


def _error(result: dict[str, Any]) -> types.ErrorData | None:
    error = result.get("error")
    if not isinstance(error, dict):
        return None
    return types.ErrorData(code=int(error.get("code", -1)), message=str(error.get("message", "")))


def _internal() -> types.ErrorData:
    return types.ErrorData(code=types.INTERNAL_ERROR, message="internal error")


class SessionCallbacks:
    """The SDK callbacks of one session (``server`` for ``conversation``)."""

    def __init__(self, host: ServerAsksHost, server: str, conversation: str | None) -> None:
        self._host = host
        self._server = server
        self._conversation = conversation
        self._pending = 0  # elicitation and sampling requests waiting for the host's answer
        self._refusing = False  # over the cap since the last warning (one warning per burst)

    def origin(self) -> AskOrigin:
        return AskOrigin(
            self._server, self._conversation, CURRENT_CALL.get(), ASKED_BY_CURRENT_CALL.get()
        )

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments for ``ClientSession``: capabilities follow the callbacks given."""
        options: dict[str, Any] = {
            "elicitation_callback": self.elicitation,
            "list_roots_callback": self.list_roots,
            "logging_callback": self.logging,
        }
        if self._host.sampling:
            options["sampling_callback"] = self.sampling
        # Tasks on every request: a 2026-07-28 server may answer any tools/call with one.
        extensions: dict[str, dict[str, Any]] = {TASKS_EXTENSION: {}}
        if self._host.apps:
            extensions[APPS_EXTENSION] = {"mimeTypes": [APP_MIME_TYPE]}
        options["extensions"] = extensions
        return options

    def _over_cap(self) -> types.ErrorData | None:
        """The refusal of a question beyond :data:`MAX_PENDING_QUESTIONS`, or None."""
        if self._pending < MAX_PENDING_QUESTIONS:
            self._refusing = False
            return None
        if not self._refusing:
            self._refusing = True
            log.warning(
                "asks.too_many_pending",
                server=self._server,
                conversation=self._conversation,
                limit=MAX_PENDING_QUESTIONS,
            )
        return types.ErrorData(
            code=types.INVALID_REQUEST,
            message=f"too many questions pending: meworkd holds at most {MAX_PENDING_QUESTIONS} "
            "of one session waiting for an answer; ask again once one is answered",
        )

    async def elicitation(
        self, _ctx: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        refused = self._over_cap()
        if refused is not None:
            return refused
        self._pending += 1
        try:
            request = params.model_dump(by_alias=True, mode="json", exclude_none=True)
            request.pop("_meta", None)
            result = await self._host.elicit(self.origin(), request)
            return _error(result) or types.ElicitResult.model_validate(result)
        except Exception:  # a callback is a boundary: no Python text on the wire
            log.exception("asks.elicitation_failed", server=self._server)
            return _internal()
        finally:
            self._pending -= 1

    async def sampling(
        self, _ctx: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        refused = self._over_cap()
        if refused is not None:
            return refused
        self._pending += 1
        try:
            request = params.model_dump(by_alias=True, mode="json", exclude_none=True)
            request.pop("_meta", None)
            result = await self._host.sample(self.origin(), request)
            return _error(result) or types.CreateMessageResult.model_validate(result)
        except ValidationError:
            # A frontend's result that is no CreateMessageResult: the server gets a refusal.
            log.warning("asks.sampling_invalid", server=self._server)
            return types.ErrorData(code=-1, message="the sampling result was not valid")
        except Exception:  # a callback is a boundary: no Python text on the wire
            log.exception("asks.sampling_failed", server=self._server)
            return _internal()
        finally:
            self._pending -= 1

    async def list_roots(
        self, _ctx: ClientRequestContext
    ) -> types.ListRootsResult | types.ErrorData:
        try:
            roots = [types.Root.model_validate(r) for r in self._host.roots(self._conversation)]
        except Exception:  # a callback is a boundary: no Python text on the wire
            log.exception("asks.roots_failed", server=self._server)
            return _internal()
        return types.ListRootsResult(roots=roots)

    async def logging(self, params: types.LoggingMessageNotificationParams) -> None:
        self._host.log(self.origin(), params.level, params.logger, params.data)

    def notification(self, message: object) -> None:
        """``notifications/elicitation/complete`` and list changes, as host notices."""
        if isinstance(message, types.ElicitCompleteNotification):
            data = {"serverElicitationId": message.params.elicitation_id}
            self._host.notice(self.origin(), "elicitation.completed", data)
            return
        changed = LIST_CHANGES.get(type(message))
        if changed is not None:
            self.list_changed(changed)

    def list_changed(self, what: str) -> None:
        """The server's ``what`` list (tools, prompts, resources) changed."""
        self._host.notice(self.origin(), "server.changed", {"list": what})
