"""The one way a moment is written on the wire and in the state database: UTC, milliseconds, Z."""

from datetime import UTC, datetime

__all__ = ["wire_time"]

# A timeout set absurdly long (the settings allow any positive number) must not make a moment
# unwritable: later ones are written as the last second of year 9999.
_LATEST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()


def wire_time(timestamp: float | None = None) -> str:
    """``2026-11-29T21:00:01.000Z`` for ``timestamp`` (seconds since the epoch), or for now."""
    if timestamp is None:
        moment = datetime.now(UTC)
    else:
        moment = datetime.fromtimestamp(min(timestamp, _LATEST), UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
