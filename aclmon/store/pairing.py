"""Begin/End pairing: which pending Begin an End takes back.

The agent announces ExecuteBegin and StreamSyncBegin only for calls still
running after :data:`~aclmon.events.SLOW_CALL_NS`, carrying the call's start
time as ``ts_ns`` (docs/agent.md, "Deferred Begins"), so a Begin may even
arrive after its call's End. These helpers keep the per-target lists of
pending Begin starts and recent End starts that the fold pairs them with.
"""

from __future__ import annotations

from typing import Any

from aclmon.events import SLOW_CALL_NS

# The agent defers ExecuteBegin and StreamSyncBegin: they come only for calls still
# running after 50 ms, carrying the call's start time as ts_ns, and may even arrive
# after the call's End. So runs, durations and failures are counted from the End
# events alone; a Begin only marks a call "in progress" until an End takes it back.
# An End takes back the pending Begin (same model and stream, same stream, or same
# device) whose start is closest to its own start (ts_ns - duration_ns), among the
# Begins that started before the End's call ended; an End that finds none changes
# nothing but the counts, so it never leaves anything running or busy. Known limit:
# with no thread in the End events, a short call ending while another thread's long
# call is pending on the same model/stream takes that Begin back (under-reporting
# "running" rather than leaving a stale "running" behind).
#: Begins remembered as in progress per model/stream/device (real ones: one per thread).
PENDING_LIMIT = 256
#: recent End start times remembered per target, to recognise a Begin announced
#: after its call already ended.
RECENT_ENDS = 8
#: how close a Begin's start and an End's start (ts - duration) must be to be the
#: same call: both come from one perf_counter reading with the agent's wall offset.
SAME_CALL_NS = 200_000


def distance(starts: list[int], start: int) -> int:
    return min(abs(s - start) for s in starts)


def note_begin(pending: list[int], recent_ends: list[int], start: int) -> bool:
    """Note a deferred Begin starting at ``start``; False if its call already ended."""
    if any(abs(end_start - start) <= SAME_CALL_NS for end_start in recent_ends):
        return False
    pending.append(start)
    del pending[:-PENDING_LIMIT]
    return True


def closest(starts: list[int], start: int, end: int) -> int | None:
    """Index of the pending Begin start closest to ``start``, among those that began
    before the End's call ended at ``end`` (a later Begin is another call); or None."""
    best = None
    for i, begin in enumerate(starts):
        if begin <= end + SAME_CALL_NS and (
            best is None or abs(begin - start) < abs(starts[best] - start)
        ):
            best = i
    return best


def take_back(pending: list[int], recent_ends: list[int], start: int, end: int) -> None:
    """An End whose call ran from ``start`` to ``end``: take back the closest pending Begin."""
    found = closest(pending, start, end)
    if found is not None:
        del pending[found]
    note_end(recent_ends, start, end - start)


def note_end(recent_ends: list[Any], start: Any, duration_ns: int) -> None:
    """Remember a slow call's End start (bounded), to recognise a Begin announced after it."""
    if duration_ns < SLOW_CALL_NS - SAME_CALL_NS:
        return  # too short to have been announced
    recent_ends.append(start)
    if len(recent_ends) > RECENT_ENDS:
        del recent_ends[0]
