"""The fold: :class:`Store` applies events, in order, to a :class:`StoreState`.

The store imports no Textual. Each event kind has one handler; the state model
is :mod:`aclmon.store.state`, Begin/End pairing :mod:`aclmon.store.pairing`,
the JSON export :mod:`aclmon.store.export`, the agent's History totals
:mod:`aclmon.store.history`, the stream indexes :mod:`aclmon.store.streams`,
synchronizes :mod:`aclmon.store.syncs`, the log, failed-call and dump-file
records :mod:`aclmon.store.records`.

Destroyed streams, contexts and unloaded models are forgotten, oldest first,
past ``destroyed_limit`` of each, so the cost of an event does not grow with how
many the job has made.
"""

from __future__ import annotations

from typing import Any

from aclmon import events as ev
from aclmon.events import DEVICE_SYNC
from aclmon.store.attribution import (
    attribute_exception,
    failed_exception_run,
    learned_op_type,
    note_failed_run,
    note_launch,
    synchronous_end,
    typed,
)
from aclmon.store.export import state_to_json
from aclmon.store.history import fold_history
from aclmon.store.host import fold_host_npu_sample
from aclmon.store.ops import fold_op_timing, fold_tx, sorted_ops, top_ops
from aclmon.store.pairing import (
    PENDING_LIMIT,
    SAME_CALL_NS,
    closest,
    note_end,
)
from aclmon.store.records import fold_call_failed, fold_dump_file, fold_log_line
from aclmon.store.sections import ALL_SECTIONS, COUNTERS, EXCEPTIONS, sections_of
from aclmon.store.state import (
    REPLY_LIMIT,
    STREAM_DESTROYED,
    THREAD_LIMIT,
    ContextState,
    DeviceState,
    ModelState,
    OpStats,
    StoreState,
    StreamState,
    device_of,
    exception_key,
    new_state,
    ring_add,
    runtime_message,
)
from aclmon.store.streams import (
    add_stream,
    forget_context,
    forget_stream,
    pending_streams,
    refresh_stream,
    resolve_stream,
    stream_by_id,
)
from aclmon.store.syncs import fold_sync_begin, fold_synchronized, stream_failed, sync_device

#: kinds a snapshot does not restate: folded even when a snapshot's History counts
#: events numbered after them (samples and timings are series, log lines are
#: deduplicated by their text, a drop count is a running total)
NOT_IN_SNAPSHOTS = frozenset(
    {ev.DeviceSample, ev.HostSample, ev.OpTiming, ev.TxMark, ev.TxRange, ev.LogLine, ev.Drops}
)


