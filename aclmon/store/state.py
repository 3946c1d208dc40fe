"""Event-sourced state: everything the viewer shows, folded from events.

The store imports no Textual. Its state depends only on the events applied, in
order (no clock, no randomness), so a live session and a replay of its
recording end in the same state, and the replay engineer can seek by restoring
a :meth:`Store.snapshot` and applying the events after it.

Every collection is bounded and says what it dropped: the exception ring keeps
the newest ``exception_limit`` records and counts the older ones it let go, op
aggregates stop tracking new operator names at ``op_limit`` (and count the
timings they could not attribute), dump files and logs are rings too.

Events are immutable tuples, so snapshots share them instead of copying them;
only the containers and mutable per-object records are copied.
"""

from __future__ import annotations

import copy
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aclmon import events as ev
from aclmon.acl_constants import error_name

#: points kept per sparkline (one per DeviceSample of that device).
HISTORY_LEN = 120
EXCEPTION_LIMIT = 10_000
DUMP_LIMIT = 2_000
LOG_LIMIT = 1_000
OP_LIMIT = 5_000
REPLY_LIMIT = 64
#: threads whose current context we remember (bounded against a hostile stream).
THREAD_LIMIT = 4096

#: ``StreamSynchronized.stream`` / ``StreamSyncBegin.stream`` of ``synchronize_device``:
#: every stream of the thread's current device (docs/agent.md).
DEVICE_SYNC = -1

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
#: the agent announces a Begin only for a call still running after this long, so only
#: Ends of calls at least this long (less the slack) can have a late Begin to catch.
SLOW_CALL_NS = 50_000_000

STREAM_IDLE = "idle"
STREAM_BUSY = "busy"
STREAM_SYNCHRONIZING = "synchronizing"
STREAM_DESTROYED = "destroyed"


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

    def copy(self) -> DeviceState:
        return DeviceState(
            self.device_id,
            self.sample,
            self.set_ret,
            self.reset,
            deque(self.cube_history, maxlen=HISTORY_LEN),
            deque(self.vector_history, maxlen=HISTORY_LEN),
            deque(self.aicpu_history, maxlen=HISTORY_LEN),
            deque(self.hbm_history, maxlen=HISTORY_LEN),
            self.syncs,
            self.last_sync_ns,
            self.last_sync_ret,
            self.sync_errors,
            self.synchronizing,
            list(self.pending_syncs),
            list(self.recent_sync_ends),
        )


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
    errors: int = 0  # failed synchronizes/executes and exceptions reported on this stream
    last_error: int = 0  # ACL error code of the newest error
    pending_syncs: list[int] = field(default_factory=list)  # StreamSyncBegin start times
    recent_sync_ends: list[int] = field(default_factory=list)  # End start times
    pending_executes: list[tuple[int, int]] = field(default_factory=list)  # (model, start)

    def copy(self) -> StreamState:
        new = copy.copy(self)
        new.pending_syncs = list(self.pending_syncs)
        new.recent_sync_ends = list(self.recent_sync_ends)
        new.pending_executes = list(self.pending_executes)
        return new

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
    # stream handles, in creation order; the StoreState.streams key is (context, handle)
    streams: list[int] = field(default_factory=list)
    threads: set[int] = field(default_factory=set)  # threads that made it current

    def copy(self) -> ContextState:
        return ContextState(
            self.context, self.device_id, self.is_default, self.destroyed,
            list(self.streams), set(self.threads),
        )  # fmt: skip


@dataclass
class ModelState:
    model_id: int
    device_id: int
    name: str
    op_count: int
    loaded: bool = True
    running: int = 0  # pending ExecuteBegins (calls seen running for 50 ms, not ended)
    executions: int = 0  # counted from ExecuteEnd alone
    failures: int = 0
    last_duration_ns: int | None = None
    pending: list[tuple[int, int]] = field(default_factory=list)  # (stream, start) of Begins
    recent_ends: list[tuple[int, int]] = field(default_factory=list)  # (stream, start) of Ends

    def copy(self) -> ModelState:
        new = copy.copy(self)
        new.pending = list(self.pending)
        new.recent_ends = list(self.recent_ends)
        return new


