"""The state model: everything the viewer shows, as plain records.

:class:`StoreState` is what :class:`aclmon.store.Store` folds events into. It
depends only on the events applied, in order (no clock, no randomness), so a
live session and a replay of its recording end in the same state, and replay
can seek by restoring a snapshot (:func:`clone`) and applying the events after it.

Every collection is bounded and says what it dropped: the exception ring keeps
the newest ``exception_limit`` records and counts the older ones it let go, op
aggregates stop tracking new operator names at ``op_limit`` (and count the
timings they could not attribute), dump files and logs are rings too, and
destroyed streams and contexts and unloaded models stay only in a
:class:`History` of the newest ``destroyed_limit`` of each.

Events are immutable tuples, so copies share them; :func:`clone` copies the
containers and the mutable per-object records, field by field, so a field
added to a record is copied without anyone listing it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, NamedTuple, TypeVar

from aclmon import events as ev
from aclmon.events.host import HostSnapshot

#: points kept per sparkline (one per DeviceSample of that device).
HISTORY_LEN = 120
#: points kept per chip of the host (one per HostNpuSample: 5 minutes at 1 s)
HOST_HISTORY_LEN = 300
EXCEPTION_LIMIT = 10_000
DUMP_LIMIT = 2_000
LOG_LIMIT = 1_000
#: text the log ring and the failed calls hold at most (besides their counts): a
#: job or a peer that sends 1 MB lines cannot grow a viewer by more
LOG_BYTES_LIMIT = 8 << 20
CALL_FAILURE_BYTES_LIMIT = 2 << 20
OP_LIMIT = 5_000
#: AI Core metric columns kept (a metric group has fewer; a hostile source may send more)
METRIC_LIMIT = 16
#: msproftx marks and ranges kept for display
TX_LIMIT = 64
REPLY_LIMIT = 64
#: destroyed streams, destroyed contexts and unloaded models kept (each).
DESTROYED_LIMIT = 256
#: failed executions remembered per model (a failure seen twice counts once)
FAILED_RUNS_KEPT = 64
#: threads whose current context we remember (bounded against a hostile stream).
THREAD_LIMIT = 4096

STREAM_IDLE = "idle"
STREAM_BUSY = "busy"
STREAM_SYNCHRONIZING = "synchronizing"
STREAM_DESTROYED = "destroyed"

#: field metadata: a ``dict`` whose values are records, each cloned on copy.
RECORDS = {"clone": "records"}
#: field metadata: a ``dict`` whose values are containers, each copied on copy.
NESTED = {"clone": "nested"}

_R = TypeVar("_R")


def clone(record: _R) -> _R:
    """A copy of ``record`` that later changes to either side do not reach.

    Field by field: nested records are cloned, containers (lists, dicts,
    sets, deques with their ``maxlen``) get their own copy, and their items
    are shared (events and numbers are immutable), except in fields marked
    :data:`RECORDS` (values cloned) or :data:`NESTED` (values copied).
    """
    new = object.__new__(type(record))
    state = dict(vars(record))
    for f in _plan(type(record)):
        value = state[f.name]
        how = f.metadata.get("clone")
        if how == "records":
            value = {k: clone(v) for k, v in value.items()}
        elif how == "nested":
            value = {k: v.copy() for k, v in value.items()}
        elif isinstance(value, (list, dict, set, deque)):
            value = value.copy()
        elif is_dataclass(value):
            value = clone(value)
        state[f.name] = value
    vars(new).update(state)
    return new


_PLANS: dict[type, tuple[Any, ...]] = {}


def _plan(cls: type) -> tuple[Any, ...]:
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = fields(cls)
    return plan


@dataclass
class History:
    """Keys of destroyed objects, oldest first: at most ``limit``, and
    ``forgotten`` counts the ones let go to stay within it."""

    limit: int = DESTROYED_LIMIT
    keys: dict[Any, None] = field(default_factory=dict)
    forgotten: int = 0

    def add(self, key: Any) -> Any | None:
        """Note ``key`` as destroyed; returns the key it pushes out, if any."""
        self.keys.pop(key, None)
        self.keys[key] = None
        if len(self.keys) <= self.limit:
            return None
        oldest = next(iter(self.keys))
        del self.keys[oldest]
        self.forgotten += 1
        return oldest

    def discard(self, key: Any) -> None:
        self.keys.pop(key, None)


@dataclass
class DeviceState:
    device_id: int
    sample: ev.DeviceSample | None = None
    set_ret: int | None = None  # ret of the last acl.rt.set_device (None = never seen)
    reset: bool = False
    cube_history: deque[int] = field(default_factory=lambda: deque(maxlen=HISTORY_LEN))
    vector_history: deque[int] = field(default_factory=lambda: deque(maxlen=HISTORY_LEN))
    aicpu_history: deque[int] = field(default_factory=lambda: deque(maxlen=HISTORY_LEN))
    hbm_history: deque[int] = field(default_factory=lambda: deque(maxlen=HISTORY_LEN))
    # synchronize_device calls (published with stream = DEVICE_SYNC): a device-level
    # figure, never attributed to any one stream.
    syncs: int = 0
    last_sync_ns: int | None = None
    last_sync_ret: int = 0
    sync_errors: int = 0
    synchronizing: bool = False  # a synchronize_device Begin is pending
    pending_syncs: list[int] = field(default_factory=list)  # Begin start times
    recent_sync_ends: list[int] = field(default_factory=list)  # End start times
    # What failed on the device, kept when its streams go (the job destroys a stream
    # that failed, as recovery code does, and must not look clean after):
    stream_errors: int = 0  # failed synchronizes and executes on its streams
    exceptions: int = 0  # AI Core exceptions reported on it
    failed_streams: int = 0  # streams that failed at least one call

    @property
    def errors(self) -> int:
        """Every failed call about this device: its streams' and synchronize_device's."""
        return self.stream_errors + self.sync_errors


def _host_history() -> deque[Any]:
    return deque(maxlen=HOST_HISTORY_LEN)


@dataclass
class ChipHistory:
    """One chip's readings over the last HostNpuSamples, oldest first (None: not known)."""

    aicore_pct: deque[int | None] = field(default_factory=_host_history)
    power_w: deque[float | None] = field(default_factory=_host_history)
    temp_c: deque[int | None] = field(default_factory=_host_history)
    #: HBM in use, or the DDR on chips without HBM (310P, 310B)
    memory_used_mb: deque[int | None] = field(default_factory=_host_history)