class Store:
    """Folds events into a :class:`StoreState`.

    ``version`` goes up with every applied batch, so a view can skip repainting
    when nothing changed since it last looked; :meth:`section_versions` says
    which parts of the state a batch may have changed
    (:mod:`aclmon.store.sections`), so a view that draws other parts skips too.
    """

    def __init__(self, **limits: int) -> None:
        """``limits``: ``exception_limit``, ``dump_limit``, ``log_limit``,
        ``op_limit``, ``destroyed_limit`` (see :func:`new_state`)."""
        self.state = new_state(**limits)
        self.version = 0
        #: section -> the ``version`` at which it last moved
        self._moved: dict[str, int] = {}
        #: an ExecuteEnd since the last move named exceptions waiting for an execution
        self._named_exceptions = False
        self._handlers: dict[type, Any] = {
            ev.Hello: self._hello,
            ev.DeviceSample: self._device_sample,
            ev.HostSample: self._host_sample,
            ev.HostNpuSample: self._host_npu_sample,
            ev.DeviceSet: self._device_set,
            ev.DeviceReset: self._device_reset,
            ev.ContextCreated: self._context_created,
            ev.ContextDestroyed: self._context_destroyed,
            ev.ContextCurrent: self._context_current,
            ev.StreamCreated: self._stream_created,
            ev.StreamDestroyed: self._stream_destroyed,
            ev.StreamSyncBegin: lambda e: fold_sync_begin(self.state, e),
            ev.StreamSynchronized: lambda e: fold_synchronized(self.state, e),
            ev.ModelLoaded: self._model_loaded,
            ev.ModelUnloaded: self._model_unloaded,
            ev.ExecuteBegin: self._execute_begin,
            ev.ExecuteEnd: self._execute_end,
            ev.AclException: self._exception,
            ev.ProfilingState: self._profiling_state,
            ev.OpTiming: self._op_timing,
            ev.TxMark: self._tx,
            ev.TxRange: self._tx,
            ev.DumpFileSeen: lambda e: fold_dump_file(self.state, e),
            ev.LogLine: lambda e: fold_log_line(self.state, e),
            ev.CallFailed: lambda e: fold_call_failed(self.state, e),
            ev.Drops: self._drops,
            ev.Reply: self._reply,
            ev.History: self._history,
            ev.Goodbye: self._goodbye,
            ev.Triage: self._triage,
            ev.ClockOffset: self._clock_offset,
        }

    # ------------------------------------------------------------ public
    def apply(self, event: ev.Event) -> None:
        self._apply(event)
        self._moves(self._with_named(sections_of({type(event)})))

    def apply_many(self, events: list[ev.Event]) -> None:
        if not events:
            return
        apply = self._apply
        for event in events:
            apply(event)
        self._moves(self._with_named(sections_of(set(map(type, events)))))

    def _with_named(self, sections: frozenset[str]) -> frozenset[str]:
        """``sections``, and the exceptions' if an ExecuteEnd named some waiting ones
        (an End moves the exceptions section only then, not at every execution)."""
        if not self._named_exceptions:
            return sections
        self._named_exceptions = False
        return sections | {EXCEPTIONS}

    def _moves(self, sections: frozenset[str]) -> None:
        self.version += 1
        version = self.version
        moved = self._moved
        for section in sections:
            moved[section] = version

    def section_versions(self, sections: tuple[str, ...]) -> tuple[int, ...]:
        """The version at which each of ``sections`` last moved (0: never), to
        compare with the one a view drew."""
        moved = self._moved
        return tuple(moved.get(section, 0) for section in sections)

    def replace(self, state: StoreState) -> None:
        """Continue from ``state`` (adopted as it is, not copied): everything moved."""
        self.state = state
        self._moves(ALL_SECTIONS)

    def note_decoder_counts(self, malformed: int, unknown: int) -> None:
        """Record the source decoder's running totals of skipped input."""
        counters = self.state.counters
        if counters.malformed != malformed or counters.unknown != unknown:
            counters.malformed = malformed
            counters.unknown = unknown
            self._moves(frozenset({COUNTERS}))

    def snapshot(self) -> StoreState:
        """An independent copy of the state (later events do not change it)."""
        return self.state.copy()

    def restore(self, snapshot: StoreState) -> None:
        """Continue from ``snapshot`` (which stays untouched and reusable)."""
        self.replace(snapshot.copy())

    # ------------------------------------------------------------ queries
    def stream_by_id(self, device_id: int, stream_id: int) -> StreamState | None:
        """The stream with this exception-info id on this device (see
        :func:`aclmon.store.streams.stream_by_id`)."""
        return stream_by_id(self.state, device_id, stream_id)

    def resolve_stream(
        self, handle: int, *, thread_id: int | None = None, device_id: int | None = None
    ) -> StreamState | None:
        """The stream an event naming only ``handle`` is about (the rule:
        :func:`aclmon.store.streams.resolve_stream`)."""
        return resolve_stream(self.state, handle, thread_id=thread_id, device_id=device_id)

    def top_ops(self, limit: int) -> list[OpStats]:
        """Operators by total time, largest first (ties by name, for a stable order)."""
        return top_ops(self.state, limit)

    def sorted_ops(self, sort: str = "total", reverse: bool = False) -> list[OpStats]:
        """Every operator (of a model on a device) in the operator table's order."""
        return sorted_ops(self.state, sort, reverse)

    def sync_device(self, thread_id: int | None = None) -> DeviceState | None:
        """The device a synchronize_device waited on (:func:`aclmon.store.syncs.sync_device`)."""
        return sync_device(self.state, thread_id)

    def device_ids(self) -> list[int]:
        return sorted(self.state.devices)

    def to_json(self) -> dict[str, Any]:
        """The state as plain JSON values (``aclmon attach --once --json``)."""
        return state_to_json(self.state)

    # ------------------------------------------------------------ fold
    def _apply(self, event: ev.Event) -> None:
        s = self.state
        counters = s.counters
        counters.events += 1
        name = ev.KIND_NAMES.get(type(event), "?")
        counters.per_kind[name] = counters.per_kind.get(name, 0) + 1
        seq = event.seq
        # seq 0 = snapshot state re-sent to a new subscriber, outside the sequence.
        if seq and seq <= s.covered_seq and not self._new_agent(event):
            # A snapshot we folded counts it already: never both (the agent's own
            # Hello again after acl.init too). Kinds no snapshot restates still fold;
            # the sequence is past them either way.
            if type(event) not in NOT_IN_SNAPSHOTS:
                return
        elif seq:
            if seq <= s.covered_seq:  # a new agent numbers from 1 again
                s.covered_seq = 0
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

    def _new_agent(self, event: ev.Event) -> bool:
        """``event`` is the Hello of another agent than the one folded so far: one
        that numbers from 1 again (restarted), or another process. The Hello an agent
        sends again after ``acl.init`` is neither (a replay holds it after the
        snapshot that counts it)."""
        if type(event) is not ev.Hello:
            return False
        hello = self.state.hello
        return event.seq == 1 or (
            hello is not None and (event.pid, event.host) != (hello.pid, hello.host)
        )

    def _destroyed(self, stream: StreamState) -> None:
        """Mark ``stream`` destroyed; it stays only while in the bounded history."""
        stream.state = STREAM_DESTROYED
        gone = self.state.stream_history.add(stream.key)
        if gone is not None:
            forget_stream(self.state, gone)

    def _device(self, device_id: int) -> DeviceState:
        return device_of(self.state, device_id)

    def _hello(self, e: ev.Hello) -> None:
        s = self.state
        if s.hello is not None and (e.pid, e.host) != (s.hello.pid, s.hello.host):
            # Another process now (the job was restarted behind the same address):
            # what we knew about the old one is history, not state. Counters and
            # the sequence carry on; the rest starts afresh.
            fresh = new_state(
                **s.limits(),
                last_seq=s.last_seq,
                newest_ts_ns=s.newest_ts_ns,
                counters=s.counters,
                host_npus=s.host_npus,  # the machine's NPUs did not change with the job
                clock_offset=s.clock_offset,  # the host's clock, not the process's
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

    def _host_npu_sample(self, e: ev.HostNpuSample) -> None:
        fold_host_npu_sample(self.state.host_npus, e)

    def _device_set(self, e: ev.DeviceSet) -> None:
        if e.ret != 0:
            # A failed set_device (set_device(99)) is a failed call, not a device: it
            # shows with the failed calls and in the Logs; a device we know notes it.
            known = self.state.devices.get(e.device_id)
            if known is not None:
                known.set_ret = e.ret
            return
        d = self._device(e.device_id)
        d.set_ret = e.ret
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
            self.state.context_history.discard(e.context)
            return
        if current is not None:  # a handle reused after destroy: its streams are gone too
            forget_context(self.state, e.context)
        self.state.contexts[e.context] = ContextState(e.context, e.device_id, e.is_default)

    def _context_destroyed(self, e: ev.ContextDestroyed) -> None:
        ctx = self.state.contexts.get(e.context)
        if ctx is None or e.ret != 0:
            return
        ctx.destroyed = True
        for handle in list(ctx.streams):
            stream = self.state.streams.get((e.context, handle))
            if stream is not None and stream.state != STREAM_DESTROYED:
                self._destroyed(stream)
        gone = self.state.context_history.add(e.context)
        if gone is not None:
            forget_context(self.state, gone)

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
            ctx.streams[e.stream] = None
            return  # snapshot of a stream we know: keep its syncs and errors
        # A handle reused after destroy: forget destroyed streams with this handle in
        # other contexts; live ones, such as the other contexts' default streams
        # (handle 0), stay.
        for other_key in list(s.stream_handles.get(e.stream, ())):
            if other_key != key and s.streams[other_key].state == STREAM_DESTROYED:
                forget_stream(self.state, other_key)
        # Forgotten and added again: the indexes stay in creation order
        # (resolve_stream's step 3).
        if old is not None:
            forget_stream(self.state, key)
        add_stream(
            self.state,
            ctx,
            StreamState(e.stream, e.stream_id, e.device_id, e.context, e.priority, e.flags),
        )

    def _stream_destroyed(self, e: ev.StreamDestroyed) -> None:
        if e.stream == DEVICE_SYNC or e.ret != 0:
            return
        stream = self.resolve_stream(e.stream)
        if stream is not None and stream.state != STREAM_DESTROYED:
            self._destroyed(stream)

    def _model_loaded(self, e: ev.ModelLoaded) -> None:
        self._device(e.device_id)
        old = self.state.models.get(e.model_id)
        if e.seq == 0 and old is not None and old.name == e.name:
            # Snapshot of a model we know: keep its run counts. (An unloaded one comes
            # back with its unload right after it, from the agent's history.)
            old.loaded = True
            self.state.model_history.discard(e.model_id)
            return
        self.state.model_history.discard(e.model_id)
        self.state.models[e.model_id] = ModelState(e.model_id, e.device_id, e.name, e.op_count)

    def _model_unloaded(self, e: ev.ModelUnloaded) -> None:
        model = self.state.models.get(e.model_id)
        if model is not None and e.ret == 0:
            model.loaded = False
            model.running = 0
            model.pending.clear()
            for stream in pending_streams(self.state, None):
                if any(m == e.model_id for m, _ in stream.pending_executes):
                    stream.pending_executes = [
                        p for p in stream.pending_executes if p[0] != e.model_id
                    ]
                    refresh_stream(self.state, stream)
            gone = self.state.model_history.add(e.model_id)
            if gone is not None:
                del self.state.models[gone]

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
            refresh_stream(self.state, stream)

    def _execute_end(self, e: ev.ExecuteEnd) -> None:
        # Counted from the End alone (most calls never get a Begin).
        start = e.ts_ns - e.duration_ns
        model = self.state.models.get(e.model_id)
        if model is not None:
            model.executions += 1
            model.last_duration_ns = e.duration_ns
            if e.ret != 0:
                note_failed_run(model, model.executions)
            if model.pending:
                mine = [i for i, (h, _) in enumerate(model.pending) if h == e.stream]
                found = closest([model.pending[i][1] for i in mine], start, e.ts_ns)
                if found is not None:
                    del model.pending[mine[found]]
                    model.running = len(model.pending)
            note_end(model.recent_ends, (e.stream, start), e.duration_ns)
            if not e.stream and self.state.awaiting_execution:
                awaiting = len(self.state.awaiting_execution)
                synchronous_end(self.state, model, e)
                if len(self.state.awaiting_execution) != awaiting:
                    self._named_exceptions = True
        if not e.stream:
            return
        # The stream holding this model's pending Begin, else the usual resolution.
        waiting = (
            [
                st
                for st in pending_streams(self.state, e.stream)
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
            stream_failed(self.state, stream, e.ret)
        elif model is not None:
            note_launch(stream, model)
        pending = stream.pending_executes
        if not pending:
            return
        mine = [i for i, (m, _) in enumerate(pending) if m == e.model_id]
        found = closest([pending[i][1] for i in mine], start, e.ts_ns)
        if found is not None:
            del pending[mine[found]]
            refresh_stream(self.state, stream)

    def _exception(self, e: ev.AclException) -> None:
        s = self.state
        if e.seq == 0:
            # From the agent's history (a late or reconnecting viewer): the History
            # event after it carries the totals and the per-stream counts.
            key = exception_key(e)
            if any(exception_key(x) == key for x in s.exceptions):
                return
        stream = self.stream_by_id(e.device_id, e.stream_id)
        e = typed(s, e)
        if e.seq != 0:
            e = attribute_exception(s, e, stream)
        s.exceptions_total += 1
        s.exceptions_dropped += ring_add(s.exceptions, e, s.exception_limit)
        if e.seq == 0:
            return
        if failed_exception_run(s, e) and stream is not None:
            stream.unsynced_launch = None  # the failed synchronize to come is this failure
        device = s.devices.get(e.device_id)
        if device is not None:
            device.exceptions += 1
        if stream is not None:
            stream.exceptions += 1
            stream.last_error = e.error_code

    def _triage(self, e: ev.Triage) -> None:
        triages = self.state.triages
        triages[(e.exception_ts_ns, e.device_id, e.stream_id, e.task_id)] = e
        while len(triages) > self.state.exception_limit:
            del triages[next(iter(triages))]

    def _clock_offset(self, e: ev.ClockOffset) -> None:
        self.state.clock_offset = e

    def _history(self, e: ev.History) -> None:
        fold_history(self, e)

    def _goodbye(self, e: ev.Goodbye) -> None:
        self.state.goodbye = e

    def _profiling_state(self, e: ev.ProfilingState) -> None:
        self.state.profiling = e

    def _op_timing(self, e: ev.OpTiming) -> None:
        if e.op_type:
            learned_op_type(self.state, e.op_name, e.op_type)
        fold_op_timing(self.state, e)

    def _tx(self, e: ev.TxMark | ev.TxRange) -> None:
        fold_tx(self.state, e)

    def runtime_message(self, exception: ev.AclException) -> str:
        """What the runtime said about the failed call that met ``exception``
        (:func:`aclmon.store.state.runtime_message`)."""
        return runtime_message(self.state, exception)

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
