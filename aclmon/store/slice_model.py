"""The slice model: one source's events, in order, as timeline items
(:mod:`aclmon.store.slices`), handed to a sink as soon as each is complete.

:class:`SliceModel` keeps only bounded state of its own, so an export streams a
recording of any length in flat memory, and a view's index holds what it draws:

- an operator timing is a slice on its device stream (``Stream N``);
- an execution (``mdl.execute``/``execute_async``) and a synchronize are slices
  of the host call on the host lane of the stream they were about
  (``NPU d Stream N calls``; the events do not say which thread called, a slow
  call's Begin does and it goes into the args); ``synchronize_device`` on the
  device's lane;
- an msproftx range is a slice on the lane of its thread (msproftx process), or
  an async slice when it closed on another thread; a mark an instant there;
- an AI Core exception and an overflow are instants on the stream they happened
  on, with operator, task, stream and dump path; a failed call an instant on its
  thread's lane (CANN process), a warning or error of the job's log an instant
  on the log lane;
- device and host samples are counters;
- the launch of an execution flows to its first operator.

Events name streams by handle; which device and stream id a handle means is the
store's rule (:meth:`aclmon.store.Store.resolve_stream`), applied by a private
:class:`~aclmon.store.Store` that folds only the events that create, select and
destroy contexts, streams and models. Operator timings are placed by
:mod:`aclmon.store.slice_ops`.
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from aclmon import events as ev
from aclmon.acl_constants import error_name, error_text
from aclmon.events import DEVICE_SYNC
from aclmon.store.fold import Store
from aclmon.store.pairing import SAME_CALL_NS
from aclmon.store.slice_dumps import DUMP_WAIT_NS, DumpLinks, OverflowItem
from aclmon.store.slice_lanes import LaneBook
from aclmon.store.slice_ops import OP_WAIT_NS, Execution, Operators
from aclmon.store.slices import (
    EXCEPTION,
    EXECUTION,
    FAILED_CALL,
    HOST,
    LANE_LIMIT,
    LOG,
    OVERFLOW,
    SORT_CANN,
    SORT_CPU_USAGE,
    SORT_MEMORY_USAGE,
    SORT_NPU_MEM,
    SYNCHRONIZE,
    TEXT_LIMIT,
    TX_MARK,
    TX_RANGE,
    UNFINISHED,
    UNKNOWN_DEVICE,
    Args,
    CounterSample,
    Flow,
    Instant,
    Lane,
    Process,
    Slice,
    SourceLabel,
    TimelineSink,
    clip_text,
    finite_number,
)

_new_tuple = tuple.__new__  # a NamedTuple made without its Python-level __new__

#: slow calls (announced Begins) waiting for their End, per source
PENDING_CALLS = 256
#: the log levels shown (debug and info lines are too many to be markers)
LOG_LEVELS = frozenset({"warning", "error"})

#: the C API of each call (msprof names its CANN slices ``Level@api``)
ACL_EXECUTE = "AscendCL@aclmdlExecute"
ACL_EXECUTE_ASYNC = "AscendCL@aclmdlExecuteAsync"
ACL_SYNC_STREAM = "AscendCL@aclrtSynchronizeStream"
ACL_SYNC_STREAM_TIMEOUT = "AscendCL@aclrtSynchronizeStreamWithTimeout"
ACL_SYNC_DEVICE = "AscendCL@aclrtSynchronizeDevice"
ACL_SYNC_DEVICE_TIMEOUT = "AscendCL@aclrtSynchronizeDeviceWithTimeout"

#: the kinds the private store folds: what creates, selects and destroys the
#: objects that stream handles and model ids name
_STRUCTURE = frozenset(
    {
        ev.Hello,
        ev.DeviceSet,
        ev.DeviceReset,
        ev.ContextCreated,
        ev.ContextDestroyed,
        ev.ContextCurrent,
        ev.StreamCreated,
        ev.StreamDestroyed,
        ev.ModelLoaded,
        ev.ModelUnloaded,
    }
)


class _PendingCall(NamedTuple):
    """A slow call's announced Begin, waiting for its End."""

    start_ns: int
    thread_id: int | None
    event: Any


