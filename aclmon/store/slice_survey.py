"""One quick pass over a source before its export (``aclmon export``): the span,
the earliest moment any item starts, which becomes the trace's zero (Perfetto
refuses negative times, and an execution or an msproftx range may have started
before its event came), and when each execution of each model ran
(``--model``/``--iteration`` cut the span to those: an iteration runs from its
execution's call to the next one's, as msprof's step trace counts iterations). It reads the events only,
without the slice model: the survey costs a fraction of the export.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field

from aclmon import events as ev
from aclmon.store.slice_dumps import overflow_time
from aclmon.store.slices import LANE_LIMIT

#: AI Core metric columns remembered (a metric group has fewer)
METRIC_COLUMNS = 64

#: the kinds that make timeline items (slices, instants, samples), or end in one
ITEM_KINDS = frozenset(
    {
        ev.OpTiming,
        ev.ExecuteEnd,
        ev.StreamSynchronized,
        ev.StreamSyncBegin,
        ev.ExecuteBegin,
        ev.TxRange,
        ev.TxMark,
        ev.AclException,
        ev.DumpFileSeen,
        ev.DeviceSample,
        ev.HostSample,
        ev.CallFailed,
        ev.LogLine,
    }
)


@dataclass
class Survey:
    """See the module docstring; ``add`` each event of the source in order."""

    first_ns: int | None = None
    last_ns: int | None = None
    earliest_ns: int | None = None
    #: the source's rank in its job, from its Hello (-1: not said)
    rank: int = -1
    #: model id -> name, from the loads
    models: dict[int, str] = field(default_factory=dict)
    #: model id -> start, end, start, end… of each execution call, in order (the
    #: Nth starts at ``[2N-2]``); None: not kept (only ``--model``/``--iteration``
    #: need them, 16 bytes an execution)
    executions: dict[int, array[int]] | None = None
    #: model id -> when its latest operator ended
    op_ends: dict[int, int] = field(default_factory=dict)
    #: AI Core metric names the operator timings carry, in order of appearance
    metrics: dict[str, None] = field(default_factory=dict)

    def add(self, event: ev.Event) -> None:
        ts: int = event.ts_ns
        if self.first_ns is None:
            self.first_ns = self.last_ns = ts
        elif ts < self.first_ns:
            self.first_ns = ts
        elif ts > self.last_ns:  # type: ignore[operator]  # set with first_ns
            self.last_ns = ts
        start: int | None = None
        # the commonest kinds first
        if type(event) is ev.OpTiming:
            start = event.start_us * 1000
            end = event.end_us * 1000
            if end > self.op_ends.get(event.model_id, -1) and (
                event.model_id in self.op_ends or len(self.op_ends) < LANE_LIMIT
            ):
                self.op_ends[event.model_id] = end
            if event.metrics and len(self.metrics) < METRIC_COLUMNS:
                for key in event.metrics if isinstance(event.metrics, dict) else ():
                    if isinstance(key, str) and len(self.metrics) < METRIC_COLUMNS:
                        self.metrics.setdefault(key, None)
        elif type(event) is ev.ExecuteEnd:
            start = ts - event.duration_ns if event.duration_ns > 0 else ts
            if self.executions is not None:
                self._note_execution(event.model_id, start, ts)
        elif type(event) is ev.StreamSynchronized:
            start = ts - event.duration_ns if event.duration_ns > 0 else ts
        elif type(event) in ITEM_KINDS:
            start = item_start(event)
        elif type(event) is ev.Hello:
            if self.rank < 0 and event.rank >= 0:
                self.rank = event.rank
        elif type(event) is ev.ModelLoaded and len(self.models) < LANE_LIMIT:
            self.models[event.model_id] = event.name
        if start is not None and (self.earliest_ns is None or start < self.earliest_ns):
            self.earliest_ns = min(start, ts)

    def _note_execution(self, model_id: int, start: int, end: int) -> None:
        assert self.executions is not None
        runs = self.executions.get(model_id)
        if runs is None:
            if len(self.executions) >= LANE_LIMIT:
                return
            runs = self.executions[model_id] = array("q")
        runs.append(start)
        runs.append(end)

    def add_many(self, events: Iterable[ev.Event]) -> None:
        for event in events:
            self.add(event)

    def iterations(self, model_id: int, first: int = 1, last: int | None = None) -> tuple[int, int]:
        """The span of the model's ``first`` to ``last`` execution (counted from 1;
        None: its last): from the first one's call to the next execution's call,
        or for the latest one to the end of its call or of the model's last
        operator, whichever is later. Its executions must exist."""
        assert self.executions is not None
        runs = self.executions[model_id]
        count = len(runs) // 2
        last = count if last is None else min(last, count)
        if last == count:  # the latest: to its call's end or its operators' end
            return runs[2 * first - 2], max(runs[-1], self.op_ends.get(model_id, 0))
        return runs[2 * first - 2], runs[2 * last] - 1  # up to the next call, not including it

    def execution_count(self, model_id: int) -> int:
        return len(self.executions.get(model_id, ())) // 2 if self.executions else 0


def item_start(event: ev.Event) -> int | None:
    """When the item an event makes starts (None: it makes none), as the slice
    model places it."""
    if type(event) not in ITEM_KINDS:
        return None
    ts: int = event.ts_ns
    if isinstance(event, (ev.ExecuteEnd, ev.StreamSynchronized)):
        return ts - max(event.duration_ns, 0)
    if isinstance(event, ev.TxRange):
        return min(event.start_ns, ts)
    if isinstance(event, ev.OpTiming):
        return min(event.start_us * 1000, ts)
    if isinstance(event, ev.DumpFileSeen) and event.kind == "overflow":
        return min(overflow_time(event), ts)
    if isinstance(event, ev.LogLine) and event.logged_ns > 0:
        return min(event.logged_ns, ts)
    return ts
