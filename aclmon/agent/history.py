"""What happened since the agent started, for viewers that connect late.

A viewer that connects after 100 executions and 4 AI Core exceptions must not
see a clean job. The publisher hands every batch of events to
:meth:`History.observe` on its own thread, in queue order, before anyone gets
it; the history counts what matters there (nothing runs on the job's threads)
and the snapshot a new subscriber gets ends with :meth:`History.snapshot_events`:
the last N exceptions, failed calls, log lines and dump files (seq 0) and one
:class:`History` event with the totals. Because counting and the snapshot both run on the publisher thread,
the snapshot covers exactly the events before it and the subscriber receives
every later one: nothing is counted twice or missed.

The observer also completes each exception with the model and the execution
that raised it:

* a synchronous ``mdl.execute`` still running when the callback fired
  (``model_id`` found by the exception capture on the job's stack): its
  number is the model's executions ended so far plus one, exact because every
  earlier execution ended (and was queued) before this one began;
* otherwise the execution last launched on the exception's stream
  (``execute_async``, whose End precedes the failure it later causes: the
  capture waits for the End of a launch still returning when it fires).

Counting rules (docs/agent.md): a model execution failed when its execute
failed, when an exception was attributed to it, or when the synchronize of the
stream it was last launched on failed; each failed execution counts once,
wherever its failure surfaced. On a stream, ``errors`` counts failed
synchronizes and executes, exceptions are counted apart, so one exception and
the failed synchronize it causes are not two errors. Each device adds up the
errors of its streams (destroyed ones too, which the snapshot no longer lists),
its exceptions and its streams that ever failed.

The snapshot's :class:`History` also says which events it counts
(``through_seq``: every event numbered up to it), so a viewer that gets the
snapshot and the events by different ways (NATS: the last snapshot from a
store, the events from a replay) never counts one twice.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterator
from itertools import islice, repeat
from operator import itemgetter
from typing import Any

from aclmon.acl_constants import ACL_SUCCESS
from aclmon.agent.hot import EXECUTE_RECORD, SYNC_STREAM_RECORD
from aclmon.bus.records import Record, builder_of
from aclmon.events import (
    AclException,
    CallFailed,
    ContextDestroyed,
    DumpFileSeen,
    ExecuteEnd,
    History,
    LogLine,
    ModelLoaded,
    ModelUnloaded,
    StreamCreated,
    StreamDestroyed,
    StreamSynchronized,
    Triage,
)
from aclmon.events.wire import encode_columns

log = logging.getLogger("aclmon.bus")

#: exceptions and dump announcements kept for late viewers, by default
DEFAULT_RECENT = 256
#: streams and models remembered (a job cannot grow the snapshot without bound)
MAX_TRACKED = 4096
#: exceptions waiting for the model the capture saw on the job's stack
MAX_PENDING = 1024
#: record builders whose layout the history remembers (they are made when hooks install)
MAX_BUILDERS = 256
#: the shortest run of successful synchronize_streams whose frames are made by column
#: (a shorter one costs less one record at a time)
BULK_RUN = 8
#: failed executions remembered per model, so a failure seen twice (an exception,
#: then the failed synchronize it causes) counts once
FAILED_RUNS_KEPT = 64
#: unloaded models whose figures the snapshot still carries (newest kept)
UNLOADED_KEPT = 64

_ITEM3 = itemgetter(3)
#: takes an iterator to its end, keeping nothing
_consume = deque


class _Model:
    __slots__ = ("executions", "failed_runs", "failures", "loaded", "name")

    def __init__(self, loaded: ModelLoaded) -> None:
        self.loaded = loaded  # the event that loaded it (re-sent for an unloaded model)
        self.name = loaded.name
        self.executions = 0
        self.failures = 0
        self.failed_runs: deque[int] = deque(maxlen=FAILED_RUNS_KEPT)

    def failed(self, execution: int) -> None:
        """Execution number ``execution`` failed (counted once, wherever it surfaced)."""
        if execution > 0 and execution not in self.failed_runs:
            self.failed_runs.append(execution)
            self.failures += 1


class _Stream:
    __slots__ = (
        "device_id", "errors", "last_error", "last_launch", "stream_id", "syncs", "unsynced",
    )  # fmt: skip

    def __init__(self, device_id: int, stream_id: int) -> None:
        self.device_id = device_id
        self.stream_id = stream_id
        self.syncs = 0
        self.errors = 0
        self.last_error = 0
        #: (model_id, execution number) of the newest execute_async on this stream
        self.last_launch: tuple[int, int] | None = None
        #: the same until a synchronize of the stream succeeds: a failing one is its failure
        self.unsynced: tuple[int, int] | None = None


class HistoryKeeper:
    """Bounded history of one job; see the module docstring. Publisher thread only,
    except :meth:`note_running_model`, which is one dict store (atomic)."""

    def __init__(self, recent: int = DEFAULT_RECENT) -> None:
        if recent < 0:
            raise ValueError("the number of recent exceptions kept must not be negative")
        self.since_ns = time.time_ns()
        self.models: dict[int, _Model] = {}
        #: models the job unloaded, with their figures: a viewer that joins after (or
        #: after the job ended) still counts their executions and failures
        self.unloaded: dict[int, tuple[_Model, ModelUnloaded]] = {}
        self.streams: dict[int, _Stream] = {}  # stream handle -> figures
        #: (device_id, stream_id) -> exceptions reported on it
        self.stream_exceptions: dict[tuple[int, int], int] = {}
        #: device_id -> [errors, exceptions, streams with errors] (see the module docstring)
        self.devices: dict[int, list[int]] = {}
        #: the number of the last event counted (the snapshot's ``through_seq``)
        self.last_seq = 0
        self.exceptions: deque[AclException] = deque(maxlen=recent)
        self.dumps: deque[DumpFileSeen] = deque(maxlen=recent)
        #: failed calls with the runtime's message: what a late viewer needs to say
        #: why an exception's synchronize failed
        self.call_failures: deque[CallFailed] = deque(maxlen=recent)
        #: log lines (the job's plog warnings and errors, the agent's own): the
        #: lines near an exception, for a viewer that was not there
        self.logs: deque[LogLine] = deque(maxlen=recent)
        #: why each recent exception happened (the live triage), re-sent after them
        self.triages: deque[Triage] = deque(maxlen=recent)
        self.exceptions_total = 0
        self.dumps_total = 0
        self.call_failures_total = 0
        #: (ts_ns, task_id) of an exception -> model_id running synchronously when it fired
        self._running: dict[tuple[int, int], int] = {}
        self._handlers: dict[type, Any] = {
            ExecuteEnd: self._execute_end,
            StreamSynchronized: self._synchronized,
            AclException: self._exception,
            DumpFileSeen: self._dump,
            CallFailed: self._call_failed,
            LogLine: self.logs.append,
            Triage: self.triages.append,
            ModelLoaded: self._model_loaded,
            ModelUnloaded: self._model_unloaded,
            StreamCreated: self._stream_created,
            StreamDestroyed: self._stream_destroyed,
            ContextDestroyed: self._context_destroyed,
        }
        self._contexts: dict[int, list[int]] = {}  # context -> stream handles
        #: record builder (or its number) -> its ``record_layout`` (0: none the history
        #: counts itself)
        self._layouts: dict[Any, int] = {}
        #: the same builder -> its ``wire`` (the array of a record, no event built)
        self._wires: dict[Any, Any] = {}

    # ------------------------------------------------------------ job threads
    def note_running_model(self, ts_ns: int, task_id: int, model_id: int) -> None:
        """The exception capture saw ``model_id`` executing synchronously when the
        exception (``ts_ns``, ``task_id``) fired."""
        if len(self._running) < MAX_PENDING:
            self._running[(ts_ns, task_id)] = model_id

    # ------------------------------------------------------------ publisher thread
    def observe(self, batch: list[Any]) -> list[Any]:
        """Count one batch; returns it with each exception completed (model, execution)."""
        get = self._handlers.get
        for index, event in enumerate(batch):
            handler = get(type(event))
            if handler is not None:
                replaced = handler(event)
                if replaced is not None:
                    batch[index] = replaced
        for event in reversed(batch):  # numbered in order; snapshot-like ones carry 0
            if event.seq:
                self.last_seq = max(self.last_seq, event.seq)
                break
        return batch

    def fold(self, records: list[Record], counter: Iterator[int]) -> int:
        """Take records nobody will receive (the publisher calls this instead of building
        and observing their events while no viewer listens): the history and the
        numbering end as :func:`~aclmon.bus.records.build_records` and :meth:`observe`
        would leave them, in order, but a successful synchronize or execute (the hot
        records, :mod:`aclmon.agent.hot`) is counted from its record, its event never
        built; it still takes its number. Returns how many records failed to build."""
        return self._take(records, counter, None)[0]

    def observe_records(
        self, records: list[Record], counter: Iterator[int]
    ) -> tuple[list[Any], int, int]:
        """Take records whose events viewers will receive (the publisher calls this in
        place of building and observing their events, then packing them): the history
        and the numbering end as :meth:`fold` leaves them, and every event comes back, in
        order, for the wire: segments that are lists of arrays (``(kind, seq, ts_ns,
        ...)``, :func:`aclmon.events.wire.encode_arrays`) or buffers of frames already
        made (:func:`aclmon.events.wire.encode_segments`). A successful synchronize or
        execute goes from its record to its array, no event built: plain tuples of
        numbers, which the GC stops tracking at once, where events would be promoted to
        the old generations as they wait to be sent; a run of synchronize_streams goes
        from the records to their frames by column, no array made
        (:func:`aclmon.events.wire.encode_columns`). Returns the segments, how many
        events they hold and how many records failed to build."""
        segments: list[Any] = []
        failed, packed = self._take(records, counter, segments)
        count = packed + sum(len(s) for s in segments if type(s) is list)
        return segments, count, failed

    def _take(
        self, records: list[Record], counter: Iterator[int], segments: list[Any] | None
    ) -> tuple[int, int]:
        """:meth:`fold` (``segments`` None) or :meth:`observe_records` (the events
        appended to ``segments``): how many records failed to build, and how many events
        went into ``segments`` as frames."""
        streams_get = self.streams.get
        models_get = self.models.get
        layout_of = self._layouts.get
        handler_of = self._handlers.get
        wire_of = self._wires.get
        arrays: list[tuple[Any, ...]] = []
        observing = segments is not None
        append = arrays.append if observing else None
        failed = packed = last_seq = 0
        size = len(records)
        taking = iter(records)
        #: with a viewer (observing), the index of the record after this one
        index = 0
        key: Any
        event: Any
        for record in taking:
            if observing:
                index += 1
            if type(record) is not tuple:  # a ready event
                key, layout = None, 0
            else:
                key = record[0]
                known = layout_of(key)
                layout = self._learn(key) if known is None else known
            # A hot record's last item is the call's result. `is`: the int 0 and nothing
            # else (not None, False or a numpy 0): any other result is built as an event.
            if layout and record[-1] is ACL_SUCCESS:
                if append is None:
                    last_seq = next(counter)  # its number; its event is never built
                else:
                    # a long run of synchronizes (a loop of them) goes to the wire in bulk
                    end = index
                    while layout == SYNC_STREAM_RECORD and end < size:
                        following = records[end]
                        if (
                            type(following) is not tuple
                            or following[0] != key
                            or following[-1] is not ACL_SUCCESS
                        ):
                            break
                        end += 1
                    if end - index >= BULK_RUN - 1:
                        run = records[index - 1 : end]
                        _consume(islice(taking, end - index), maxlen=0)
                        index = end
                        last_seq, frames = self._take_run(key, run, counter, arrays)
                        if frames is not None:
                            if arrays:
                                segments.append(arrays)  # type: ignore[union-attr]
                                arrays = []
                                append = arrays.append
                            segments.append(frames)  # type: ignore[union-attr]
                            packed += len(run)
                        continue
                    array = wire_of(key)[0](counter, record)  # type: ignore[index]  # _learn
                    last_seq = array[1]
                    append(array)
                if layout == SYNC_STREAM_RECORD:
                    stream = streams_get(record[3])
                    if stream is not None:
                        stream.syncs += 1
                        stream.unsynced = None  # a successful synchronize settles the launch
                    continue
                model = models_get(record[3])  # EXECUTE_RECORD, the other one _learn knows
                if model is not None:
                    model.executions += 1
                    if record[4]:
                        stream = streams_get(record[4])
                        if stream is not None:
                            stream.last_launch = stream.unsynced = (record[3], model.executions)
                continue
            try:
                event = record if key is None else builder_of(key)(counter, record)
            except Exception as exc:
                failed += 1
                if failed == 1:
                    log.warning("event record dropped: %s: %s", type(exc).__name__, exc)
                continue
            if event is None:
                continue
            handler = handler_of(type(event))
            if handler is not None:
                replaced = handler(event)
                if replaced is not None:
                    event = replaced
            if event.seq:  # snapshot-like events carry 0
                last_seq = event.seq
            if append is not None:
                append(event.KIND_TUPLE + event)
        if observing and arrays:
            segments.append(arrays)  # type: ignore[union-attr]
        if last_seq:
            self.last_seq = max(self.last_seq, last_seq)
        return failed, packed

    def _take_run(
        self,
        key: Any,
        run: list[Record],
        counter: Iterator[int],
        arrays: list[tuple[Any, ...]],
    ) -> tuple[int, bytes | None]:
        """Count a run of successful synchronize_streams of the builder ``key`` from
        their records (their events are never built) and make their frames by column
        (the builder's ``columns``, :func:`aclmon.events.wire.encode_columns`: C-level
        maps and slice copies, no Python code per record), or append their arrays to
        ``arrays`` when some value is not a plain int. Returns the last number they
        took, and the frames."""
        count = len(run)
        wire, make_columns = self._wires[key]
        columns = make_columns(counter, run)
        frames = None
        if columns is None:  # a stream handle msgpack packs its own way: array by array
            arrays.extend([wire(counter, record) for record in run])
            last = arrays[-1][1]
        else:
            last = columns[1][-1]
            frames = encode_columns(columns, count)
            if frames is None:  # beyond one int form per column: the arrays, one by one
                arrays.extend(
                    zip(*(repeat(c, count) if type(c) is int else c for c in columns), strict=True)
                )
        streams_get = self.streams.get
        handles = list(map(_ITEM3, run))
        first = handles[0]
        # one stream (the usual run): one update; else one per record
        syncs = [(first, count)] if handles.count(first) == count else zip(handles, repeat(1))
        for handle, synced in syncs:
            stream = streams_get(handle)
            if stream is not None:
                stream.syncs += synced
                stream.unsynced = None  # a successful synchronize settles the launch
        return last, frames

    def _learn(self, builder: Any) -> int:
        """The layout of the records of ``builder`` (a record's first item: the builder
        or its number) if :meth:`fold` counts them, else 0."""
        if len(self._layouts) >= MAX_BUILDERS:
            self._layouts.clear()
            self._wires.clear()
        try:
            found = builder_of(builder)
        except IndexError:  # no such builder: building the record fails and counts it
            found = None
        layout = getattr(found, "record_layout", 0)
        if layout not in (SYNC_STREAM_RECORD, EXECUTE_RECORD):
            layout = 0
        self._layouts[builder] = layout
        wires = (getattr(found, "wire", None), getattr(found, "columns", None))
        self._wires[builder] = wires if layout else None
        return layout

    def snapshot_events(self) -> list[Any]:
        """Models unloaded (their load and unload), recent exceptions and their triage,
        failed calls, log lines and dump files (seq 0), then the totals."""
        events: list[Any] = []
        for model, unloaded in self.unloaded.values():
            events.append(model.loaded._replace(seq=0))
            events.append(unloaded._replace(seq=0))
        events.extend(e._replace(seq=0) for e in self.exceptions)
        events.extend(t._replace(seq=0) for t in self.triages)
        events.extend(c._replace(seq=0) for c in self.call_failures)
        events.extend(line._replace(seq=0) for line in self.logs)
        events.extend(d._replace(seq=0) for d in self.dumps)
        models = [
            value
            for model_id, m in (*self.unloaded_models(), *self.models.items())
            for value in (model_id, m.executions, m.failures)
        ]
        streams = [
            value
            for handle, st in self.streams.items()
            for value in (handle, st.syncs, st.errors, st.last_error)
        ]
        exceptions = [
            value
            for (device, stream_id), count in self.stream_exceptions.items()
            for value in (device, stream_id, count)
        ]
        devices = [
            value for device, figures in self.devices.items() for value in (device, *figures)
        ]
        events.append(
            History(
                0,
                time.time_ns(),
                self.since_ns,
                tuple(models),
                tuple(streams),
                tuple(exceptions),
                self.exceptions_total,
                self.dumps_total,
                self.call_failures_total,
                tuple(devices),
                self.last_seq,
            )
        )
        return events

    def unloaded_models(self) -> list[tuple[int, _Model]]:
        return [(model_id, model) for model_id, (model, _) in self.unloaded.items()]

    def _device(self, device_id: int) -> list[int] | None:
        figures = self.devices.get(device_id)
        if figures is None and len(self.devices) < MAX_TRACKED:
            figures = self.devices[device_id] = [0, 0, 0]
        return figures

    def _stream_failed(self, stream: _Stream, code: int) -> None:
        device = self._device(stream.device_id)
        if device is not None:
            device[0] += 1
            if not stream.errors:
                device[2] += 1
        stream.errors += 1
        stream.last_error = code

    def _synchronized_launch(self, stream: _Stream, ret: int) -> None:
        """A synchronize of ``stream`` returned ``ret``: if it failed, so did the
        execution launched since its last successful one; either way that one is
        settled (the store's rule too: aclmon/store/attribution.py)."""
        launch, stream.unsynced = stream.unsynced, None
        if launch is not None and ret != 0:
            model = self.models.get(launch[0])
            if model is not None:
                model.failed(launch[1])

    # ------------------------------------------------------------ handlers
    def _model_loaded(self, e: ModelLoaded) -> None:
        if e.model_id in self.models or len(self.models) < MAX_TRACKED:
            self.models[e.model_id] = _Model(e)
            self.unloaded.pop(e.model_id, None)  # the id is the new model's now

    def _model_unloaded(self, e: ModelUnloaded) -> None:
        if e.ret == 0:
            model = self.models.pop(e.model_id, None)
            if model is not None:
                self.unloaded.pop(e.model_id, None)
                self.unloaded[e.model_id] = (model, e)
                while len(self.unloaded) > UNLOADED_KEPT:
                    del self.unloaded[next(iter(self.unloaded))]

    def _stream_created(self, e: StreamCreated) -> None:
        if e.stream in self.streams or len(self.streams) < MAX_TRACKED:
            self.streams[e.stream] = _Stream(e.device_id, e.stream_id)
            self._contexts.setdefault(e.context, []).append(e.stream)

    def _stream_destroyed(self, e: StreamDestroyed) -> None:
        if e.ret == 0:
            self.streams.pop(e.stream, None)

    def _context_destroyed(self, e: ContextDestroyed) -> None:
        if e.ret == 0:
            for handle in self._contexts.pop(e.context, []):
                self.streams.pop(handle, None)

    def _execute_end(self, e: ExecuteEnd) -> None:
        model = self.models.get(e.model_id)
        if model is not None:
            model.executions += 1
            if e.ret != 0:
                model.failed(model.executions)
        if e.stream:
            stream = self.streams.get(e.stream)
            if stream is not None:
                if e.ret != 0:
                    self._stream_failed(stream, e.ret)
                elif model is not None:
                    stream.last_launch = stream.unsynced = (e.model_id, model.executions)

    def _synchronized(self, e: StreamSynchronized) -> None:
        stream = self.streams.get(e.stream)
        if stream is None:
            return  # a device-level synchronize, or a stream we do not know
        stream.syncs += 1
        if e.ret != 0:
            self._stream_failed(stream, e.ret)
        self._synchronized_launch(stream, e.ret)

    def _exception(self, e: AclException) -> AclException:
        self.exceptions_total += 1
        key = (e.device_id, e.stream_id)
        if key in self.stream_exceptions or len(self.stream_exceptions) < MAX_TRACKED:
            self.stream_exceptions[key] = self.stream_exceptions.get(key, 0) + 1
        device = self._device(e.device_id)
        if device is not None:
            device[1] += 1
        stream = next(
            (st for st in self.streams.values() if (st.device_id, st.stream_id) == key), None
        )
        completed, model = self._attribute(e, stream)
        if model is not None:
            model.failed(completed.execution)
            if stream is not None:
                stream.unsynced = None  # the failed synchronize to come is this same failure
        self.exceptions.append(completed)
        return completed

    def _attribute(
        self, e: AclException, stream: _Stream | None
    ) -> tuple[AclException, _Model | None]:
        """``e`` (reported on ``stream``) with the model execution that raised it, and
        that model (None: unknown)."""
        if e.model_name:  # named by whoever sent it
            named = [m for m in self.models.values() if m.name == e.model_name]
            return e, named[0] if len(named) == 1 else None
        running = self._running.pop((e.ts_ns, e.task_id), None)
        if running is not None:
            model = self.models.get(running)
            if model is not None:
                return e._replace(model_name=model.name, execution=model.executions + 1), model
        if stream is not None and stream.last_launch is not None:
            model_id, number = stream.last_launch
            model = self.models.get(model_id)
            if model is not None:
                return e._replace(model_name=model.name, execution=number), model
        return e, None

    def _call_failed(self, e: CallFailed) -> None:
        self.call_failures_total += 1
        self.call_failures.append(e)

    def _dump(self, e: DumpFileSeen) -> None:
        self.dumps_total += 1
        self.dumps.append(e)