@dataclass
class HostNpus:
    """The host's NPUs and their processes, from HostNpuSample events (store/host.py)."""

    #: the machine the samples are of
    host: str = ""
    #: the newest reading that had chips in it (a failed refresh keeps it on screen)
    snapshot: HostSnapshot | None = None
    #: the newest reading, whatever its state (its state and message say how the
    #: back end is doing now)
    latest: HostSnapshot | None = None
    #: processes of the newest reading that run aclmon's agent
    agent_pids: frozenset[int] = frozenset()
    samples: int = 0
    #: samples whose snapshot did not pass the checks, and the last one's reason
    refused: int = 0
    refused_reason: str = ""
    #: (npu_id, chip_id) -> its history, for the chips of the newest reading
    chips: dict[tuple[int, int], ChipHistory] = field(default_factory=dict, metadata=RECORDS)


@dataclass
class StreamState:
    """One stream, keyed in :attr:`StoreState.streams` by ``(context, stream)``.

    The handle alone is not unique: every context's default stream has handle 0.
    """

    stream: int  # handle
    stream_id: int
    device_id: int
    context: int
    priority: int
    flags: int
    state: str = STREAM_IDLE
    busy_model: int | None = None  # model of the newest pending ExecuteBegin
    last_sync_ns: int | None = None
    last_sync_ret: int = 0
    syncs: int = 0
    errors: int = 0  # failed synchronizes and executes on this stream
    # AI Core exceptions reported on this stream, apart from ``errors``: the failed
    # synchronize an exception causes is one error, not two
    exceptions: int = 0
    last_error: int = 0  # ACL error code of the newest error
    last_error_message: str = ""  # what the runtime said about the newest failed call on it
    pending_syncs: list[int] = field(default_factory=list)  # StreamSyncBegin start times
    recent_sync_ends: list[int] = field(default_factory=list)  # End start times
    pending_executes: list[tuple[int, int]] = field(default_factory=list)  # (model, start)
    # (model_id, execution number) of the newest execute_async End on it (store/attribution)
    last_launch: tuple[int, int] | None = None
    # the same while no synchronize of the stream has succeeded since: a failing one
    # is that execution's failure
    unsynced_launch: tuple[int, int] | None = None

    @property
    def key(self) -> tuple[int, int]:
        return (self.context, self.stream)

    def refresh(self) -> None:
        """Derive ``state`` and ``busy_model`` from the pending Begins."""
        self.busy_model = self.pending_executes[-1][0] if self.pending_executes else None
        if self.state == STREAM_DESTROYED:
            return
        if self.pending_syncs:
            self.state = STREAM_SYNCHRONIZING
        elif self.pending_executes:
            self.state = STREAM_BUSY
        else:
            self.state = STREAM_IDLE