@dataclass
class OpStats:
    op_name: str
    op_type: str
    count: int = 0
    total_us: int = 0
    max_us: int = 0

    @property
    def mean_us(self) -> float:
        return self.total_us / self.count if self.count else 0.0

    def copy(self) -> OpStats:
        return copy.copy(self)


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

    def copy(self) -> Counters:
        return Counters(
            self.events, dict(self.per_kind), self.gaps, dict(self.agent_drops),
            self.malformed, self.unknown,
        )  # fmt: skip


@dataclass
class StoreState:
    """The whole folded state. Copy it with :meth:`copy` (cheap: events are shared)."""

    exception_limit: int = EXCEPTION_LIMIT
    dump_limit: int = DUMP_LIMIT
    log_limit: int = LOG_LIMIT
    op_limit: int = OP_LIMIT
    hello: ev.Hello | None = None
    last_seq: int = 0
    newest_ts_ns: int = 0
    host: ev.HostSample | None = None
    host_cpu_history: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY_LEN))
    devices: dict[int, DeviceState] = field(default_factory=dict)
    contexts: dict[int, ContextState] = field(default_factory=dict)
    streams: dict[tuple[int, int], StreamState] = field(default_factory=dict)  # (context, handle)
    # Current contexts, for resolving the events that carry only a stream handle.
    thread_contexts: dict[int, int] = field(default_factory=dict)  # thread_id -> context
    current_context: int | None = None  # the context most recently made current (any thread)
    device_syncs_unattributed: int = 0  # synchronize_device with no device we could tell
    # keys of streams with a Begin pending (may hold keys of streams since removed)
    pending_streams: set[tuple[int, int]] = field(default_factory=set)
    models: dict[int, ModelState] = field(default_factory=dict)
    exceptions: deque[ev.AclException] = field(default_factory=deque)
    exceptions_total: int = 0
    exceptions_dropped: int = 0
    profiling: ev.ProfilingState | None = None
    replies: dict[int, ev.Reply] = field(default_factory=dict)  # request_id -> reply
    last_reply: ev.Reply | None = None
    ops: dict[str, OpStats] = field(default_factory=dict)  # key: op_name
    op_timings_total: int = 0
    op_timings_untracked: int = 0  # timings of ops beyond op_limit distinct names
    dumps: deque[ev.DumpFileSeen] = field(default_factory=deque)
    dumps_total: int = 0
    dumps_dropped: int = 0
    logs: deque[ev.LogLine] = field(default_factory=deque)
    logs_dropped: int = 0
    tx_marks: int = 0
    tx_ranges: int = 0
    counters: Counters = field(default_factory=Counters)

    def copy(self) -> StoreState:
        return StoreState(
            exception_limit=self.exception_limit,
            dump_limit=self.dump_limit,
            log_limit=self.log_limit,
            op_limit=self.op_limit,
            hello=self.hello,
            last_seq=self.last_seq,
            newest_ts_ns=self.newest_ts_ns,
            host=self.host,
            host_cpu_history=deque(self.host_cpu_history, maxlen=HISTORY_LEN),
            devices={k: v.copy() for k, v in self.devices.items()},
            contexts={k: v.copy() for k, v in self.contexts.items()},
            streams={k: v.copy() for k, v in self.streams.items()},
            thread_contexts=dict(self.thread_contexts),
            current_context=self.current_context,
            device_syncs_unattributed=self.device_syncs_unattributed,
            pending_streams=set(self.pending_streams),
            models={k: v.copy() for k, v in self.models.items()},
            exceptions=deque(self.exceptions),
            exceptions_total=self.exceptions_total,
            exceptions_dropped=self.exceptions_dropped,
            profiling=self.profiling,
            replies=dict(self.replies),
            last_reply=self.last_reply,
            ops={k: v.copy() for k, v in self.ops.items()},
            op_timings_total=self.op_timings_total,
            op_timings_untracked=self.op_timings_untracked,
            # Shared, not deep-copied: DumpFileSeen is immutable and its summary dict is
            # never mutated by the store or its readers, so a snapshot only needs its own
            # ring (deep copies cost ~0.8 MB and tens of ms with 2,000 dumps per snapshot).
            dumps=deque(self.dumps),
            dumps_total=self.dumps_total,
            dumps_dropped=self.dumps_dropped,
            logs=deque(self.logs),
            logs_dropped=self.logs_dropped,
            tx_marks=self.tx_marks,
            tx_ranges=self.tx_ranges,
            counters=self.counters.copy(),
        )


