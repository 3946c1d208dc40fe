"""The times a user types to move a replay: ``start``, ``+10s``, ``90``, ``14:03:07``, ISO.

:func:`parse_seek_time` reads one against a recording's first and last event and
the cursor's time; :class:`SeekTimeError` says, in one line, what it could not read
and what it would. The replay's seek box and ``aclmon export --since/--until`` use it.
"""

from __future__ import annotations

import re

from aclmon.errors import AclmonError

_UNITS_NS = {"ms": 1_000_000, "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000}
_DURATION = re.compile(r"^(?P<number>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>ms|s|m|h)?$")
_CLOCK = re.compile(r"^(?P<h>\d{1,2}):(?P<m>\d{2})(?::(?P<s>\d{2}(?:\.\d{1,9})?))?$")


class SeekTimeError(AclmonError):
    """A time the user typed that we cannot read."""


def _duration_ns(text: str) -> int:
    match = _DURATION.match(text.strip())
    if match is None:
        raise SeekTimeError(f"not a duration: {text!r} (try 90, 1.5s, 2m, 250ms)")
    return round(float(match["number"]) * _UNITS_NS[match["unit"] or "s"])


def parse_seek_time(text: str, first_ns: int, last_ns: int, current_ns: int) -> int:
    """See :func:`_parse_seek_time`; the result is clamped to the int64 range of the index."""
    return max(0, min(_parse_seek_time(text, first_ns, last_ns, current_ns), (1 << 63) - 1))


def _parse_seek_time(text: str, first_ns: int, last_ns: int, current_ns: int) -> int:
    """The recording time a user means by ``text``.

    ``start`` / ``end``; ``+10s`` / ``-2m`` (from the current time); ``90`` or
    ``1.5m`` (from the start of the recording); ``14:03:07.250`` (UTC time of
    day, on the current day of the recording); ``2026-12-02T14:03:07Z`` (ISO,
    UTC unless it says otherwise). ``end`` is just past the last event, so the
    state there holds every event.
    """
    import datetime as dt

    value = text.strip().lower()
    if not value:
        raise SeekTimeError("no time given")
    if value in ("start", "begin", "first"):
        return first_ns
    if value in ("end", "last"):
        return last_ns + 1
    if value[0] in "+-":
        delta = _duration_ns(value[1:])
        return current_ns + delta if value[0] == "+" else current_ns - delta
    if _DURATION.match(value):
        return first_ns + _duration_ns(value)
    clock = _CLOCK.match(value)
    if clock is not None:
        hours, minutes = int(clock["h"]), int(clock["m"])
        seconds = float(clock["s"] or 0)
        if hours > 23 or minutes > 59 or seconds >= 60:
            raise SeekTimeError(f"not a time of day: {text!r}")
        day = dt.datetime.fromtimestamp(current_ns // 1_000_000_000, tz=dt.timezone.utc).date()
        midnight = dt.datetime.combine(day, dt.time(), tzinfo=dt.timezone.utc)
        return int(midnight.timestamp()) * 1_000_000_000 + round(
            (hours * 3600 + minutes * 60 + seconds) * 1e9
        )
    try:
        when = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.timezone.utc)
        whole = int(when.replace(microsecond=0).timestamp())
    except (ValueError, OverflowError, OSError):
        raise SeekTimeError(
            f"cannot read {text!r}: use start, end, +10s, -2m, 90 (s from start),"
            " 14:03:07 (UTC) or 2026-12-02T14:03:07Z"
        ) from None
    return whole * 1_000_000_000 + when.microsecond * 1000
