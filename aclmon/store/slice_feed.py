"""A live Timeline's slices, folded behind the store.

The viewer folds every batch into the store (what every view and the header
show) and into an :class:`~aclmon.store.slice_index.IndexedTimeline` (what the
Timeline view draws), which costs about twice the store's fold per event. A
:class:`SliceFeed` keeps the batches the timeline has not folded yet, so the
viewer folds them all while the Timeline view is shown and, while it is hidden,
only for a share of each refresh: under a flood the store keeps up and the
timeline falls behind instead. Behind by more than ``backlog_limit`` events, it
lets the oldest waiting batches go unfolded (the timeline's ``skipped``
counts them: the Timeline view says so).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from aclmon import events as ev
from aclmon.store.slice_index import IndexedTimeline

#: events waiting for the timeline at most (about 4 s at 50,000 events/s)
BACKLOG_LIMIT = 200_000
#: events folded between two looks at the clock while a budget runs
CHUNK = 1024


class SliceFeed:
    """Feeds ``timeline`` the batches offered, now or later; see the module docstring."""

    def __init__(
        self,
        timeline: IndexedTimeline,
        *,
        backlog_limit: int = BACKLOG_LIMIT,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.timeline = timeline
        self._backlog: deque[list[ev.Event]] = deque()
        self._limit = backlog_limit
        self._clock = clock
        #: events offered and not folded yet
        self.pending = 0

    def offer(self, events: list[ev.Event]) -> None:
        """Keep ``events`` (a batch the store folded) for the timeline."""
        if not events:
            return
        self._backlog.append(events)
        self.pending += len(events)
        timeline = self.timeline
        while self.pending > self._limit and len(self._backlog) > 1:
            gone = self._backlog.popleft()
            self.pending -= len(gone)
            timeline.skipped += len(gone)

    def fold(self, budget_s: float | None = None) -> bool:
        """Fold the waiting batches, oldest first: all of them, or (``budget_s``)
        until that many seconds went (looked at every ``CHUNK`` events). True
        when nothing waits any more."""
        backlog, apply = self._backlog, self.timeline.apply_many
        deadline = None if budget_s is None else self._clock() + budget_s
        while backlog:
            batch = backlog[0]
            if deadline is not None and len(batch) > CHUNK:
                apply(batch[:CHUNK])
                backlog[0] = batch[CHUNK:]
                self.pending -= CHUNK
            else:
                apply(backlog.popleft())
                self.pending -= len(batch)
            if deadline is not None and self._clock() >= deadline:
                break
        return not backlog

    def settle(self, now_ns: int) -> None:
        """A quiet job's waiting operators go out by ``now_ns``; only once the
        timeline has caught up (an event still waiting may claim them)."""
        if not self._backlog and not self.timeline.finished:
            self.timeline.settle(now_ns)
