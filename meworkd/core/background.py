"""Calls that move to the background (``mcp.background_after_seconds``): a call still running
that long after it was allowed returns to the model at once, with a result saying it goes on,
and keeps running under the daemon; its outcome is audited and announced as any call's, and its
reply is kept for ``calls.result``.

Every call made while the setting is on runs in this owner's task group from the start, so
that it can outlive the request that made it; its caller waits for it until it moves. A moved
call no longer belongs to its turn (ending the turn does not cancel it): ``calls.cancel``, its
conversation's deletion or the daemon stopping end it. Its own timeout still applies.
"""

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import msgspec
from anyio.abc import TaskGroup, TaskStatus

from meworkd.base.errors import CallNotFound, ConversationNotFound, ShuttingDown
from meworkd.base.events import EventBus
from meworkd.base.log import get_logger
from meworkd.core.approvals.policy import DecidedBy
from meworkd.core.callrecord import CallRecord
from meworkd.core.replies import error_result
from meworkd.core.state import StateDB
from meworkd.core.toolcall import ToolCall
from meworkd.mcp import CallClock

__all__ = ["Background", "moved_result"]

log = get_logger("meworkd.background")


def moved_result(call: ToolCall, after: float) -> dict[str, Any]:
    """What the model is told of a call that moved to the background."""
    text = (
        f"The tool {call.tool} is still running after {after:g} seconds, so it goes on in the "
        f"background (call {call.call_id}). Its result will be given to you in a later turn: "
        "do not call it again for the same request."
    )
    return {"content": [{"type": "text", "text": text}], "isError": False}


class Background:
    """The task group background calls run in, the calls running there, and their results."""

    def __init__(self, db: StateDB, bus: EventBus) -> None:
        self._db = db
        self._bus = bus
        self._tg: TaskGroup | None = None
        self._moved: dict[str, tuple[ToolCall, CallClock | None]] = {}

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Own the calls until cancelled (the daemon stopping cuts the moved ones off)."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            try:
                await anyio.sleep_forever()
            finally:
                self._tg = None

    async def run(
        self,
        record: CallRecord,
        call: Callable[[], Awaitable[msgspec.Raw]],
        after: float,
        *,
        cancel: Callable[[], None],
        detach: Callable[[], CallClock | None],
    ) -> msgspec.Raw:
        """The call's reply, or, once it has run ``after`` seconds since it was allowed, the
        reply saying it moved. ``cancel`` stops it (its caller was cancelled before it moved);
        ``detach`` takes its clock out of its turn when it moves."""
        if self._tg is None:
            return await call()  # not serving (an embedded Turns): calls stay in the foreground
        outcome: list[msgspec.Raw] = []
        failure: list[Exception] = []
        woken, done = anyio.Event(), anyio.Event()
        record.on_allowed = woken.set

        async def body() -> None:
            try:
                outcome.append(await call())
            except Exception as exc:  # noqa: BLE001 (the caller raises it, or it is logged)
                failure.append(exc)
            finally:
                done.set()
                woken.set()
                if record.moved:
                    self._finished(record, outcome, failure)

        self._tg.start_soon(body)
        try:
            await woken.wait()
            if not done.is_set():
                with anyio.move_on_after(after):
                    await done.wait()
        except anyio.get_cancelled_exc_class():
            cancel()
            raise
        if done.is_set():
            if failure:
                raise failure[0]
            if not outcome:  # cut off from outside: only the daemon stopping does that
                raise ShuttingDown("meworkd is shutting down")
            return outcome[0]
        record.move()
        self._moved[record.call.call_id] = (record.call, detach())
        self._announce(record.call, after)
        return msgspec.Raw(msgspec.json.encode(moved_result(record.call, after)))

    def _announce(self, call: ToolCall, after: float) -> None:
        log.info("call.backgrounded", call=call.call_id, server=call.server, tool=call.tool)
        self._bus.publish(
            "call.backgrounded",
            {
                **call.wire(),
                "afterSeconds": after,
            },
        )

    def _finished(
        self, record: CallRecord, outcome: list[msgspec.Raw], failure: list[Exception]
    ) -> None:
        call = record.call
        self._moved.pop(call.call_id, None)
        # Cut off by the daemon stopping (or failed inside): its one outcome all the same.
        record.cut_off(DecidedBy.SHUTDOWN, "meworkd stopped during the call")
        if failure:
            log.error("call.background_failed", call=call.call_id, error=type(failure[0]).__name__)
            reply = msgspec.json.encode(error_result("The call failed inside meworkd."))
        elif outcome:
            reply = bytes(outcome[0])
        else:
            return  # cancelled from outside: nothing to keep
        try:
            self._db.get_conversation(call.conversation_id)
        except ConversationNotFound:
            return  # deleted, which ended the call: its results went with it
        self._db.keep_result(call.call_id, call.conversation_id, call.turn_id, reply)

    # --- for frontends -------------------------------------------------------------------

    def result(self, call_id: str) -> dict[str, Any]:
        """``{callId, status, ...}``: ``running``, or ``finished`` with the reply (``result``)."""
        if (moved := self._moved.get(call_id)) is not None:
            call = moved[0]
            return {
                "callId": call_id,
                "conversationId": call.conversation_id,
                "turnId": call.turn_id,
                "status": "running",
            }
        kept = self._db.kept_result(call_id)
        if kept is None:
            raise CallNotFound(call_id)
        conversation, turn, finished_at, reply = kept
        return {
            "callId": call_id,
            "conversationId": conversation,
            "turnId": turn,
            "status": "finished",
            "finishedAt": finished_at,
            "result": msgspec.Raw(reply),
        }

    def cancel(self, call_id: str) -> bool:
        """Cancel a call running in the background; whether there was one."""
        moved = self._moved.get(call_id)
        if moved is None:
            if self._db.kept_result(call_id) is None:
                raise CallNotFound(call_id)
            return False  # finished already
        if moved[1] is not None:
            moved[1].cancel()
        return True

    def end_conversation(self, conversation_id: str) -> None:
        for call, clock in list(self._moved.values()):
            if call.conversation_id == conversation_id and clock is not None:
                clock.cancel()

    @property
    def running(self) -> int:
        return len(self._moved)