@dataclass
class ContextState:
    context: int
    device_id: int
    is_default: bool
    destroyed: bool = False
    # stream handles, in creation order (an ordered set); the StoreState.streams
    # key is (context, handle)
    streams: dict[int, None] = field(default_factory=dict)
    threads: set[int] = field(default_factory=set)  # threads that made it current


@dataclass
class ModelState:
    model_id: int
    device_id: int
    name: str
    op_count: int
    loaded: bool = True
    running: int = 0  # pending ExecuteBegins (calls seen running for 50 ms, not ended)
    executions: int = 0  # counted from ExecuteEnd alone
    # executions that failed, wherever the failure surfaced (store/attribution)
    failures: int = 0
    failed_runs: deque[int] = field(default_factory=lambda: deque(maxlen=FAILED_RUNS_KEPT))
    last_duration_ns: int | None = None
    pending: list[tuple[int, int]] = field(default_factory=list)  # (stream, start) of Begins
    recent_ends: list[tuple[int, int]] = field(default_factory=list)  # (stream, start) of Ends


#: key of one operator's timings: (device_id, model_id, op_name); device -1 = not known.
OpKey = tuple[int, int, str]


@dataclass
class OpStats:
    """The timings of one operator of one model on one device."""

    op_name: str
    op_type: str
    device_id: int = -1  # -1: not known (a recording older than schema 5)
    model_id: int = -1
    model_name: str = ""  # "" : the model's load was not seen
    count: int = 0
    total_us: int = 0
    max_us: int = 0
    min_us: int = 0
    last_us: int = 0
    # AI Core metric values (msprof op_summary column -> sum over metric_count timings)
    metric_sums: dict[str, float] = field(default_factory=dict)
    metric_count: int = 0

    @property
    def mean_us(self) -> float:
        return self.total_us / self.count if self.count else 0.0

    def metric(self, name: str) -> float | None:
        """The mean of one AI Core metric over the timings that carried it, or None."""
        total = self.metric_sums.get(name)
        return None if total is None or not self.metric_count else total / self.metric_count


@dataclass
class Counters:
    events: int = 0
    per_kind: dict[str, int] = field(default_factory=dict)
    gaps: int = 0  # events missing from the sequence (lost between agent and us)
    agent_drops: dict[str, int] = field(default_factory=dict)  # where -> total (from Drops)
    malformed: int = 0  # reported by the source's decoder
    unknown: int = 0

    @property
    def agent_dropped(self) -> int:
        return sum(self.agent_drops.values())


class CallFailure(NamedTuple):
    """A failed hooked call and the stream it was about (-1, -1: none or not known)."""

    event: ev.CallFailed
    device_id: int
    stream_id: int


#: how far from an exception a failed call may be and still be the one that reported it
EXCEPTION_CALL_WINDOW_NS = 5_000_000_000