class Store:
    """Folds events into a :class:`StoreState`.

    ``version`` goes up with every applied batch, so a view can skip repainting
    when nothing changed since it last looked.
    """

    def __init__(
        self,
        *,
        exception_limit: int = EXCEPTION_LIMIT,
        dump_limit: int = DUMP_LIMIT,
        log_limit: int = LOG_LIMIT,
        op_limit: int = OP_LIMIT,
    ) -> None:
        for name, value in (
            ("exception_limit", exception_limit),
            ("dump_limit", dump_limit),
            ("log_limit", log_limit),
            ("op_limit", op_limit),
        ):
            if value < 1:
                raise ValueError(f"{name} must be at least 1, not {value}")
        self.state = StoreState(
            exception_limit=exception_limit,
            dump_limit=dump_limit,
            log_limit=log_limit,
            op_limit=op_limit,
        )
        self.version = 0
        self._handlers: dict[type, Any] = {
            ev.Hello: self._hello,
            ev.DeviceSample: self._device_sample,
            ev.HostSample: self._host_sample,
            ev.DeviceSet: self._device_set,
            ev.DeviceReset: self._device_reset,
            ev.ContextCreated: self._context_created,
            ev.ContextDestroyed: self._context_destroyed,
            ev.ContextCurrent: self._context_current,
            ev.StreamCreated: self._stream_created,
            ev.StreamDestroyed: self._stream_destroyed,
            ev.StreamSyncBegin: self._stream_sync_begin,
            ev.StreamSynchronized: self._stream_synchronized,
            ev.ModelLoaded: self._model_loaded,
            ev.ModelUnloaded: self._model_unloaded,
            ev.ExecuteBegin: self._execute_begin,
            ev.ExecuteEnd: self._execute_end,
            ev.AclException: self._exception,
            ev.ProfilingState: self._profiling_state,
            ev.OpTiming: self._op_timing,
            ev.TxMark: self._tx_mark,
            ev.TxRange: self._tx_range,
            ev.DumpFileSeen: self._dump_file,
            ev.LogLine: self._log,
            ev.Drops: self._drops,
            ev.Reply: self._reply,
        }

    # ------------------------------------------------------------ public
    def apply(self, event: ev.Event) -> None:
        self._apply(event)
        self.version += 1

    def apply_many(self, events: list[ev.Event]) -> None:
        if not events:
            return
        apply = self._apply
        for event in events:
            apply(event)
        self.version += 1

    def note_decoder_counts(self, malformed: int, unknown: int) -> None:
        """Record the source decoder's running totals of skipped input."""
        counters = self.state.counters
        if counters.malformed != malformed or counters.unknown != unknown:
            counters.malformed = malformed
            counters.unknown = unknown
            self.version += 1

    def snapshot(self) -> StoreState:
        """An independent copy of the state (later events do not change it)."""
        return self.state.copy()

    def restore(self, snapshot: StoreState) -> None:
        """Continue from ``snapshot`` (which stays untouched and reusable)."""
        self.state = snapshot.copy()
        self.version += 1

    # ------------------------------------------------------------ queries
    def stream_by_id(self, device_id: int, stream_id: int) -> StreamState | None:
        """The live stream with this exception-info id on this device."""
        found = None
        for stream in self.state.streams.values():
            if stream.device_id == device_id and stream.stream_id == stream_id:
                found = stream
                if stream.state != STREAM_DESTROYED:
                    return stream
        return found

    def top_ops(self, limit: int) -> list[OpStats]:
        """Operators by total time, largest first (ties by name, for a stable order)."""
        ops = sorted(self.state.ops.values(), key=lambda o: (-o.total_us, o.op_name))
        return ops[:limit]

    def resolve_stream(
        self, handle: int, *, thread_id: int | None = None, device_id: int | None = None
    ) -> StreamState | None:
        """The stream an event naming only ``handle`` is about.

        StreamDestroyed, StreamSyncBegin, StreamSynchronized, ExecuteBegin and
        ExecuteEnd carry a stream handle but no context, and handles are not unique
        (every context's default stream is 0). The rule, first match wins, a live
        stream before a destroyed one:

        1. the stream with this handle in ``thread_id``'s current context (only
           StreamSyncBegin names its thread);
        2. the stream with this handle in the context most recently made current
           by any thread;
        3. the most recently created stream with this handle.

        ``device_id`` (ExecuteBegin's device, or the model's device for ExecuteEnd)
        excludes streams of other devices at every step. None if no stream matches.
        StreamSynchronized and ExecuteEnd first try the stream holding a matching
        pending Begin (resolved when the Begin came); stream ``DEVICE_SYNC`` (-1) never
        comes here: it is a device-level figure (DeviceState.syncs).
        """
        s = self.state
        streams = s.streams
        fallback: StreamState | None = None
        contexts = []
        if thread_id is not None:
            thread_context = s.thread_contexts.get(thread_id)
            if thread_context is not None:
                contexts.append(thread_context)
        if s.current_context is not None:
            contexts.append(s.current_context)
        for context in contexts:
            stream = streams.get((context, handle))
            if stream is not None and (device_id is None or stream.device_id == device_id):
                if stream.state != STREAM_DESTROYED:
                    return stream
                fallback = fallback or stream
        # Newest first: _stream_created (re)inserts each new stream at the end.
        for stream in reversed(streams.values()):
            if stream.stream == handle and (device_id is None or stream.device_id == device_id):
                if stream.state != STREAM_DESTROYED:
                    return stream
                fallback = fallback or stream
        return fallback

    def _sync_device(self, thread_id: int | None = None) -> DeviceState | None:
        """The device a synchronize_device (stream = DEVICE_SYNC) waited on.

        The device of the thread's current context, else of the context most
        recently made current, else the only device we know; None if ambiguous.
        """
        s = self.state
        candidates = []
        if thread_id is not None and thread_id in s.thread_contexts:
            candidates.append(s.thread_contexts[thread_id])
        if s.current_context is not None:
            candidates.append(s.current_context)
        for context in candidates:
            ctx = s.contexts.get(context)
            if ctx is not None:
                return self._device(ctx.device_id)
        if len(s.devices) == 1:
            return next(iter(s.devices.values()))
        return None

    def device_ids(self) -> list[int]:
        return sorted(self.state.devices)

    def to_json(self) -> dict[str, Any]:
        """The state as plain JSON values (``aclmon attach --once --json``)."""
        s = self.state
        c = s.counters
        return {
            "target": ev.to_json(s.hello) if s.hello else None,
            "newest_ts_ns": s.newest_ts_ns,
            "host": ev.to_json(s.host) if s.host else None,
            "devices": [
                {
                    "device_id": d.device_id,
                    "sample": ev.to_json(d.sample) if d.sample else None,
                    "set_ret": d.set_ret,
                    "reset": d.reset,
                    "device_syncs": d.syncs,
                    "last_device_sync_ns": d.last_sync_ns,
                    "last_device_sync_ret": d.last_sync_ret,
                    "device_sync_errors": d.sync_errors,
                    "device_synchronizing": d.synchronizing,
                    "contexts": [
                        {
                            "context": ctx.context,
                            "is_default": ctx.is_default,
                            "destroyed": ctx.destroyed,
                            "streams": [
                                _stream_json(s.streams[(ctx.context, h)])
                                for h in ctx.streams
                                if (ctx.context, h) in s.streams
                            ],
                        }
                        for ctx in s.contexts.values()
                        if ctx.device_id == d.device_id
                    ],
                }
                for d in (s.devices[i] for i in sorted(s.devices))
            ],
            "models": [
                {
                    "model_id": m.model_id,
                    "device_id": m.device_id,
                    "name": m.name,
                    "op_count": m.op_count,
                    "loaded": m.loaded,
                    "running": m.running,
                    "executions": m.executions,
                    "failures": m.failures,
                    "last_duration_ns": m.last_duration_ns,
                }
                for m in s.models.values()
            ],
            "exceptions": {
                "total": s.exceptions_total,
                "dropped": s.exceptions_dropped,
                "recent": [ev.to_json(e) for e in list(s.exceptions)[-20:]],
            },
            "profiling": ev.to_json(s.profiling) if s.profiling else None,
            "last_reply": ev.to_json(s.last_reply) if s.last_reply else None,
            "ops": [
                {
                    "op_name": o.op_name,
                    "op_type": o.op_type,
                    "count": o.count,
                    "total_us": o.total_us,
                    "mean_us": round(o.mean_us, 3),
                    "max_us": o.max_us,
                }
                for o in self.top_ops(50)
            ],
            "dumps": {
                "total": s.dumps_total,
                "dropped": s.dumps_dropped,
                "recent": [ev.to_json(d) for d in list(s.dumps)[-20:]],
            },
            "counters": {
                "events": c.events,
                "per_kind": dict(sorted(c.per_kind.items())),
                "gaps": c.gaps,
                "agent_dropped": c.agent_dropped,
                "agent_drops": dict(sorted(c.agent_drops.items())),
                "malformed": c.malformed,
                "unknown": c.unknown,
            },
        }

    # ------------------------------------------------------------ fold
    def _apply(self, event: ev.Event) -> None:
        s = self.state
        counters = s.counters
        counters.events += 1
        name = ev.KIND_NAMES.get(type(event), "?")
        counters.per_kind[name] = counters.per_kind.get(name, 0) + 1
        seq = event.seq
        # seq 0 = snapshot state re-sent to a new subscriber, outside the sequence.
        if seq:
            last = s.last_seq
            # A Hello starts (or restarts) a source; a smaller seq means the source
            # restarted its clock (a new agent): neither is a gap.
            if seq > last + 1 and last and type(event) is not ev.Hello:
                counters.gaps += ev.missed_between(last, seq)  # a bogus jump counts once
            s.last_seq = seq
        if event.ts_ns > s.newest_ts_ns:
            s.newest_ts_ns = event.ts_ns
        handler = self._handlers.get(type(event))
        if handler is not None:
            handler(event)

    def _refresh(self, stream: StreamState) -> None:
        """Re-derive the stream's state and keep the index of streams with Begins pending."""
        stream.refresh()
        key = (stream.context, stream.stream)
        if stream.pending_syncs or stream.pending_executes:
            self.state.pending_streams.add(key)
        else:
            self.state.pending_streams.discard(key)

    def _pending_streams(self, handle: int | None) -> list[StreamState]:
        """Streams (with this handle) that have a Begin pending, in key order.

        Slow calls are rare, so this small index spares End events, the commonest
        events, a walk over every stream."""
        s = self.state
        if not s.pending_streams:
            return []
        found = []
        for key in sorted(s.pending_streams):
            stream = s.streams.get(key)
            if stream is not None and (handle is None or key[1] == handle):
                found.append(stream)
        return found

    def _device(self, device_id: int) -> DeviceState:
        devices = self.state.devices
        device = devices.get(device_id)
        if device is None:
            device = devices[device_id] = DeviceState(device_id)
        return device

    def _hello(self, e: ev.Hello) -> None:
        s = self.state
        if s.hello is not None and (e.pid, e.host) != (s.hello.pid, s.hello.host):
            # Another process now (the job was restarted behind the same address):
            # what we knew about the old one is history, not state. Counters and
            # the sequence carry on; the rest starts afresh.
            fresh = StoreState(
                exception_limit=s.exception_limit,
                dump_limit=s.dump_limit,
                log_limit=s.log_limit,
                op_limit=s.op_limit,
                last_seq=s.last_seq,
                newest_ts_ns=s.newest_ts_ns,
                counters=s.counters,
            )
            self.state = fresh
        self.state.hello = e

    def _device_sample(self, e: ev.DeviceSample) -> None:
        d = self._device(e.device_id)
        d.sample = e
        d.cube_history.append(e.cube_util)
        d.vector_history.append(e.vector_util)
        d.aicpu_history.append(e.aicpu_util)
        d.hbm_history.append(e.hbm_used)

    def _host_sample(self, e: ev.HostSample) -> None:
        self.state.host = e
        self.state.host_cpu_history.append(e.cpu_percent)

    def _device_set(self, e: ev.DeviceSet) -> None:
        d = self._device(e.device_id)
        d.set_ret = e.ret
        if e.ret == 0:
            d.reset = False

    def _device_reset(self, e: ev.DeviceReset) -> None:
        if e.ret == 0:
            self._device(e.device_id).reset = True

    def _context_created(self, e: ev.ContextCreated) -> None:
        self._device(e.device_id)
        current = self.state.contexts.get(e.context)
        if e.seq == 0 and current is not None and current.device_id == e.device_id:
            # A snapshot re-sent on reconnect: the context we know, keep what we saw of it.
            current.destroyed = False
            return
        old = self.state.contexts.pop(e.context, None)
        if old is not None:  # a handle reused after destroy: its streams are gone too
            for handle in old.streams:
                self.state.streams.pop((e.context, handle), None)
        self.state.contexts[e.context] = ContextState(e.context, e.device_id, e.is_default)

    def _context_destroyed(self, e: ev.ContextDestroyed) -> None:
        ctx = self.state.contexts.get(e.context)
        if ctx is None or e.ret != 0:
            return
        ctx.destroyed = True
        for handle in ctx.streams:
            stream = self.state.streams.get((e.context, handle))
            if stream is not None:
                stream.state = STREAM_DESTROYED

    def _context_current(self, e: ev.ContextCurrent) -> None:
        s = self.state
        s.current_context = e.context
        threads = s.thread_contexts
        # Re-inserted so the dict is oldest-first; the oldest thread goes at the bound.
        threads.pop(e.thread_id, None)
        if len(threads) >= THREAD_LIMIT:
            del threads[next(iter(threads))]
        threads[e.thread_id] = e.context
        ctx = s.contexts.get(e.context)
        # Bounded by the job's thread count; cap anyway against a hostile stream.
        if ctx is not None and len(ctx.threads) < 4096:
            ctx.threads.add(e.thread_id)

    def _stream_created(self, e: ev.StreamCreated) -> None:
        s = self.state
        self._device(e.device_id)
        ctx = s.contexts.get(e.context)
        if ctx is None:  # joined late without the context's event: make a place for it
            ctx = s.contexts[e.context] = ContextState(e.context, e.device_id, False)
        key = (e.context, e.stream)
        old = s.streams.get(key)
        if (
            e.seq == 0
            and old is not None
            and old.stream_id == e.stream_id
            and old.state != STREAM_DESTROYED
        ):
            if e.stream not in ctx.streams:
                ctx.streams.append(e.stream)
            return  # snapshot of a stream we know: keep its syncs and errors
        # A handle reused after destroy: forget destroyed streams with this handle in
        # other contexts (keeps the dict bounded as before); live ones, such as the
        # other contexts' default streams (handle 0), stay.
        for other_key in [
            k
            for k, v in s.streams.items()
            if k[1] == e.stream and k != key and v.state == STREAM_DESTROYED
        ]:
            del s.streams[other_key]
            other_ctx = s.contexts.get(other_key[0])
            if other_ctx is not None and e.stream in other_ctx.streams:
                other_ctx.streams.remove(e.stream)
        # Popped and re-inserted: the dict stays in creation order (resolve_stream's step 3).
        s.streams.pop(key, None)
        s.streams[key] = StreamState(
            e.stream, e.stream_id, e.device_id, e.context, e.priority, e.flags
        )
        if e.stream not in ctx.streams:
            ctx.streams.append(e.stream)

    def _stream_destroyed(self, e: ev.StreamDestroyed) -> None:
        if e.stream == DEVICE_SYNC or e.ret != 0:
            return
        stream = self.resolve_stream(e.stream)
        if stream is not None:
            stream.state = STREAM_DESTROYED

    def _stream_sync_begin(self, e: ev.StreamSyncBegin) -> None:
        if e.stream == DEVICE_SYNC:
            device = self._sync_device(e.thread_id)
            if device is not None and _begin(
                device.pending_syncs, device.recent_sync_ends, e.ts_ns
            ):
                device.synchronizing = True
            return
        stream = self.resolve_stream(e.stream, thread_id=e.thread_id)
        if stream is not None and stream.state != STREAM_DESTROYED:
            _begin(stream.pending_syncs, stream.recent_sync_ends, e.ts_ns)
            self._refresh(stream)

    def _stream_synchronized(self, e: ev.StreamSynchronized) -> None:
        if e.stream == DEVICE_SYNC:
            self._device_synchronized(e)
            return
        start = e.ts_ns - e.duration_ns
        # A stream whose sync Begin (resolved through its thread) is pending is the
        # better guess; otherwise the usual resolution.
        waiting = (
            [st for st in self._pending_streams(e.stream) if st.pending_syncs]
            if self.state.pending_streams
            else None
        )
        if waiting:
            stream = min(waiting, key=lambda st: _distance(st.pending_syncs, start))
        else:
            stream = self.resolve_stream(e.stream)
        if stream is None:
            return
        stream.syncs += 1
        stream.last_sync_ns = e.duration_ns
        stream.last_sync_ret = e.ret
        if e.ret != 0:
            stream.errors += 1
            stream.last_error = e.ret
        if stream.pending_syncs:
            _end(stream.pending_syncs, stream.recent_sync_ends, start, e.ts_ns)
            self._refresh(stream)
        else:  # nothing pending: the derived state cannot change
            _note_end(stream.recent_sync_ends, start, e.duration_ns)

    def _device_synchronized(self, e: ev.StreamSynchronized) -> None:
        # No thread in the event: a device whose synchronize_device Begin is pending
        # first (closest start), else the current context's device.
        start = e.ts_ns - e.duration_ns
        waiting = [d for d in self.state.devices.values() if d.pending_syncs]
        if waiting:
            device: DeviceState | None = min(
                waiting, key=lambda d: _distance(d.pending_syncs, start)
            )
        else:
            device = self._sync_device()
        if device is None:
            self.state.device_syncs_unattributed += 1
            return
        device.syncs += 1
        device.last_sync_ns = e.duration_ns
        device.last_sync_ret = e.ret
        if e.ret != 0:
            device.sync_errors += 1
        _end(device.pending_syncs, device.recent_sync_ends, start, e.ts_ns)
        device.synchronizing = bool(device.pending_syncs)

    def _model_loaded(self, e: ev.ModelLoaded) -> None:
        self._device(e.device_id)
        old = self.state.models.get(e.model_id)
        if e.seq == 0 and old is not None and old.loaded and old.name == e.name:
            return  # snapshot of a model we know: keep its run counts
        self.state.models[e.model_id] = ModelState(e.model_id, e.device_id, e.name, e.op_count)

    def _model_unloaded(self, e: ev.ModelUnloaded) -> None:
        model = self.state.models.get(e.model_id)
        if model is not None and e.ret == 0:
            model.loaded = False
            model.running = 0
            model.pending.clear()
            for stream in self._pending_streams(None):
                if any(m == e.model_id for m, _ in stream.pending_executes):
                    stream.pending_executes = [
                        p for p in stream.pending_executes if p[0] != e.model_id
                    ]
                    self._refresh(stream)

    def _execute_begin(self, e: ev.ExecuteBegin) -> None:
        # Deferred by the agent: ts_ns is the call's start, and the call may already
        # have ended (its End came first): then it is not running.
        model = self.state.models.get(e.model_id)
        if model is not None:
            if any(
                h == e.stream and abs(start - e.ts_ns) <= SAME_CALL_NS
                for h, start in model.recent_ends
            ):
                return
            model.pending.append((e.stream, e.ts_ns))
            del model.pending[:-PENDING_LIMIT]
            model.running = len(model.pending)
        # stream 0 = a synchronous execute (the schema), not a default stream.
        device_id = e.device_id if e.device_id >= 0 else None
        stream = self.resolve_stream(e.stream, device_id=device_id) if e.stream else None
        if stream is not None and stream.state != STREAM_DESTROYED:
            stream.pending_executes.append((e.model_id, e.ts_ns))
            del stream.pending_executes[:-PENDING_LIMIT]
            self._refresh(stream)

    def _execute_end(self, e: ev.ExecuteEnd) -> None:
        # Counted from the End alone (most calls never get a Begin).
        start = e.ts_ns - e.duration_ns
        model = self.state.models.get(e.model_id)
        if model is not None:
            model.executions += 1
            model.last_duration_ns = e.duration_ns
            if e.ret != 0:
                model.failures += 1
            if model.pending:
                mine = [i for i, (h, _) in enumerate(model.pending) if h == e.stream]
                closest = _closest([model.pending[i][1] for i in mine], start, e.ts_ns)
                if closest is not None:
                    del model.pending[mine[closest]]
                    model.running = len(model.pending)
            _note_end(model.recent_ends, (e.stream, start), e.duration_ns)
        if not e.stream:
            return
        # The stream holding this model's pending Begin, else the usual resolution.
        waiting = (
            [
                st
                for st in self._pending_streams(e.stream)
                if any(m == e.model_id for m, _ in st.pending_executes)
            ]
            if self.state.pending_streams
            else None
        )
        if waiting:
            stream: StreamState | None = waiting[-1]
        else:
            device_id = model.device_id if model is not None else None
            stream = self.resolve_stream(e.stream, device_id=device_id)
        if stream is None:
            return
        if e.ret != 0:
            stream.errors += 1
            stream.last_error = e.ret
        pending = stream.pending_executes
        if not pending:
            return
        mine = [i for i, (m, _) in enumerate(pending) if m == e.model_id]
        closest = _closest([pending[i][1] for i in mine], start, e.ts_ns)
        if closest is not None:
            del pending[mine[closest]]
            self._refresh(stream)

    def _exception(self, e: ev.AclException) -> None:
        s = self.state
        s.exceptions.append(e)
        s.exceptions_total += 1
        if len(s.exceptions) > s.exception_limit:
            s.exceptions.popleft()
            s.exceptions_dropped += 1
        stream = self.stream_by_id(e.device_id, e.stream_id)
        if stream is not None:
            stream.errors += 1
            stream.last_error = e.error_code

    def _profiling_state(self, e: ev.ProfilingState) -> None:
        self.state.profiling = e

    def _op_timing(self, e: ev.OpTiming) -> None:
        s = self.state
        s.op_timings_total += 1
        stats = s.ops.get(e.op_name)
        if stats is None:
            if len(s.ops) >= s.op_limit:
                s.op_timings_untracked += 1
                return
            stats = s.ops[e.op_name] = OpStats(e.op_name, e.op_type)
        stats.count += 1
        stats.total_us += e.duration_us
        if e.duration_us > stats.max_us:
            stats.max_us = e.duration_us

    def _tx_mark(self, e: ev.TxMark) -> None:
        self.state.tx_marks += 1

    def _tx_range(self, e: ev.TxRange) -> None:
        self.state.tx_ranges += 1

    def _dump_file(self, e: ev.DumpFileSeen) -> None:
        s = self.state
        s.dumps.append(e)
        s.dumps_total += 1
        if len(s.dumps) > s.dump_limit:
            s.dumps.popleft()
            s.dumps_dropped += 1

    def _log(self, e: ev.LogLine) -> None:
        s = self.state
        s.logs.append(e)
        if len(s.logs) > s.log_limit:
            s.logs.popleft()
            s.logs_dropped += 1

    def _drops(self, e: ev.Drops) -> None:
        # ``total`` is a running total per place: keep the largest seen.
        drops = self.state.counters.agent_drops
        if e.total > drops.get(e.where, -1):
            drops[e.where] = e.total

    def _reply(self, e: ev.Reply) -> None:
        replies = self.state.replies
        replies.pop(e.request_id, None)
        replies[e.request_id] = e
        while len(replies) > REPLY_LIMIT:
            del replies[next(iter(replies))]
        self.state.last_reply = e


