"""What a timeline view draws: the slice model's items kept per lane, in rows, and
found by time window without looking at the rest.

:class:`SliceIndex` is a :class:`~aclmon.store.slices.TimelineSink`: put it
behind a :class:`~aclmon.store.slice_model.SliceModel` and fold events into the
model; the index then answers, for the window a view shows:

- :meth:`SliceIndex.lanes` in display order and :meth:`SliceIndex.rows` per lane;
- :meth:`SliceIndex.window` (the slices of a row that overlap a time window) and
  :meth:`SliceIndex.cells` (for each of ``width`` columns, the slice drawn
  there): both bisect sorted arrays, so a frame costs O(width · log n) whatever
  the lane holds (a 100k-slice lane draws as fast as a small one);
- :meth:`SliceIndex.instants`, :meth:`SliceIndex.samples`, :meth:`SliceIndex.slice_at`
  (Enter on a slice), :meth:`SliceIndex.find` (a jump from an event, such as an
  exception, to its moment and lane), :meth:`SliceIndex.span`.

A row of a nested lane is a nesting depth: the slices of one row never overlap,
a slice's parent is in the row above. Slices may come out of order (an operator
after a later execution; an msproftx range after the ranges inside it): a slice
that holds slices already here pushes them, and what they hold, one row down. A
row of an async lane is a packing: each slice goes to the first row where it
overlaps nothing. Each lane keeps at most ``lane_limit`` slices, the oldest go
first (``dropped`` counts them), so a live view's memory stays bounded.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aclmon.store.slice_model import SliceModel
from aclmon.store.slices import CounterSample, Flow, Instant, Lane, Process, Slice

#: slices kept per lane by default (each costs ~100 bytes here beside the item)
LANE_LIMIT = 250_000
#: instants and counter samples kept per lane or counter
POINT_LIMIT = 100_000
#: rows an async lane packs its slices into; past it they share the last one
ASYNC_ROWS = 32
#: a window's length times its width at which :meth:`SliceIndex.cells` leaves
#: numpy's int64 for Python integers
_SCALED_LIMIT = 1 << 62


@dataclass
class _Row:
    """Disjoint slices in start order (so their ends are in order too)."""

    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    items: list[Slice] = field(default_factory=list)

    def insert(self, item: Slice) -> None:
        index = bisect.bisect_right(self.starts, item.start_ns)
        self.starts.insert(index, item.start_ns)
        self.ends.insert(index, item.end_ns)
        self.items.insert(index, item)

    def inside(self, start: int, end: int) -> tuple[int, int]:
        """The index range of the slices that lie within ``[start, end]``."""
        low = bisect.bisect_left(self.starts, start)
        high = low
        while high < len(self.starts) and self.ends[high] <= end and self.starts[high] <= end:
            high += 1
        return low, high

    def take(self, low: int, high: int) -> list[Slice]:
        items = self.items[low:high]
        del self.starts[low:high], self.ends[low:high], self.items[low:high]
        return items

    def fits(self, start: int, end: int) -> bool:
        """Nothing here overlaps ``[start, end]`` (touching is fine)."""
        index = bisect.bisect_right(self.starts, start)
        if index and self.ends[index - 1] > start:
            return False
        return not (index < len(self.starts) and self.starts[index] < end)

    def drop_before(self, cutoff: int) -> int:
        """Lets go of the slices that ended before ``cutoff``; how many."""
        count = bisect.bisect_left(self.ends, cutoff)
        if count:
            del self.starts[:count], self.ends[:count], self.items[:count]
        return count


def _parent(above: _Row, start: int) -> int:
    """The index, in the row above, of the parent of a slice starting at ``start``:
    the last one that starts at or before it (the rule :meth:`SliceIndex.slice_at`
    and the descent of a new slice follow too)."""
    return bisect.bisect_right(above.starts, start) - 1


@dataclass
class _Points:
    """Instants or counter samples of one lane or counter, in time order."""

    times: list[int] = field(default_factory=list)
    items: list[Any] = field(default_factory=list)

    def add(self, ts: int, item: Any) -> None:
        if not self.times or ts >= self.times[-1]:
            self.times.append(ts)
            self.items.append(item)
        else:
            index = bisect.bisect_right(self.times, ts)
            self.times.insert(index, ts)
            self.items.insert(index, item)
        if len(self.times) > POINT_LIMIT:
            cut = POINT_LIMIT // 10
            del self.times[:cut], self.items[:cut]

    def between(self, t0: int, t1: int) -> list[Any]:
        return self.items[bisect.bisect_left(self.times, t0) : bisect.bisect_right(self.times, t1)]


class SliceIndex:
    """See the module docstring."""

    def __init__(self, lane_limit: int = LANE_LIMIT) -> None:
        self.lane_limit = lane_limit
        self._rows: dict[Lane, list[_Row]] = {}
        self._counts: dict[Lane, int] = {}
        self._instants: dict[Lane, _Points] = {}
        self._samples: dict[tuple[Process, str], _Points] = {}
        self._order: list[Lane] | None = None
        self.flows: list[Flow] = []
        #: slices let go to stay within ``lane_limit``, per lane
        self.dropped: dict[Lane, int] = {}
        #: bumped whenever anything is added (a view redraws when it moved)
        self.version = 0
        self.first_ns: int | None = None
        self.last_ns: int | None = None

    # ------------------------------------------------------------ sink
    def slice(self, item: Slice) -> None:
        lane = item.lane
        rows = self._rows.get(lane)
        if rows is None:
            rows = self._rows[lane] = [_Row()]
            self._counts[lane] = 0
            self._order = None
        if lane.nested:
            self._nest(rows, item)
        else:
            self._pack(rows, item)
        count = self._counts[lane] + 1
        if count > self.lane_limit:
            count -= self._trim(lane, rows)
        self._counts[lane] = count
        self._seen(item.start_ns, item.end_ns)

    def instant(self, item: Instant) -> None:
        points = self._instants.get(item.lane)
        if points is None:
            points = self._instants[item.lane] = _Points()
            self._order = None
        points.add(item.ts_ns, item)
        self._seen(item.ts_ns, item.ts_ns)

    def counter(self, item: CounterSample) -> None:
        key = (item.process, item.name)
        points = self._samples.get(key)
        if points is None:
            points = self._samples[key] = _Points()
        points.add(item.ts_ns, item)
        self._seen(item.ts_ns, item.ts_ns)

    def flow(self, item: Flow) -> None:
        self.flows.append(item)
        if len(self.flows) > POINT_LIMIT:
            del self.flows[: POINT_LIMIT // 10]
        self.version += 1

    def _seen(self, start: int, end: int) -> None:
        if self.first_ns is None or start < self.first_ns:
            self.first_ns = start
        if self.last_ns is None or end > self.last_ns:
            self.last_ns = end
        self.version += 1

    # ------------------------------------------------------------ rows
    @staticmethod
    def _nest(rows: list[_Row], item: Slice) -> None:
        start, end = item.start_ns, item.end_ns
        depth = 0
        while depth < len(rows):  # down through the slices that hold it
            row = rows[depth]
            index = bisect.bisect_right(row.starts, start) - 1
            if index < 0 or row.ends[index] < end:
                break
            depth += 1
        if depth == len(rows):
            rows.append(_Row())
        # What it holds goes one row down, and what those hold with them: at each
        # level, the slices whose parent (the last slice above that starts at or
        # before them) moves. Found top-down, moved bottom-up.
        moving: list[tuple[int, int]] = []
        low, high = rows[depth].inside(start, end)
        level = depth
        while low < high:
            moving.append((low, high))
            if level + 1 == len(rows):
                break
            above, below = rows[level], rows[level + 1]
            first, last = low, high
            low, high = below.inside(above.starts[first], above.ends[last - 1])
            while low < high and not first <= _parent(above, below.starts[low]) < last:
                low += 1
            while high > low and not first <= _parent(above, below.starts[high - 1]) < last:
                high -= 1
            level += 1
        for offset in range(len(moving) - 1, -1, -1):
            level = depth + offset
            moved = rows[level].take(*moving[offset])
            if level + 1 == len(rows):
                rows.append(_Row())
            below = rows[level + 1]
            index = bisect.bisect_left(below.starts, moved[0].start_ns)
            below.starts[index:index] = [m.start_ns for m in moved]
            below.ends[index:index] = [m.end_ns for m in moved]
            below.items[index:index] = moved
        rows[depth].insert(item)

    @staticmethod
    def _pack(rows: list[_Row], item: Slice) -> None:
        for row in rows:
            if row.fits(item.start_ns, item.end_ns):
                row.insert(item)
                return
        if len(rows) < ASYNC_ROWS:
            rows.append(_Row())
        rows[-1].insert(item)

    def _trim(self, lane: Lane, rows: list[_Row]) -> int:
        """Lets go of the oldest tenth of the lane; how many slices went."""
        top = rows[0]
        cutoff = top.ends[min(len(top.ends) - 1, max(len(top.ends) // 10, 1))]
        gone = sum(row.drop_before(cutoff) for row in rows)
        while len(rows) > 1 and not rows[-1].starts:
            rows.pop()
        self.dropped[lane] = self.dropped.get(lane, 0) + gone
        return gone

    # ------------------------------------------------------------ queries
    def lanes(self) -> list[Lane]:
        """The lanes that hold anything, in display order."""
        if self._order is None:
            lanes = set(self._rows) | set(self._instants)
            self._order = sorted(
                lanes,
                key=lambda lane: (lane.process.group, lane.process.sort, lane.process.device,
                                  lane.order, lane.track),
            )  # fmt: skip
        return self._order

    def rows(self, lane: Lane) -> int:
        return len(self._rows.get(lane, ()))

    def count(self, lane: Lane) -> int:
        return self._counts.get(lane, 0)

    def span(self) -> tuple[int, int] | None:
        """The first and last moment anything shows."""
        if self.first_ns is None or self.last_ns is None:
            return None
        return self.first_ns, self.last_ns

    def window(self, lane: Lane, t0: int, t1: int, row: int = 0) -> list[Slice]:
        """The slices of one row that overlap ``[t0, t1]``, in time order."""
        rows = self._rows.get(lane)
        if rows is None or row >= len(rows):
            return []
        found = rows[row]
        low = bisect.bisect_left(found.ends, t0)
        high = bisect.bisect_right(found.starts, t1)
        return found.items[low:high] if low < high else []

    def cells(self, lane: Lane, row: int, t0: int, t1: int, width: int) -> list[Slice | None]:
        """For each of ``width`` columns splitting ``[t0, t1)``, the slice drawn
        there: the first one of the row that overlaps the column (None: empty).

        Column ``c`` is ``[t0 + c·(t1-t0)/width, t0 + (c+1)·(t1-t0)/width)``, compared
        exactly (times scaled by ``width``, in integers: no rounding, even on times
        since 1970). The columns are found together in numpy (a busy row of a
        following window is redrawn each second): the first slice ending past each
        column's left bound, kept where it starts before its right bound."""
        rows = self._rows.get(lane)
        out: list[Slice | None] = [None] * max(width, 0)
        if rows is None or row >= len(rows) or width <= 0 or t1 <= t0:
            return out
        found = rows[row]
        low = bisect.bisect_right(found.ends, t0)
        high = bisect.bisect_left(found.starts, t1)
        if low >= high:
            return out
        span = t1 - t0
        if span * width >= _SCALED_LIMIT:  # a window of years: too wide to scale in int64
            return self._cells_by_column(found, low, high, t0, span, width)
        # times from t0, scaled by width; the slices outside the window clipped to it
        ends = (np.array(found.ends[low:high], dtype=np.int64) - t0).clip(0, span) * width
        starts = (np.array(found.starts[low:high], dtype=np.int64) - t0).clip(-1, span) * width
        bounds = np.arange(width + 1, dtype=np.int64) * span
        first = np.searchsorted(ends, bounds[:-1], side="right")
        last = high - low - 1
        first = np.minimum(first, last)
        shown = (ends[first] > bounds[:-1]) & (starts[first] < bounds[1:])
        items = found.items[low:high]
        return [
            items[n] if ok else None for n, ok in zip(first.tolist(), shown.tolist(), strict=True)
        ]

    @staticmethod
    def _cells_by_column(
        found: _Row, low: int, high: int, t0: int, span: int, width: int
    ) -> list[Slice | None]:
        """:meth:`cells` one column at a time, in Python integers."""
        out: list[Slice | None] = [None] * width
        index = low
        for column in range(width):
            left = column * span  # the bounds from t0, times width
            while index < high and (found.ends[index] - t0) * width <= left:
                index += 1
            if index == high:
                break
            if (found.starts[index] - t0) * width < left + span:
                out[column] = found.items[index]
        return out

    def instant_cells(self, lane: Lane, t0: int, t1: int, width: int) -> list[Instant | None]:
        """For each of ``width`` columns splitting ``[t0, t1)``, the first instant of
        the lane there (None: none), in O(width · log n) as :meth:`cells`."""
        out: list[Instant | None] = [None] * max(width, 0)
        points = self._instants.get(lane)
        if points is None or width <= 0 or t1 <= t0:
            return out
        times, items = points.times, points.items
        step = (t1 - t0) / width
        index = bisect.bisect_left(times, t0)
        count = len(times)
        while index < count:
            ts = times[index]
            if ts >= t1:
                break
            column = int((ts - t0) / step)
            out[column] = items[index]
            # on to the first instant past this column
            index = bisect.bisect_left(times, t0 + (column + 1) * step, index + 1)
        return out

    def instants(self, lane: Lane, t0: int, t1: int) -> list[Instant]:
        points = self._instants.get(lane)
        return points.between(t0, t1) if points is not None else []

    def counters(self) -> list[tuple[Process, str]]:
        """Each counter there is samples of: (process, name)."""
        return list(self._samples)

    def samples(self, process: Process, name: str, t0: int, t1: int) -> list[CounterSample]:
        points = self._samples.get((process, name))
        return points.between(t0, t1) if points is not None else []

    def slice_at(self, lane: Lane, row: int, ts: int) -> Slice | None:
        """The slice of the row that holds ``ts`` (Enter on it)."""
        rows = self._rows.get(lane)
        if rows is None or row >= len(rows):
            return None
        found = rows[row]
        index = bisect.bisect_right(found.starts, ts) - 1
        if index >= 0 and found.ends[index] >= ts:
            return found.items[index]
        return None

    def find(self, event: Any) -> tuple[Lane, int] | None:
        """Where the item made from ``event`` (an exception, a call's End…) is:
        its lane and its time; None if the index does not hold it."""
        ts = event.ts_ns
        for lane, points in self._instants.items():
            for item in points.between(ts - 1, ts + 1) or ():
                if item.event is event or item.event == event:
                    return lane, item.ts_ns
        for lane, rows in self._rows.items():
            for row in rows:
                low = bisect.bisect_left(row.ends, ts)  # a slice ends at or after its event
                for item in row.items[low : low + 64]:
                    if item.event is event:
                        return lane, item.start_ns
        return None