def runtime_message(s: StoreState, exception: ev.AclException) -> str:
    """What the runtime said when the job's call that met ``exception`` failed
    (``acl.get_recent_err_msg`` on that thread), or "".

    Candidates are the failed calls with a message within EXCEPTION_CALL_WINDOW_NS
    of the exception that are about its stream, or come from its thread, or
    returned its error code. The best one is on the exception's stream with the
    exception's code (the synchronize or execute that reported it), then on its
    stream, then on its thread with its code, then any with its code; among
    equals a call that failed after the exception (the runtime reports an
    exception at the next synchronize) before one that failed before it, then
    the nearest in time.
    """
    best: tuple[int, int, int] | None = None
    message = ""
    stream = (exception.device_id, exception.stream_id)
    for failure in s.call_failures:
        e = failure.event
        gap = e.ts_ns - exception.ts_ns
        if abs(gap) > EXCEPTION_CALL_WINDOW_NS or not e.message:
            continue
        same_code = e.ret == exception.error_code
        if (failure.device_id, failure.stream_id) == stream:
            rank = 0 if same_code else 1
        elif e.thread_id == exception.thread_id and same_code:
            rank = 2
        elif same_code:
            rank = 3
        else:
            continue
        key = (rank, 0 if gap >= 0 else 1, abs(gap))
        if best is None or key < best:
            best, message = key, e.message
    return message


def exception_key(e: ev.AclException) -> tuple[int, int, int, int]:
    """What names one exception across sources and resends (its Triage carries it too)."""
    return (e.ts_ns, e.device_id, e.stream_id, e.task_id)


def triage_of(s: StoreState, exception: ev.AclException) -> dict[str, Any] | None:
    """The triage of ``exception`` (docs/triage.md), once the agent has sent it."""
    found = s.triages.get(exception_key(exception))
    return dict(found.triage) if found is not None else None


@dataclass
class StoreState:
    """The whole folded state. Copy it with :meth:`copy` (cheap: events are shared)."""

    exception_limit: int = EXCEPTION_LIMIT
    dump_limit: int = DUMP_LIMIT
    log_limit: int = LOG_LIMIT
    op_limit: int = OP_LIMIT
    hello: ev.Hello | None = None
    last_seq: int = 0
    # the newest History's through_seq: an event numbered up to it is counted in
    # that snapshot already, so it is not folded again (Store._apply)
    covered_seq: int = 0
    newest_ts_ns: int = 0
    host: ev.HostSample | None = None
    host_cpu_history: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY_LEN))
    # the machine's NPUs (the host source's HostNpuSample), not the job's process
    host_npus: HostNpus = field(default_factory=HostNpus)
    devices: dict[int, DeviceState] = field(default_factory=dict, metadata=RECORDS)
    contexts: dict[int, ContextState] = field(default_factory=dict, metadata=RECORDS)
    # (context, handle) -> stream, in creation order
    streams: dict[tuple[int, int], StreamState] = field(default_factory=dict, metadata=RECORDS)
    # Indexes of ``streams`` (so no event walks every stream): handle -> keys, and
    # (device_id, stream_id) -> keys, each in creation order.
    stream_handles: dict[int, dict[tuple[int, int], None]] = field(
        default_factory=dict, metadata=NESTED
    )
    stream_ids: dict[tuple[int, int], dict[tuple[int, int], None]] = field(
        default_factory=dict, metadata=NESTED
    )
    # Destroyed streams and contexts and unloaded models stay in ``streams``,
    # ``contexts`` and ``models`` only while they are in these bounded histories.
    stream_history: History = field(default_factory=History)
    context_history: History = field(default_factory=History)
    model_history: History = field(default_factory=History)
    # Current contexts, for resolving the events that carry only a stream handle.
    thread_contexts: dict[int, int] = field(default_factory=dict)  # thread_id -> context
    current_context: int | None = None  # the context most recently made current (any thread)
    device_syncs_unattributed: int = 0  # synchronize_device with no device we could tell
    # keys of streams with a Begin pending (may hold keys of streams since removed)
    pending_streams: set[tuple[int, int]] = field(default_factory=set)
    models: dict[int, ModelState] = field(default_factory=dict, metadata=RECORDS)
    exceptions: deque[ev.AclException] = field(default_factory=deque)
    exceptions_total: int = 0
    exceptions_dropped: int = 0
    # exceptions naming no model, until a synchronous execute's End does (store/attribution)
    awaiting_execution: list[ev.AclException] = field(default_factory=list)
    # why recent exceptions happened (the agent's Triage), by exception_key; at most
    # exception_limit, oldest first
    triages: dict[tuple[int, int, int, int], ev.Triage] = field(default_factory=dict)
    # the source's host clock against the NATS server's, as its relay measured it
    clock_offset: ev.ClockOffset | None = None
    history_since_ns: int | None = None  # the agent's history (totals) starts here
    goodbye: ev.Goodbye | None = None  # the job ended and said so
    profiling: ev.ProfilingState | None = None
    replies: dict[int, ev.Reply] = field(default_factory=dict)  # request_id -> reply
    last_reply: ev.Reply | None = None
    # sanitized op name -> its op type ("" when several were seen), learned from the
    # live timings, dump file names and the CANN log (aclmon.events.optypes): an
    # exception whose event names no type shows the one learned, before or after it
    op_types: dict[str, str] = field(default_factory=dict)
    ops: dict[OpKey, OpStats] = field(default_factory=dict, metadata=RECORDS)
    op_timings_total: int = 0
    op_timings_untracked: int = 0  # timings of ops beyond op_limit distinct operators
    # AI Core metric columns seen in the timings, in arrival order (at most METRIC_LIMIT)
    op_metrics: dict[str, None] = field(default_factory=dict)
    # Shared, not deep-copied: DumpFileSeen is immutable and its summary dict is
    # never mutated by the store or its readers, so a copy only needs its own ring.
    dumps: deque[ev.DumpFileSeen] = field(default_factory=deque)
    dumps_total: int = 0
    dumps_dropped: int = 0
    logs: deque[ev.LogLine] = field(default_factory=deque)
    logs_dropped: int = 0
    # characters of text in ``logs`` (at most LOG_BYTES_LIMIT; older lines go first)
    logs_bytes: int = 0
    # keys of the log lines taken lately (the newest 4 * log_limit), so a line that
    # comes twice is shown once: a CANN log file entry in a replay that folds the
    # files beside a recording whose agent also published it, or any line the
    # agent's history re-sends to a viewer that reconnects
    log_entries: dict[int, None] = field(default_factory=dict)
    # failed hooked calls (the newest log_limit), each with its stream's (device, stream id)
    call_failures: deque[CallFailure] = field(default_factory=deque)
    call_failures_total: int = 0
    # characters of message text in ``call_failures`` (at most CALL_FAILURE_BYTES_LIMIT)
    call_failures_bytes: int = 0
    tx_marks: int = 0
    tx_ranges: int = 0
    # the newest msproftx marks and ranges, oldest first (at most TX_LIMIT)
    tx_recent: deque[ev.TxMark | ev.TxRange] = field(default_factory=deque)
    counters: Counters = field(default_factory=Counters)

    def copy(self) -> StoreState:
        return clone(self)

    def limits(self) -> dict[str, int]:
        """The bounds this state was made with (to start a fresh one alike)."""
        return {
            "exception_limit": self.exception_limit,
            "dump_limit": self.dump_limit,
            "log_limit": self.log_limit,
            "op_limit": self.op_limit,
            "destroyed_limit": self.stream_history.limit,
        }


