"""The one way a moment is written on the wire and in the state database: UTC, milliseconds, Z."""

from datetime import UTC, datetime

__all__ = ["wire_time"]


def wire_time(timestamp: float | None = None) -> str:
    """``2026-11-29T21:00:01.000Z`` for ``timestamp`` (seconds since the epoch), or for now."""
    moment = datetime.now(UTC) if timestamp is None else datetime.fromtimestamp(timestamp, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
