"""The timeline's vocabulary: lanes, slices, instants, counter samples, flows,
and the sink that takes them. One model makes them (:class:`aclmon.store.
slice_model.SliceModel`), two readers take them: the trace export writes them to a
file (:mod:`aclmon.store.trace`, :mod:`aclmon.store.op_summary`) and a timeline
view draws them from an index (:mod:`aclmon.store.slice_index`), so both show the
same slices for a window.

Lanes follow msprof's timeline (docs/timeline.md): per device an ``Ascend
Hardware`` process with one lane per stream (``Stream N``); on the host a
``CANN`` process with the calls made about each stream and the failed calls of
each thread, and an msproftx process with one lane per thread. Within a nested
lane slices nest perfectly (each pair is disjoint or one holds the other), as
Perfetto and Insight require; what could overlap goes to an async lane, where
anything may (drawn packed in rows; ``b``/``e`` pairs in a trace).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

# ---------------------------------------------------------------- kinds
#: what a slice or instant shows (the trace's ``cat``; counted by ``SliceModel.counts``)
OPERATOR = "operator"
EXECUTION = "execution"
SYNCHRONIZE = "synchronize"
TX_RANGE = "msproftx"
TX_MARK = "msproftx mark"
EXCEPTION = "exception"
OVERFLOW = "overflow"
FAILED_CALL = "failed call"
#: a warning or error line of the job's CANN log (or aclmon's own)
LOG = "log"
#: a slow call whose End never came (the job ended inside it): from its Begin to
#: the last event seen
UNFINISHED = "unfinished call"
#: the launch -> first operator link (msprof's flow category)
HOST_TO_DEVICE = "HostToDevice"

# ---------------------------------------------------------------- processes
#: msprof's process sort indexes (its layer numbers), kept as ``process_sort_index``
SORT_MSPROFTX = 6
SORT_CANN = 7
SORT_CPU_USAGE = 9
SORT_MEMORY_USAGE = 10
SORT_HARDWARE = 14
SORT_NPU_MEM = 17
#: msprof's device number of host processes (``pid & 31``)
HOST_SLOT = 31
#: the device of a host process
HOST = -1
#: the device of a stream whose handle no StreamCreated explained
UNKNOWN_DEVICE = -2

#: lanes, models and threads one source may have (past it they share one lane)
LANE_LIMIT = 4096
#: recent slices each nested lane remembers to prove that a new one nests
NESTING_MEMORY = 64
#: longest name or text argument kept (a hostile source may send megabytes)
TEXT_LIMIT = 1024

Args = dict[str, Any]


@dataclass(frozen=True, eq=False)
class Process:
    """One process of the trace: one component (msprof's process name) of one
    device or of the host, of one source (``group``: its place in a fleet)."""

    group: int
    name: str  # "Ascend Hardware", "CANN", ...
    device: int  # HOST, UNKNOWN_DEVICE or a device id
    label: str  # "NPU 0", "CPU", "NPU 0,rank 3" (msprof's process_labels)
    sort: int  # msprof's sort index
    pid: int
    rank: int = -1  # the source's rank in its job (-1: not known or a single source)


@dataclass(frozen=True, eq=False)
class Lane:
    """One track: a stream, a host thread, or the async companion of one.

    ``nested``: slices here nest perfectly (trace ``X`` slices on thread ``track``);
    otherwise they may overlap (trace ``b``/``e`` pairs, drawn packed in rows).
    Lanes compare by identity: the model makes each once.
    """

    process: Process
    track: int  # the trace's tid
    title: str  # "Stream 3", "Thread 2", "Stream 3 (overlapping)"
    order: int  # thread_sort_index
    nested: bool = True
    #: (device, stream id) of a device stream lane or of a host lane of calls about
    #: a stream; (device, -1) for device-wide calls; None for thread and other lanes
    stream: tuple[int, int] | None = None
    #: the host thread (its native id, ``threading.get_native_id()``) of a thread lane
    thread: int | None = None
    #: what proves a new slice nests here (None: an async lane)
    guard: NestingGuard | None = field(default=None, repr=False)


class Slice(NamedTuple):
    """Something with a start and an end on a lane. Items are never changed once
    handed over, and slices may share one ``args`` dict (operators of one type in
    one execution): a reader must not change it."""

    lane: Lane
    start_ns: int
    end_ns: int
    name: str
    kind: str
    args: Args
    event: Any  # the event it comes from (the End of a call)


class Instant(NamedTuple):
    lane: Lane
    ts_ns: int
    name: str
    kind: str
    args: Args
    event: Any


class CounterSample(NamedTuple):
    process: Process
    ts_ns: int
    name: str
    values: dict[str, float]


class Flow(NamedTuple):
    """From a point inside the ``source`` slice to the start of the ``target`` one."""

    flow_id: int
    source: Lane
    source_ns: int
    target: Lane
    target_ns: int


class TimelineSink(Protocol):
    """Where a :class:`SliceModel` puts the items it completes (an export writer, a
    view's index, a filter in front of either)."""

    def slice(self, item: Slice) -> None: ...

    def instant(self, item: Instant) -> None: ...

    def counter(self, item: CounterSample) -> None: ...

    def flow(self, item: Flow) -> None: ...


class WindowFilter:
    """Passes on what overlaps ``[start_ns, end_ns]`` (None: open on that side):
    slices that overlap it (whole, not cut), instants and samples inside it,
    flows whose two ends are inside it."""

    def __init__(self, sink: TimelineSink, start_ns: int | None, end_ns: int | None) -> None:
        self.sink = sink
        self.start_ns = start_ns if start_ns is not None else -(1 << 63)
        self.end_ns = end_ns if end_ns is not None else 1 << 63

    def _inside(self, ts: int) -> bool:
        return self.start_ns <= ts <= self.end_ns

    def slice(self, item: Slice) -> None:
        if item.end_ns >= self.start_ns and item.start_ns <= self.end_ns:
            self.sink.slice(item)

    def instant(self, item: Instant) -> None:
        if self._inside(item.ts_ns):
            self.sink.instant(item)

    def counter(self, item: CounterSample) -> None:
        if self._inside(item.ts_ns):
            self.sink.counter(item)

    def flow(self, item: Flow) -> None:
        if self._inside(item.source_ns) and self._inside(item.target_ns):
            self.sink.flow(item)


# ---------------------------------------------------------------- nesting
class NestingGuard:
    """Proves that a new slice nests with the ones already on a lane.

    Remembers the newest slices (by start; between ``memory`` and twice as many)
    and, below them, a horizon: the latest end of any slice it let go. A slice
    starting before the horizon cannot be proven to nest and is refused, so the
    answer is always safe; slices come in about time order, so in practice only
    real overlaps are refused."""

    __slots__ = ("_ends", "_max_end", "_memory", "_starts", "horizon")

    def __init__(self, memory: int = NESTING_MEMORY) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._max_end = -(1 << 63)
        self._memory = memory
        self.horizon = -(1 << 63)

    def admit(self, start: int, end: int) -> bool:
        """True (and remembered) if ``[start, end]`` nests with every slice here."""
        starts = self._starts
        if start >= self._max_end:  # after everything: the common case
            starts.append(start)
            self._ends.append(end)
            self._max_end = end
            if len(starts) > 2 * self._memory:
                self._trim()
            return True
        if start < self.horizon:
            return False
        ends = self._ends
        for other_start, other_end in zip(starts, ends, strict=True):
            if start < other_end and other_start < end:  # they overlap: one must hold the other
                inside = other_start <= start and end <= other_end
                if not inside and not (start <= other_start and other_end <= end):
                    return False
        index = len(starts)
        while index and starts[index - 1] > start:
            index -= 1
        starts.insert(index, start)
        ends.insert(index, end)
        if end > self._max_end:
            self._max_end = end
        if len(starts) > 2 * self._memory:
            self._trim()
        return True

    def _trim(self) -> None:
        """Lets the oldest go, keeping ``memory``."""
        cut = len(self._starts) - self._memory
        self.horizon = max(self.horizon, *self._ends[:cut])
        del self._starts[:cut], self._ends[:cut]


# ---------------------------------------------------------------- values
def clip_text(value: object) -> str:
    """``value`` as text of at most :data:`TEXT_LIMIT` characters."""
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT] + "…"


def finite_number(value: object) -> float | None:
    """A finite int or float (not a bool), else None."""
    if type(value) is int:
        return value
    if type(value) is float and value - value == 0.0:  # not NaN, not infinite
        return value
    return None


@dataclass
class SourceLabel:
    """How a source's processes are labelled: ``rank`` (-1: a single source) and
    ``group``, its place in the trace (processes of group N sort together)."""

    group: int = 1
    rank: int = -1
    name: str = ""  # the job's process name (msprof names the msproftx process so)

    def label(self, base: str) -> str:
        return f"{base},rank {self.rank}" if self.rank >= 0 else base