class IndexedTimeline:
    """A :class:`~aclmon.store.slice_model.SliceModel` whose sink is a
    :class:`SliceIndex`: what a timeline view draws, fed live as events come
    (``apply_many``, and ``settle`` on a timer while the source is quiet) or
    built once from a whole recording (``build``, on a worker thread)."""

    def __init__(self, lane_limit: int = LANE_LIMIT) -> None:
        self.index = SliceIndex(lane_limit)
        self.model = SliceModel(self.index)
        #: the whole source has been folded (a recording): nothing waits any more
        self.finished = False
        #: events a live feed let go unfolded, being too far behind (:mod:`aclmon.store.slice_feed`)
        self.skipped = 0

    def apply_many(self, events: Iterable[Any]) -> None:
        self.model.apply_many(events)

    def settle(self, now_ns: int) -> None:
        self.model.settle(now_ns)

    def finish(self) -> None:
        self.model.finish()
        self.finished = True

    @classmethod
    def build(
        cls, events: Iterable[Any], should_stop: Callable[[], bool] = lambda: False
    ) -> IndexedTimeline | None:
        """Every event folded and finished; None when ``should_stop`` said so
        (asked every few thousand events)."""
        timeline = cls()
        for count, event in enumerate(events):
            if count % 4096 == 0 and should_stop():
                return None
            timeline.model.apply(event)
        timeline.finish()
        return timeline
