"""What servers ask of their host: elicitations and sampling to a person, roots, log lines.

Each question goes through a :class:`~meworkd.core.prompts.PromptBroker` of its own kind (so an
elicitation can never be answered as, or look like, a tool approval), bound to the conversation,
turn and call that caused it; while it waits, that call's own timeout is stopped. Nobody
watching means no question: an elicitation is cancelled, a sampling request refused, at once.
A form answer is checked against the requested schema, with its defaults filled in, before it
goes back to the server. Every outcome is put on the audit record (who decided, never what a
form held).
"""

import json
import time
from collections.abc import Callable
from typing import Any

from mework_protocol.audit import ELICITATION_METHOD, SAMPLING_METHOD

from meworkd.base.errors import InvalidParams, NotFound
from meworkd.base.events import EventBus
from meworkd.core.audit import question_entry
from meworkd.core.formschema import complete_answer, schema_problem
from meworkd.core.inflight import InFlight, Running
from meworkd.core.listings import ListFollower
from meworkd.core.prompts import PromptBroker, PromptKind, Subject, Unanswered
from meworkd.core.replies import Redact, arguments_digest
from meworkd.core.serverlogs import ServerLogs
from meworkd.core.state import StateDB
from meworkd.mcp import AskOrigin
from meworkd.settings.store import SettingsStore

__all__ = ["ElicitationNotFound", "SamplingRequestNotFound", "ServerAsks"]

INVALID_PARAMS = -32602
SAMPLING_REFUSED = -1  # the spec's code for a sampling request the host refuses
MAX_MESSAGE = 4000  # characters of a server's message shown to a person


class ElicitationNotFound(NotFound):
    kind = "elicitation_not_found"

    def __init__(self, elicitation_id: str) -> None:
        super().__init__(
            f"no pending elicitation {elicitation_id!r} (already answered, expired or unknown)",
            elicitationId=elicitation_id,
        )


class SamplingRequestNotFound(NotFound):
    kind = "sampling_request_not_found"

    def __init__(self, request_id: str) -> None:
        super().__init__(
            f"no pending sampling request {request_id!r} (already answered, expired or unknown)",
            requestId=request_id,
        )


def _elicitation_resolution(answer: dict[str, Any]) -> dict[str, Any]:
    # The form's content stays between the person and the server: not in events.
    return {"action": answer.get("action"), "reason": answer.get("reason")}


def _sampling_resolution(answer: dict[str, Any]) -> dict[str, Any]:
    error = answer.get("error")
    if isinstance(error, dict):
        return {"outcome": "refused", "reason": error.get("message")}
    return {"outcome": "answered", "reason": None}


ELICITATIONS: PromptKind[dict[str, Any]] = PromptKind(
    id_key="elicitationId",
    requested="elicitation.requested",
    resolved="elicitation.resolved",
    resolution=_elicitation_resolution,
    not_found=ElicitationNotFound,
)
SAMPLING: PromptKind[dict[str, Any]] = PromptKind(
    id_key="requestId",
    requested="sampling.requested",
    resolved="sampling.resolved",
    resolution=_sampling_resolution,
    not_found=SamplingRequestNotFound,
)
_WHY = {
    Unanswered.TIMEOUT: "nobody answered in time",
    Unanswered.CANCELLED: "the call was cancelled",
    Unanswered.STOPPED: "meworkd is shutting down",
}
# Who ended a question, for the audit (``by`` of an answer; a frontend's answer has none: user).
_BY = {
    Unanswered.TIMEOUT: "timeout",
    Unanswered.CANCELLED: "cancelled",
    Unanswered.STOPPED: "shutdown",
}
NOBODY_WATCHING = "no frontend was watching"
# A question whose asking was itself cancelled (its session closed): on record all the same.
SESSION_ENDED = {"reason": "the session ended while it waited", "by": "cancelled"}
Found = tuple[Running | None, list[Running]]  # the call that asks, or the calls that may


def _refusal(message: str, by: str = "user") -> dict[str, Any]:
    return {"error": {"code": SAMPLING_REFUSED, "message": message}, "by": by}


def _unanswered_elicitation(why: Unanswered) -> dict[str, Any]:
    return {"action": "cancel", "reason": _WHY[why], "by": _BY[why]}


