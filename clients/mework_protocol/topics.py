"""Event topics a frontend can subscribe to (``events.subscribe``), and the overflow notice."""

__all__ = ["APPROVAL_TOPICS", "EVENTS_OVERFLOWED", "TOPICS"]

APPROVAL_TOPICS = ("approval.requested", "approval.resolved")
TOPICS = frozenset(
    {
        *APPROVAL_TOPICS,
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
