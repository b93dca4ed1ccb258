"""meworkctl's ``requests watch``: everything meworkd asks a person, answered on a terminal.

Tool approvals (as ``approvals watch``), a server's forms (one prompt per field, built from the
requested schema, Enter keeps the default), URLs (printed, never opened) and sampling requests
(meworkctl runs no model: it can refuse one or leave it to a frontend that can).
:func:`answer_elicitation` is the piece ``meworkctl call`` uses to answer a form inline.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mework_protocol.forms import field_choices
from mework_protocol.topics import REQUEST_TOPICS

from mework_client import RpcError
from mework_client.ctl.approvals import ApprovalWatcher, Caller
from mework_client.ctl.command import EXIT_OK, Command, Ctx
from mework_client.ctl.layout import PLAIN, Style, dumps, items, obj

__all__ = ["COMMANDS", "ELSEWHERE", "RequestWatcher", "answer_elicitation", "read_field"]


Ask = Callable[[str], str | None]
Write = Callable[[str], None]
ELSEWHERE = "unanswered here"
ATTEMPTS = 3  # a form the daemon refuses is asked again, this many times in all
BOOLEANS = {"y": True, "yes": True, "true": True, "1": True}
BOOLEANS |= {"n": False, "no": False, "false": False, "0": False}
DONE = {"accept": "accepted", "decline": "declined", "cancel": "cancelled"}
ACTIONS = {"y": "accept", "yes": "accept", "d": "decline", "c": "cancel", "": "cancel"}


class _EndOfInput(Exception):
    pass


def read_field(name: str, field: dict[str, Any], ask: Ask) -> tuple[bool, Any]:
    """Ask for one field; ``(False, None)`` when left empty (the daemon fills the default)."""
    kind = field.get("type")
    choices = field_choices(field.get("items", {}) if kind == "array" else field)
    label = field.get("title") or name
    hints = [f"{kind}"] + ([f"one of {', '.join(map(str, choices))}"] if choices else [])
    if "default" in field:
        hints.append(f"default {json.dumps(field['default'])}")
    described = f" — {field['description']}" if field.get("description") else ""
    prompt = f"{label}{described} ({'; '.join(hints)}): "
    while True:
        text = ask(prompt)
        if text is None:
            raise _EndOfInput
        text = text.strip()
        if not text:
            return False, None
        if kind != "boolean":
            break
        if text.lower() in BOOLEANS:
            return True, BOOLEANS[text.lower()]
        prompt = "  y or n (empty: the default): "  # "Ada" must not become a silent false
    if kind == "array":
        return True, [part.strip() for part in text.split(",") if part.strip()]
    for convert in (int, float) if kind in ("integer", "number") else ():
        try:
            return True, convert(text)
        except ValueError:
            continue
    return True, text  # the daemon says what is wrong with it, if anything


def _form(schema: dict[str, Any], ask: Ask) -> dict[str, Any]:
    content: dict[str, Any] = {}
    for name, field in (schema.get("properties") or {}).items():
        given, value = read_field(name, obj(field), ask)
        if given:
            content[name] = value
    return content


def answer_elicitation(
    control: Caller, question: dict[str, Any], write: Write, ask: Ask, style: Style = PLAIN
) -> str | None:
    """Show one elicitation and answer it: the action sent, ``ELSEWHERE`` when another frontend
    answered first or a refused form was tried ``ATTEMPTS`` times, None when input ended. A
    form the daemon refuses is shown with why and asked again."""
    eid = question.get("elicitationId")
    write(style.bold(f"{question.get('server')} asks:") + style.dim(f"  (elicitation {eid})"))
    write(str(question.get("message", "")))
    if question.get("mode") == "url":
        write(f"URL: {question.get('url')}")
        write(style.dim("meworkctl does not open it; open it yourself if you trust it."))
    for _attempt in range(ATTEMPTS):
        choice = ask("Answer? [y = accept / d = decline / c = cancel] ")
        if choice is None:
            return None
        action = ACTIONS.get(choice.strip().lower(), "cancel")
        params: dict[str, Any] = {"elicitationId": eid, "action": action}
        try:
            if action == "accept" and question.get("mode") != "url":
                params["content"] = _form(obj(question.get("requestedSchema")), ask)
            control.call("elicitations.respond", params)
            return action
        except _EndOfInput:
            return None
        except RpcError as exc:
            if exc.kind != "invalid_params":
                write(style.dim(f"{eid}: already answered"))
                return ELSEWHERE
            write(style.red(exc.message))
    return ELSEWHERE


class RequestWatcher(ApprovalWatcher):
    """``requests watch``: approvals as ``approvals watch``, plus elicitations and sampling."""

    def __init__(
        self, control: Caller, write: Write, ask: Ask | None = None, style: Style = PLAIN
    ) -> None:
        if ask is None:
            super().__init__(control, write, style=style)
        else:
            super().__init__(control, write, ask, style)

    def on_event(self, topic: str, data: Any) -> bool:
        if topic == "elicitation.requested":
            return self.elicitation(obj(data))
        if topic == "sampling.requested":
            return self.sampling(obj(data))
        if topic in ("elicitation.resolved", "sampling.resolved", "elicitation.completed"):
            return True
        return super().on_event(topic, data)

    def elicitation(self, question: dict[str, Any]) -> bool:
        """Answer ``question`` unless seen already; ``False`` when input ended."""
        eid = str(question.get("elicitationId"))
        if eid in self.shown:
            return True
        self.shown.add(eid)
        action = answer_elicitation(self.control, question, self.write, self.ask, self.style)
        if action in DONE:
            self.write(f"{DONE[action]} {eid}")  # as an answered approval says "allowed ID"
        return action is not None

    def sampling(self, request: dict[str, Any]) -> bool:
        rid = request.get("requestId")
        self.write(
            self.style.bold(f"{request.get('server')} asks for a model completion")
            + self.style.dim(f"  ({rid})")
        )
        for message in items(request.get("request"), "messages"):
            self.write(f"  {message.get('role')}: {dumps(message.get('content'), None)}")
        choice = self.ask(
            "meworkctl runs no model. Refuse it? [y = refuse / N = leave it for another frontend] "
        )
        if choice is None:
            return False
        if choice.strip().lower() in ("y", "yes"):
            try:
                self.control.call(
                    "sampling.respond",
                    {"requestId": rid, "error": {"message": "refused by the user"}},
                )
                self.write(self.style.red(f"refused {rid}"))
            except RpcError:
                self.write(self.style.dim(f"{rid}: already answered"))
        return True


def _run_watch(_cmd: Command, ctx: Ctx) -> int:
    topics = list(REQUEST_TOPICS)
    with ctx.connect(stream=True) as stream, ctx.connect() as control:
        stream.call("events.subscribe", {"topics": topics})
        watcher = RequestWatcher(control, ctx.print, style=ctx.style)
        for approval in watcher.pending():
            if not watcher.request(approval):
                return EXIT_OK
        for question in items(control.call("elicitations.list"), "elicitations"):
            if not watcher.elicitation(question):
                return EXIT_OK
        ctx.note("Waiting for requests (Ctrl-C to stop)…")
        for topic, data in stream.events(topics):
            if not watcher.on_event(topic, data):
                return EXIT_OK
    return EXIT_OK


COMMANDS: tuple[Command, ...] = (
    Command(
        "requests watch",
        "answer approvals, servers' forms and URLs, and sampling requests as they arrive",
        "meworkctl requests watch",
        run=_run_watch,
        streams=True,
        details="Approvals as 'approvals watch'; a form is asked field by field (Enter keeps the "
        "default); a URL is printed, never opened; a sampling request can be refused. The first "
        "answer from any frontend wins. Stops at end of input or Ctrl-C.",
    ),
)