class SliceModel:
    """Folds one source's events into timeline items for ``sink`` (see the module
    docstring). ``source`` says how its processes are labelled (a fleet's rank);
    ``flow_ids`` numbers the flows (share one counter between the models of a
    fleet so that ids stay unique in one trace)."""

    def __init__(
        self,
        sink: TimelineSink,
        *,
        source: SourceLabel | None = None,
        flow_ids: Iterator[int] | None = None,
    ) -> None:
        self.sink = sink
        self.source = source or SourceLabel()
        self.book = LaneBook(self.source)
        self._flow_ids = flow_ids if flow_ids is not None else itertools.count(1)
        self._store = Store(exception_limit=1, dump_limit=1, log_limit=1, op_limit=1)
        self._resolved: dict[tuple[int, int | None], tuple[int, int] | None] = {}
        self._execution_counts: dict[int, int] = {}
        self._pending_calls: dict[tuple[str, int], list[_PendingCall]] = {}
        self._recent_call_starts: deque[int] = deque(maxlen=64)
        self._dumps = DumpLinks()
        self.operators = Operators(self.book, self._slice, self._model, self._flow)
        #: the latest event time seen
        self.last_ns = 0
        #: items handed to the sink, by kind (samples as "counter", flows as "flow")
        self.counts: dict[str, int] = {}
        self._handlers: dict[type, Callable[[Any], None]] = {
            ev.OpTiming: lambda e: self.operators.timing(e, self.last_ns),
            ev.ExecuteEnd: self._execute_end,
            ev.StreamSynchronized: self._synchronized,
            ev.StreamSyncBegin: self._sync_begin,
            ev.ExecuteBegin: self._execute_begin,
            ev.TxRange: self._tx_range,
            ev.TxMark: self._tx_mark,
            ev.AclException: self._exception,
            ev.DumpFileSeen: self._dump_file,
            ev.DeviceSample: self._device_sample,
            ev.HostSample: self._host_sample,
            ev.CallFailed: self._call_failed,
            ev.LogLine: self._log_line,
        }

    # ------------------------------------------------------------ public
    def apply(self, event: ev.Event) -> None:
        ts: int = event.ts_ns
        if ts > self.last_ns:
            self.last_ns = ts
            deadline, held = self.operators.deadline, self._dumps.held
            if (deadline is not None and deadline < ts) or (
                held and held[0].instant.ts_ns + DUMP_WAIT_NS < ts
            ):
                self.settle(ts)
        kind = type(event)
        handler = self._handlers.get(kind)
        if handler is not None:
            handler(event)
        elif kind in _STRUCTURE:
            self._structure(event)

    def apply_many(self, events: Iterable[ev.Event]) -> None:
        for event in events:
            self.apply(event)

    def settle(self, now_ns: int) -> None:
        """Hands over what has waited long enough by ``now_ns``: operator timings
        no later execution claimed within a second, exceptions whose dump did not
        come within ten. Events do this as they come; a live view whose job has
        gone quiet calls it on its timer with the source's clock."""
        held = self._dumps.held
        if held and held[0].instant.ts_ns + DUMP_WAIT_NS < now_ns:
            self._emit_all(self._dumps.release(now_ns - DUMP_WAIT_NS))
        deadline = self.operators.deadline
        if deadline is not None and deadline < now_ns:
            self.operators.place_before(now_ns - OP_WAIT_NS)

    def learn_dumps(self, dumps: Iterable[ev.DumpFileSeen]) -> None:
        """Exception dump files known beforehand (a dump directory given with a
        recording): exceptions name their dumps from the start."""
        for dump in dumps:
            if dump.kind == "exception-dump":
                self._dumps.note_exception_dump(dump)

    def finish(self) -> None:
        """The source ended: operator timings go where they are known to belong,
        exceptions still waiting for a dump go without, and slow calls still
        running end at the last event seen."""
        self.operators.place_before(None)
        self._emit_all(self._dumps.release(None))
        for (what, _handle), calls in sorted(self._pending_calls.items(), key=lambda kv: kv[0]):
            for call in calls:
                self._unfinished(what, call)
        self._pending_calls.clear()

    @property
    def lanes(self) -> list[Lane]:
        """Every lane made so far, in display order."""
        return self.book.lanes

    def stream_lane(self, device_id: int, stream_id: int) -> Lane | None:
        """The lane of a device stream (where an exception on it is), if made yet."""
        return self.book.find_stream(device_id, stream_id)

    # ------------------------------------------------------------ emitting
    def _slice(self, lane: Lane, start: int, end: int, name: str, kind: str, args: Args,
               event: Any) -> Slice:  # fmt: skip
        if end < start:
            end = start
        guard = lane.guard
        if guard is not None and not guard.admit(start, end):
            lane = self.book.overlapping(lane)
        item: Slice = _new_tuple(Slice, (lane, start, end, name, kind, args, event))
        self.sink.slice(item)
        self.counts[kind] = self.counts.get(kind, 0) + 1
        return item

    def _emit(self, item: Instant) -> None:
        self.sink.instant(item)
        self.counts[item.kind] = self.counts.get(item.kind, 0) + 1

    def _emit_all(self, items: list[Instant]) -> None:
        for item in items:
            self._emit(item)

    def _counter(self, process: Process, ts: int, name: str, values: dict[str, float]) -> None:
        if values:
            self.sink.counter(CounterSample(process, ts, name, values))
            self.counts["counter"] = self.counts.get("counter", 0) + 1

    def _flow(self, source: Lane, source_ns: int, target: Lane, target_ns: int) -> None:
        self.sink.flow(Flow(next(self._flow_ids), source, source_ns, target, target_ns))
        self.counts["flow"] = self.counts.get("flow", 0) + 1

    # ------------------------------------------------------------ structure
    def _structure(self, event: ev.Event) -> None:
        self._store.apply(event)
        self._resolved.clear()
        if isinstance(event, ev.Hello):
            if self.source.rank < 0 and event.rank >= 0:
                self.source.rank = event.rank
            if not self.source.name and event.argv:
                self.source.name = os.path.basename(str(event.argv[0]))[:TEXT_LIMIT]

    def _resolve(self, handle: int, device_id: int | None) -> tuple[int, int] | None:
        """(device, stream id) of the stream a handle-only event is about."""
        key = (handle, device_id)
        if key in self._resolved:
            return self._resolved[key]
        stream = self._store.resolve_stream(handle, device_id=device_id)
        found = (stream.device_id, stream.stream_id) if stream is not None else None
        if len(self._resolved) < LANE_LIMIT:
            self._resolved[key] = found
        return found

    def _model(self, model_id: int) -> tuple[int, str]:
        model = self._store.state.models.get(model_id)
        return (model.device_id, model.name) if model is not None else (UNKNOWN_DEVICE, "")

    def _calls_about(self, handle: int, device_id: int | None) -> tuple[Lane, int, int | None]:
        """The host lane of calls about stream ``handle``; its device and stream id."""
        found = self._resolve(handle, device_id)
        if found is not None:
            device, stream_id = found
            return self.book.calls(device, stream_id), device, stream_id
        device = device_id if device_id is not None and device_id >= 0 else UNKNOWN_DEVICE
        return self.book.calls(device, -1, handle), device, None

    def _device_calls(self, thread_id: int | None) -> Lane:
        device = self._store.sync_device(thread_id)
        return self.book.calls(device.device_id if device is not None else UNKNOWN_DEVICE, -1)

    # ------------------------------------------------------------ slow calls
    def _begin(self, what: str, handle: int, start: int, thread: int | None, e: Any) -> None:
        if any(abs(s - start) <= SAME_CALL_NS for s in self._recent_call_starts):
            return  # its End came first
        if sum(len(c) for c in self._pending_calls.values()) < PENDING_CALLS:
            self._pending_calls.setdefault((what, handle), []).append(
                _PendingCall(start, thread, e)
            )

    def _end(self, what: str, handle: int, start: int) -> _PendingCall | None:
        """Takes back the announced Begin of this call, if there is one."""
        self._recent_call_starts.append(start)
        if not self._pending_calls:
            return None
        key = (what, handle)
        calls = self._pending_calls.get(key)
        if not calls:
            return None
        best = min(range(len(calls)), key=lambda i: abs(calls[i].start_ns - start))
        if abs(calls[best].start_ns - start) > SAME_CALL_NS:
            return None
        call = calls.pop(best)
        if not calls:
            del self._pending_calls[key]
        return call

    def _sync_begin(self, e: ev.StreamSyncBegin) -> None:
        self._begin("sync", e.stream, e.ts_ns, e.thread_id, e)

    def _execute_begin(self, e: ev.ExecuteBegin) -> None:
        self._begin("execute", e.stream, e.ts_ns, None, e)

    def _unfinished(self, what: str, call: _PendingCall) -> None:
        e = call.event
        if isinstance(e, ev.StreamSyncBegin):
            if e.stream == DEVICE_SYNC:
                lane, name = self._device_calls(call.thread_id), ACL_SYNC_DEVICE
            else:
                lane, name = self._calls_about(e.stream, None)[0], ACL_SYNC_STREAM
        else:
            device = e.device_id if e.device_id >= 0 else None
            lane = self._calls_about(e.stream, device)[0]
            name = ACL_EXECUTE_ASYNC if e.stream else ACL_EXECUTE
        args: Args = {"unfinished": True}
        if call.thread_id:
            args["Thread Id"] = call.thread_id
        self._slice(lane, call.start_ns, self.last_ns, name, UNFINISHED, args, e)

    # ------------------------------------------------------------ executions, syncs
    def _execute_end(self, e: ev.ExecuteEnd) -> None:
        model_device, model_name = self._model(e.model_id)
        hint = model_device if model_device >= 0 else None
        lane, device, stream_id = self._calls_about(e.stream, hint)
        start = e.ts_ns - e.duration_ns if e.duration_ns > 0 else e.ts_ns
        begin = self._end("execute", e.stream, start)
        counts = self._execution_counts
        number = counts.get(e.model_id, 0) + 1
        if len(counts) < LANE_LIMIT or e.model_id in counts:
            counts[e.model_id] = number
        if model_name:
            args: Args = {"Model Id": e.model_id, "Model Name": model_name, "Execution": number}
        else:
            args = {"Model Id": e.model_id, "Execution": number}
        if stream_id is not None:
            args["Physic Stream Id"] = stream_id
        if begin is not None and begin.thread_id:
            args["Thread Id"] = begin.thread_id
        if e.ret:
            args["ret"] = e.ret
            args["Error"] = error_name(e.ret)
        # stream 0 = a synchronous mdl.execute (the schema)
        name = ACL_EXECUTE_ASYNC if e.stream else ACL_EXECUTE
        call = self._slice(lane, start, e.ts_ns, name, EXECUTION, args, e)
        self.operators.executed(e.model_id, Execution(call, device, stream_id, number))

    def _synchronized(self, e: ev.StreamSynchronized) -> None:
        start = e.ts_ns - max(e.duration_ns, 0)
        begin = self._end("sync", e.stream, start)
        thread = begin.thread_id if begin is not None else None
        args: Args = {}
        timed = e.timeout_ms != -1
        if e.stream == DEVICE_SYNC:
            lane = self._device_calls(thread)
            name = ACL_SYNC_DEVICE_TIMEOUT if timed else ACL_SYNC_DEVICE
        else:
            lane, _device, stream_id = self._calls_about(e.stream, None)
            name = ACL_SYNC_STREAM_TIMEOUT if timed else ACL_SYNC_STREAM
            if stream_id is not None:
                args["Physic Stream Id"] = stream_id
        if thread:
            args["Thread Id"] = thread
        if timed:
            args["timeout_ms"] = e.timeout_ms
        if e.ret:
            args["ret"] = e.ret
            args["Error"] = error_name(e.ret)
        self._slice(lane, start, e.ts_ns, name, SYNCHRONIZE, args, e)

    # ------------------------------------------------------------ msproftx
    def _tx_range(self, e: ev.TxRange) -> None:
        args: Args = {}
        if e.thread_id:
            args["Thread Id"] = e.thread_id
        if e.end_thread_id and e.end_thread_id != e.thread_id:
            args["End Thread Id"] = e.end_thread_id
        if e.thread_id and e.thread_id == e.end_thread_id:
            lane = self.book.tx_thread(e.thread_id)
        else:
            lane = self.book.tx_across()
        self._slice(lane, e.start_ns, e.end_ns, clip_text(e.message), TX_RANGE, args, e)

    def _tx_mark(self, e: ev.TxMark) -> None:
        if e.thread_id:
            lane, args = self.book.tx_thread(e.thread_id), {"Thread Id": e.thread_id}
        else:
            lane, args = self.book.tx_unknown(), {}
        self._emit(Instant(lane, e.ts_ns, clip_text(e.message), TX_MARK, args, e))

    # ------------------------------------------------------------ exceptions, overflows
    def _exception(self, e: ev.AclException) -> None:
        args: Args = {
            "Op Name": clip_text(e.op_name),
            "OP Type": clip_text(e.op_type),
            "Task Id": e.task_id,
            "Physic Stream Id": e.stream_id,
            "Device Id": e.device_id,
            "Error Code": e.error_code,
            "Error": error_text(e.error_code),
        }
        if e.model_name:
            args["Model Name"] = clip_text(e.model_name)
        if e.execution:
            args["Execution"] = e.execution
        if e.thread_id:
            args["Thread Id"] = e.thread_id
        for key, tensors in (("Input Shapes", e.inputs), ("Output Shapes", e.outputs)):
            shapes = ";".join(",".join(map(str, t.dims)) for t in tensors[:64])
            if shapes:
                args[key] = clip_text(shapes)
        lane = self.book.stream(e.device_id, e.stream_id)
        name = clip_text(f"{error_name(e.error_code)}: {e.op_name or '?'}")
        instant = Instant(lane, e.ts_ns, name, EXCEPTION, args, e)
        path = self._dumps.exception_dump(e.device_id, e.task_id, e.stream_id)
        if path is not None:
            args["Dump Path"] = path
            self._emit(instant)
            return
        pushed = self._dumps.hold(instant, e.device_id, e.task_id, e.stream_id)
        if pushed is not None:
            self._emit(pushed)

    def _dump_file(self, e: ev.DumpFileSeen) -> None:
        if e.kind == "exception-dump":
            self._emit_all(self._dumps.note_exception_dump(e))
        elif e.kind == "overflow" and self._dumps.first_sight(e):
            item = OverflowItem(e)
            device = item.device if item.device is not None else UNKNOWN_DEVICE
            if item.stream is not None:
                lane = self.book.stream(device, item.stream)
            else:
                lane = self.book.unplaced(device)
            self._emit(Instant(lane, item.ts_ns, item.name, OVERFLOW, item.args, e))

    # ------------------------------------------------------------ samples, failures
    def _device_sample(self, e: ev.DeviceSample) -> None:
        hardware = self.book.hardware(e.device_id)
        readings = (("Cube", e.cube_util), ("Vector", e.vector_util), ("AI CPU", e.aicpu_util))
        utilization = {
            name: float(value) for name, value in readings if type(value) is int and value >= 0
        }
        self._counter(hardware, e.ts_ns, "Utilization(%)", utilization)
        for name, reading in (("Temperature(C)", e.temperature_c), ("Power(W)", e.power_w)):
            value = finite_number(reading)
            if value is not None:
                self._counter(hardware, e.ts_ns, name, {"value": value})
        used, total = finite_number(e.hbm_used), finite_number(e.hbm_total)
        if used is not None and total is not None:
            memory = self.book.process("NPU MEM", e.device_id, SORT_NPU_MEM)
            self._counter(
                memory, e.ts_ns, "HBM(MB)", {"Used": used / 2**20, "Total": total / 2**20}
            )

    def _host_sample(self, e: ev.HostSample) -> None:
        cpu = finite_number(e.cpu_percent)
        if cpu is not None:
            process = self.book.process("CPU Usage", HOST, SORT_CPU_USAGE)
            self._counter(process, e.ts_ns, "CPU Usage(%)", {"Usage": cpu})
        rss = finite_number(e.rss)
        if rss is not None:
            process = self.book.process("Memory Usage", HOST, SORT_MEMORY_USAGE)
            self._counter(process, e.ts_ns, "Memory Usage(MB)", {"RSS": rss / 2**20})

    def _log_line(self, e: ev.LogLine) -> None:
        if e.level not in LOG_LEVELS:
            return
        text = e.text.strip()
        first = text.split("\n", 1)[0]
        args: Args = {"Level": e.level, "Text": clip_text(text)}
        for key, value in (("Module", e.module), ("Location", e.location), ("File", e.log_file)):
            if value:
                args[key] = clip_text(value)
        ts = e.logged_ns if e.logged_ns > 0 else e.ts_ns  # when it was logged
        name = clip_text(f"{e.level}: {first[:120]}")
        self._emit(Instant(self.book.log(), ts, name, LOG, args, e))

    def _call_failed(self, e: ev.CallFailed) -> None:
        lane = self.book.thread("CANN", SORT_CANN, e.thread_id)
        args: Args = {"ret": e.ret, "Error": error_name(e.ret), "Thread Id": e.thread_id}
        if e.message:
            args["Message"] = clip_text(e.message)
        if e.stream != -1:
            found = self._resolve(e.stream, None)
            if found is not None:
                args["Device Id"], args["Physic Stream Id"] = found
        name = f"failed: acl.{clip_text(e.api)}"
        self._emit(Instant(lane, e.ts_ns, name, FAILED_CALL, args, e))