def _distance(starts: list[int], start: int) -> int:
    return min(abs(s - start) for s in starts)


def _begin(pending: list[int], recent_ends: list[int], start: int) -> bool:
    """Note a deferred Begin starting at ``start``; False if its call already ended."""
    if any(abs(end_start - start) <= SAME_CALL_NS for end_start in recent_ends):
        return False
    pending.append(start)
    del pending[:-PENDING_LIMIT]
    return True


def _closest(starts: list[int], start: int, end: int) -> int | None:
    """Index of the pending Begin start closest to ``start``, among those that began
    before the End's call ended at ``end`` (a later Begin is another call); or None."""
    best = None
    for i, begin in enumerate(starts):
        if begin <= end + SAME_CALL_NS and (
            best is None or abs(begin - start) < abs(starts[best] - start)
        ):
            best = i
    return best


def _end(pending: list[int], recent_ends: list[int], start: int, end: int) -> None:
    """An End whose call ran from ``start`` to ``end``: take back the closest pending Begin."""
    closest = _closest(pending, start, end)
    if closest is not None:
        del pending[closest]
    _note_end(recent_ends, start, end - start)


def _note_end(recent_ends: list[Any], start: Any, duration_ns: int) -> None:
    """Remember a slow call's End start (bounded), to recognise a Begin announced after it."""
    if duration_ns < SLOW_CALL_NS - SAME_CALL_NS:
        return  # too short to have been announced
    recent_ends.append(start)
    if len(recent_ends) > RECENT_ENDS:
        del recent_ends[0]


def _stream_json(stream: StreamState) -> dict[str, Any]:
    return {
        "stream": stream.stream,
        "stream_id": stream.stream_id,
        "priority": stream.priority,
        "flags": stream.flags,
        "state": stream.state,
        "last_sync_ns": stream.last_sync_ns,
        "syncs": stream.syncs,
        "errors": stream.errors,
        "last_error": error_name(stream.last_error) if stream.last_error else None,
    }