class ServerAsks:
    """The host side of every session (:class:`meworkd.mcp.ServerAsksHost`)."""

    def __init__(
        self,
        bus: EventBus,
        store: SettingsStore,
        logs: ServerLogs,
        state: StateDB,
        lists: ListFollower,
        redact: Redact = lambda value: value,
    ) -> None:
        self._bus = bus
        self._store = store
        self._logs = logs
        self._state = state  # the conversations' roots; each question's outcome on record
        self._stopping = False
        self._lists = lists  # follows a server's list_changed
        self._redact = redact  # what waits is listed redacted, like the events that announced it
        self.inflight = InFlight()
        self._elicitations = PromptBroker(bus, ELICITATIONS)
        self._sampling = PromptBroker(bus, SAMPLING)

    @property
    def sampling(self) -> bool:
        return self._store.settings.mcp.sampling

    @property
    def apps(self) -> bool:
        return self._store.settings.mcp.apps

    def _watched(self, topic: str, found: Found) -> bool:
        """Whether a frontend can answer a question of ``topic`` now, or the call asking may
        wait for one (an MCP task followed again after a restart: nobody called it in this
        run, and its question keeps on the server)."""
        slot = found[0]
        return self._bus.watching(topic) > 0 or (slot is not None and slot.patient)

    async def _ask(
        self,
        broker: PromptBroker[dict[str, Any]],
        origin: AskOrigin,
        found: Found,
        details: dict[str, Any],
        unanswered: Callable[[Unanswered], dict[str, Any]],
    ) -> dict[str, Any]:
        slot, maybe = found
        subject = _subject(origin, slot, maybe)
        where: dict[str, Any] = {"origin": "tool_call" if slot else "background"}
        if slot is None and maybe:
            # Several calls in flight on the session (stdio cannot tell which one asks).
            where["inFlight"] = [s.call.call_id for s in maybe]
        details = {"server": origin.server, **where, **details}
        # Whichever call it is, its own timeout must not run out while the person answers.
        for candidate in maybe:
            candidate.clock.hold()
        try:
            return await broker.ask(
                subject,
                details,
                within=self._store.settings.mcp.question_timeout_seconds,
                unanswered=unanswered,
            )
        finally:
            for candidate in maybe:
                candidate.clock.release()

    def _record(
        self,
        origin: AskOrigin,
        found: Found,
        method: str,
        request: dict[str, Any],
        answer: dict[str, Any],
        started: float,
    ) -> None:
        """Put a question's outcome on the audit record (never the answer's content)."""
        if not self._state.is_open:
            return  # a question is asked only while the daemon runs; this one outlived it
        subject = _subject(origin, *found)
        error = answer.get("error")
        if isinstance(error, dict):
            outcome, reason = "refused", error.get("message")
        else:
            outcome = str(answer.get("action", "answered"))
            reason = answer.get("reason")
        entry = question_entry(
            conversation_id=subject.conversation_id,
            turn_id=subject.turn_id,
            call_id=subject.call_id,
            server=origin.server,
            method=method,
            request_digest=arguments_digest(request),
            outcome=outcome,
            decided_by=str(answer.get("by", "user")),
            reason=reason if isinstance(reason, str) else None,
            duration_ms=round((time.monotonic() - started) * 1000, 1),
        )
        self._state.record(entry)

    # --- elicitation ---------------------------------------------------------------------

    async def elicit(self, origin: AskOrigin, request: dict[str, Any]) -> dict[str, Any]:
        started = time.monotonic()
        found = self.inflight.find(origin.conversation, origin.server, origin.call, origin.certain)
        answer = {"action": "cancel", **SESSION_ENDED}
        try:
            answer = await self._elicited(origin, found, request)
        finally:
            self._record(origin, found, ELICITATION_METHOD, request, answer, started)
        return {k: v for k, v in answer.items() if k in ("action", "content", "error")}

    async def _elicited(
        self, origin: AskOrigin, found: Found, request: dict[str, Any]
    ) -> dict[str, Any]:
        mode = request.get("mode", "form")
        details: dict[str, Any] = {
            "mode": mode,
            "message": str(request.get("message", ""))[:MAX_MESSAGE],
        }
        if mode == "url":
            details["url"] = request.get("url")
            details["serverElicitationId"] = request.get("elicitationId")
        else:
            problem = schema_problem(request.get("requestedSchema"))
            if problem is not None:
                return {"error": {"code": INVALID_PARAMS, "message": problem}, "by": "policy"}
            details["requestedSchema"] = request["requestedSchema"]
        if not self._watched(ELICITATIONS.requested, found):
            # Nobody chose: a "decline" would report a refusal the user never made.
            return {"action": "cancel", "reason": NOBODY_WATCHING, "by": "policy"}
        return await self._ask(self._elicitations, origin, found, details, _unanswered_elicitation)

    def respond_elicitation(
        self, elicitation_id: str, action: str, content: dict[str, Any] | None
    ) -> dict[str, Any]:
        question = self._elicitations.question(elicitation_id)
        if action != "accept":
            if content is not None:
                raise InvalidParams("content goes only with action accept")
            answer: dict[str, Any] = {"action": action, "reason": f"{action} by the user"}
        elif question["mode"] == "url":
            if content is not None:
                raise InvalidParams("a URL elicitation is accepted without content")
            answer = {"action": "accept", "reason": "the user consented"}
        else:
            filled = complete_answer(question["requestedSchema"], content)
            answer = {"action": "accept", "content": filled, "reason": "accepted by the user"}
        self._elicitations.answer(elicitation_id, answer)
        return {"elicitationId": elicitation_id, "action": action}

    def elicitations(self) -> list[dict[str, Any]]:
        return self._elicitations.open_questions()

    def pending_elicitations(self) -> dict[str, Any]:
        """elicitations.list: the forms and URLs waiting for a person (redacted)."""
        return {"elicitations": self._redact(self.elicitations())}

    # --- sampling ------------------------------------------------------------------------

    async def sample(self, origin: AskOrigin, request: dict[str, Any]) -> dict[str, Any]:
        started = time.monotonic()
        found = self.inflight.find(origin.conversation, origin.server, origin.call, origin.certain)
        answer = _refusal(SESSION_ENDED["reason"], SESSION_ENDED["by"])
        try:
            answer = await self._sampled(origin, found, request)
        finally:
            self._record(origin, found, SAMPLING_METHOD, request, answer, started)
        return {k: v for k, v in answer.items() if k != "by"}

    async def _sampled(
        self, origin: AskOrigin, found: Found, request: dict[str, Any]
    ) -> dict[str, Any]:
        if not self.sampling:
            return _refusal("sampling is turned off in meworkd (mcp.sampling)", "policy")
        if not self._watched(SAMPLING.requested, found):
            return _refusal("no frontend that can sample is connected to meworkd", "policy")
        timeout = self._store.settings.mcp.question_timeout_seconds

        def unanswered(why: Unanswered) -> dict[str, Any]:
            if why is Unanswered.TIMEOUT:
                text = f"no frontend answered the sampling request within {timeout:g} s"
                return _refusal(text, _BY[why])
            return _refusal(_WHY[why], _BY[why])

        return await self._ask(self._sampling, origin, found, {"request": request}, unanswered)

    def respond_sampling(
        self, request_id: str, result: dict[str, Any] | None, error: dict[str, Any] | None
    ) -> dict[str, Any]:
        self._sampling.question(request_id)
        if (result is None) == (error is None):
            raise InvalidParams("give exactly one of result and error")
        if result is not None:
            problem = _sampling_result_problem(result)
            if problem:
                raise InvalidParams(f"result: {problem}")
            self._sampling.answer(request_id, result)
            return {"requestId": request_id, "outcome": "answered"}
        assert error is not None
        message = error.get("message")
        text = message if isinstance(message, str) and message else "refused by the user"
        self._sampling.answer(request_id, _refusal(text))
        return {"requestId": request_id, "outcome": "refused"}

    def sampling_requests(self) -> list[dict[str, Any]]:
        return self._sampling.open_questions()

    def pending_sampling(self) -> dict[str, Any]:
        """sampling.list: the completions waiting for a frontend (redacted)."""
        return {"requests": self._redact(self.sampling_requests())}

    # --- roots, logs, notices, lifecycle -------------------------------------------------

    def roots(self, conversation: str | None) -> list[dict[str, str]]:
        return self._state.roots_of(conversation) if conversation else []

    def log(self, origin: AskOrigin, level: str, logger: str | None, data: Any) -> None:
        text = data if isinstance(data, str) else json.dumps(data, default=str)
        self._logs.message(origin.server, origin.conversation, level, logger, text)

    def notice(self, origin: AskOrigin, topic: str, data: dict[str, Any]) -> None:
        if topic == "server.changed":
            self._lists.changed(origin.server, origin.conversation, str(data.get("list")))
            return
        self._bus.publish(
            topic, {"server": origin.server, "conversationId": origin.conversation, **data}
        )

    def cancel(self, turn_id: str, call_id: str | None = None) -> None:
        """Cancel the open questions of ``turn_id`` (only the call ``call_id``'s, when given)."""
        self._elicitations.cancel(turn_id, _unanswered_elicitation(Unanswered.CANCELLED), call_id)
        self._sampling.cancel(turn_id, _refusal(_WHY[Unanswered.CANCELLED], "cancelled"), call_id)

    @property
    def stopping(self) -> bool:
        """meworkd is stopping: the answers given now are its own, not a person's."""
        return self._stopping

    def stop(self) -> None:
        self._stopping = True
        self._elicitations.stop(_unanswered_elicitation)
        self._sampling.stop(lambda why: _refusal(_WHY[why], _BY[why]))


def _subject(origin: AskOrigin, slot: Running | None, maybe: list[Running]) -> Subject:
    if slot is not None:
        return Subject(slot.call.conversation_id, slot.call.turn_id, slot.call.call_id)
    turns = {s.call.turn_id for s in maybe}
    # Several calls of one turn: the turn is known (ending it ends the question), the call not.
    return Subject(origin.conversation, turns.pop() if len(turns) == 1 else None, None)


def _sampling_result_problem(result: dict[str, Any]) -> str | None:
    if result.get("role") != "assistant":
        return 'role must be "assistant"'
    if not isinstance(result.get("model"), str):
        return "model must be the name of the model that answered"
    content = result.get("content")
    blocks = content if isinstance(content, list) else [content]
    if not blocks or not all(
        isinstance(b, dict) and isinstance(b.get("type"), str) for b in blocks
    ):
        return "content must be a content block (e.g. {type: text, text})"
    return None