def new_state(
    *,
    exception_limit: int = EXCEPTION_LIMIT,
    dump_limit: int = DUMP_LIMIT,
    log_limit: int = LOG_LIMIT,
    op_limit: int = OP_LIMIT,
    destroyed_limit: int = DESTROYED_LIMIT,
    **carried: Any,
) -> StoreState:
    """An empty state with these bounds (each at least 1); ``carried``: fields
    kept from a previous state."""
    for name, value in (
        ("exception_limit", exception_limit),
        ("dump_limit", dump_limit),
        ("log_limit", log_limit),
        ("op_limit", op_limit),
        ("destroyed_limit", destroyed_limit),
    ):
        if value < 1:
            raise ValueError(f"{name} must be at least 1, not {value}")
    return StoreState(
        exception_limit=exception_limit,
        dump_limit=dump_limit,
        log_limit=log_limit,
        op_limit=op_limit,
        stream_history=History(destroyed_limit),
        context_history=History(destroyed_limit),
        model_history=History(destroyed_limit),
        **carried,
    )


def device_of(state: StoreState, device_id: int) -> DeviceState:
    """The state of device ``device_id``, made when first named."""
    device = state.devices.get(device_id)
    if device is None:
        device = state.devices[device_id] = DeviceState(device_id)
    return device


def ring_add(ring: deque[Any], item: Any, limit: int) -> int:
    """Append ``item`` to a ring of at most ``limit``; 1 if the oldest went, else 0."""
    ring.append(item)
    if len(ring) > limit:
        ring.popleft()
        return 1
    return 0
