"""The MCP tasks the UI knows, by call id: the open ones read at connect, then every task event.

A task is known by the id of the call its server answered with it (the server's task id never
leaves meworkd). Tasks that end while the UI watches stay listed, ended, so a person sees how
they ended; the oldest ended ones go first when there are too many.
"""

from typing import Any

from mework_protocol.wording import OPEN_TASK_STATES

__all__ = ["MAX_TASKS", "TaskBook", "is_open"]

MAX_TASKS = 200


def is_open(task: dict[str, Any]) -> bool:
    return task.get("status") in OPEN_TASK_STATES


class TaskBook:
    def __init__(self) -> None:
        self.tasks: dict[str, dict[str, Any]] = {}

    def load(self, listed: list[dict[str, Any]]) -> None:
        """After a (re)connect: the daemon's open tasks; those ended meanwhile are dropped."""
        self.tasks = {str(t["callId"]): t for t in listed if isinstance(t, dict) and "callId" in t}

    def note(self, task: dict[str, Any]) -> None:
        """A ``task.*`` event: the task as it is now (events of one task come in order)."""
        if "callId" not in task:
            return
        self.tasks[str(task["callId"])] = task
        ended = [key for key, t in self.tasks.items() if not is_open(t)]
        while len(self.tasks) > MAX_TASKS and ended:
            del self.tasks[ended.pop(0)]

    def newest_first(self, conversation: str | None = None) -> list[dict[str, Any]]:
        chosen = [
            t
            for t in self.tasks.values()
            if conversation is None or t.get("conversationId") == conversation
        ]
        return sorted(chosen, key=lambda t: str(t.get("createdAt") or ""), reverse=True)

    def open_count(self) -> int:
        return sum(is_open(t) for t in self.tasks.values())

    def of_call(self, call_id: object) -> dict[str, Any] | None:
        return self.tasks.get(str(call_id))
