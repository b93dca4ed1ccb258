"""Event topics a frontend can subscribe to (``events.subscribe``), and the overflow notice."""

__all__ = [
    "APPROVAL_TOPICS",
    "APP_TOPICS",
    "CALL_TOPICS",
    "ELICITATION_TOPICS",
    "EVENTS_OVERFLOWED",
    "REQUEST_TOPICS",
    "SAMPLING_TOPICS",
    "TASK_TOPICS",
    "TOPICS",
]

APPROVAL_TOPICS = ("approval.requested", "approval.resolved")
ELICITATION_TOPICS = ("elicitation.requested", "elicitation.resolved", "elicitation.completed")
SAMPLING_TOPICS = ("sampling.requested", "sampling.resolved")
# A tool call put on record, its move to the background, and its outcome (the audit entry):
# what a tool card follows.
CALL_TOPICS = ("call.started", "call.backgrounded", "call.finished")
# A call's MCP task: created by its server, its status or message changed, asking for input,
# ended (task.failed also for a task cancelled: its status says which).
TASK_TOPICS = (
    "task.started",
    "task.progress",
    "task.input_required",
    "task.completed",
    "task.failed",
)
# What a tool's MCP Apps view says for the chat (its frontend relays it): a message for the
# conversation, the model context it wants, a link it asks to open (meworkd opens none).
APP_TOPICS = ("app.message", "app.context", "app.openLink")
# Everything a person may be asked (what `meworkctl requests watch` listens to).
REQUEST_TOPICS = (*APPROVAL_TOPICS, *ELICITATION_TOPICS, *SAMPLING_TOPICS)
TOPICS = frozenset(
    {
        *REQUEST_TOPICS,
        *CALL_TOPICS,
        *TASK_TOPICS,
        *APP_TOPICS,
        "server.changed",
        "settings.reloaded",
        "settings.invalid",
        "server.auth",
        "server.log",
        "server.status",
        "turn.progress",
    }
)
# Sent instead of events a slow subscriber missed; not a topic one subscribes to.
EVENTS_OVERFLOWED = "events.overflowed"
