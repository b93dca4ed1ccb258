"""One tool call on record: its audit entry from request to outcome, and the events a
frontend's tool cards follow (``call.started``, ``call.finished``).

A call is put on record (the audit's ``requested`` entry, written at once) before anything is
asked or sent, and ``call.started`` is published then; its outcome completes the same entry and
``call.finished`` carries that entry exactly as ``audit.list`` shows it. An outcome is taken
once, so every started call gets exactly one finished event. Neither event holds the arguments
or the reply, only the arguments' digest.
"""

import time
from collections.abc import Callable

from meworkd.base import telemetry
from meworkd.base.clock import wire_time
from meworkd.base.events import EventBus
from meworkd.core.approvals.gate import Decision
from meworkd.core.approvals.policy import DecidedBy
from meworkd.core.audit import AuditEntry, audit_view
from meworkd.core.state import StateDB
from meworkd.core.toolcall import ToolCall

__all__ = ["CallRecord"]


class CallRecord:
    """A call from its ``requested`` record to its one outcome.

    ``allowed``: the decision that let it run, once there is one (a call cut off after it
    keeps who allowed it). ``traced``: the call's span, which gets the same outcome.
    """

    def __init__(
        self,
        db: StateDB,
        bus: EventBus,
        call: ToolCall,
        traced: telemetry.Traced = telemetry.OFF,
        *,
        reopened: tuple[int, str] | None = None,
    ) -> None:
        """Put the call on record now and announce it; or, ``reopened`` (its record's id and
        time), take up the record an earlier run left open (its call's MCP task is followed
        again): no new ``requested`` entry, no second ``call.started``.

        Raises:
            AuditUnavailable: the record could not be written: the call must not run.
        """
        self._db = db
        self._bus = bus
        self.call = call
        self._started = time.monotonic()
        if reopened is None:
            self.time = wire_time()
            self.id = db.record_request(*call[:7], origin=call.origin, at=self.time)
        else:
            self.id, self.time = reopened
        self.allowed: Decision | None = None
        self.on_allowed: Callable[[], None] | None = None  # told when it is allowed to run
        self.moved = False  # it went on in the background after its caller had its reply
        # Its MCP task runs on a Streamable HTTP server: meworkd stopping does not end the
        # call, the next run follows the task again (meworkd.core.tasks).
        self.outlives_daemon = reopened is not None
        self.finished = False
        self._traced = traced
        if traced.recording:  # off (the default), the call path builds nothing for it
            traced.rename(f"tools/call {call.tool or call.name}")
            traced.set("mcp.method.name", "tools/call")
            traced.set("gen_ai.tool.name", call.tool or call.name)
            traced.set("mework.server", call.server)
            traced.set("mework.conversation", call.conversation_id)
            traced.set("mework.turn", call.turn_id)
        if reopened is not None:
            return
        bus.publish(
            "call.started",
            {
                **call.wire(),
                "argumentsDigest": call.arguments_digest,
                "origin": call.origin,
                "time": self.time,
            },
        )

    def move(self) -> None:
        """It goes on in the background: its caller's reply is sent, and its span ends with
        that reply (its outcome is the audit's and ``call.finished``'s)."""
        self.moved = True
        self._traced.set("mework.background", True)
        self._traced = telemetry.OFF

    def allow(self, decision: Decision) -> None:
        """The call may run: ``decision`` let it."""
        self.allowed = decision
        if self.on_allowed is not None:
            self.on_allowed()

    def finish(
        self,
        decision: str,
        decided_by: DecidedBy,
        reason: str | None,
        reply_bytes: int | None = None,
        *,
        is_error: bool = True,
    ) -> None:
        """Record the outcome and announce it; a second outcome is ignored."""
        if self.finished:
            return
        self.finished = True
        entry = AuditEntry(
            *self.call[:7],  # ToolCall's first seven are AuditEntry's leading fields, in order
            decision=decision,
            decided_by=decided_by.value,
            reason=reason,
            duration_ms=round((time.monotonic() - self._started) * 1000, 2),
            reply_bytes=reply_bytes,
            is_error=is_error,
            request_id=self.id,
            origin=self.call.origin,
        )
        self._db.record(entry)
        self._bus.publish("call.finished", audit_view(self.id, self.time, entry))
        if self._traced.recording:
            self._traced.set("mework.decision", decision)
            self._traced.set("mework.decided_by", decided_by.value)
            if decision != "allow":
                self._traced.fail("denied")
            elif is_error:
                self._traced.fail("tool_error")

    def cut_off(self, by: DecidedBy, reason: str) -> None:
        """The outcome of a call stopped before it finished (cancelled, or the daemon stopping).

        Stopped before a decision it is a deny by ``by``; stopped while running it keeps who
        allowed it. meworkd stopping leaves a call that outlives it open.
        """
        if by is DecidedBy.SHUTDOWN and self.outlives_daemon:
            return
        if self.allowed is not None:
            self.finish("allow", self.allowed.decided_by, reason)
        else:
            self.finish("deny", by, reason)
