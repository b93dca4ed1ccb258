"""The one way a moment is written on the wire and in the state database: UTC, milliseconds, Z."""

import time
from datetime import UTC, datetime

__all__ = ["wire_time"]

# A timeout set absurdly long (the settings allow any positive number) must not make a moment
# unwritable: later ones are written as the last second of year 9999.
_LATEST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()

# Every tool call stamps its audit record: the date and time up to the second are formatted
# once per second, not per call (bench B1). (second, "YYYY-MM-DDTHH:MM:SS")
_second: tuple[int, str] = (-1, "")


def wire_time(timestamp: float | None = None) -> str:
    """``2026-11-29T21:00:01.000Z`` for ``timestamp`` (seconds since the epoch), or for now."""
    global _second
    moment = time.time() if timestamp is None else min(timestamp, _LATEST)
    if moment < 0:  # (before 1970: no cache, and modf's sign would need care)
        stamp = datetime.fromtimestamp(moment, UTC).isoformat(timespec="milliseconds")
        return stamp.replace("+00:00", "Z")
    whole = int(moment)
    # Rounded to microseconds first, as datetime.fromtimestamp does, then cut to milliseconds.
    micros = round((moment - whole) * 1e6)
    if micros >= 1_000_000:
        whole, micros = whole + 1, micros - 1_000_000
    if _second[0] != whole:
        _second = (whole, datetime.fromtimestamp(whole, UTC).isoformat(timespec="seconds")[:-6])
    return f"{_second[1]}.{micros // 1000:03d}Z"
