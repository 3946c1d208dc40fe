"""Where the slice model puts operator timings.

Operator timings name no stream: each is given to the latest execution of its
model that started before it (the stream the model was launched on), else to a
lane of its model. A timing may come before its execution's End (they are
published from different threads), so each waits until an execution of its
model starts after it (or a second of event time has passed): then the latest
one that started before it is known.

A single-operator launch (``acl.op``: a timing of model 0, no model at all) has
no execution to wait for: it goes at once to its device's ``single operators``
lane, at the time the job's thread launched it.

A timing that names its device and stream (read from msprof's exported files)
goes at once to that stream's lane, with its task id and type; one of those
files that names its task type but no stream (a communication operator) goes
at once to its device's ``stream not known`` lane.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable

from aclmon import events as ev
from aclmon.store.slice_lanes import LaneBook
from aclmon.store.slices import (
    LANE_LIMIT,
    OPERATOR,
    TEXT_LIMIT,
    UNKNOWN_DEVICE,
    Args,
    Lane,
    Slice,
    clip_text,
    finite_number,
)

#: executions of each model remembered for placing operator timings
EXECUTION_MEMORY = 16
#: how long (event time) an operator timing waits to be placed at most
OP_WAIT_NS = 1_000_000_000
#: operator timings waiting to be placed, at most (past it the oldest are placed)
OPS_WAITING = 8192
#: AI Core metric values kept per operator slice
METRICS_KEPT = 32
#: the model id of a single-operator launch (pyACL's model ids start at 1)
SINGLE_OPERATOR = 0

#: makes a slice on a lane and hands it to the sink: (lane, start, end, name, kind, args, event)
EmitSlice = Callable[[Lane, int, int, str, str, Args, ev.Event], Slice]
#: a model id's (device, name); (UNKNOWN_DEVICE, "") when not known
ModelOf = Callable[[int], tuple[int, str]]
#: a launch -> first operator flow: (call lane, call start, operator lane, operator start)
EmitFlow = Callable[[Lane, int, Lane, int], None]


class Execution:
    """One execution of a model, remembered to place its operator timings: the lane
    they go to and the args they share are made once, for the first of them."""

    __slots__ = (
        "args", "by_type", "call", "device", "flowed", "lane", "number", "start_ns", "stream_id",
    )  # fmt: skip

    def __init__(self, call: Slice, device: int, stream_id: int | None, number: int) -> None:
        self.call = call
        self.start_ns = call.start_ns
        self.device = device
        self.stream_id = stream_id
        self.number = number
        self.flowed = False
        self.lane: Lane | None = None
        self.args: Args = {}
        #: op type -> the args its operators share
        self.by_type: dict[str, Args] = {}


class Operators:
    """The operator timings of one source: the executions they may belong to, the
    timings waiting for theirs, and where each goes (see the module docstring)."""

    def __init__(self, book: LaneBook, emit: EmitSlice, model_of: ModelOf, flow: EmitFlow) -> None:
        self.book = book
        self._emit = emit
        self._model_of = model_of
        self._flow = flow
        self._executions: dict[int, deque[Execution]] = {}
        #: model id -> operator timings waiting to be placed, with when they arrived
        self._waiting: dict[int, deque[tuple[int, ev.OpTiming]]] = {}
        self._count = 0
        #: when the oldest waiting timing has waited long enough (None: none waits)
        self.deadline: int | None = None

    def executed(self, model_id: int, execution: Execution) -> None:
        """An execution of ``model_id`` ended: the timings that started before it
        began are placed (it came after them), and it is remembered for the rest."""
        runs = self._executions.get(model_id)
        if runs is None:
            if len(self._executions) >= LANE_LIMIT:
                return
            runs = self._executions[model_id] = deque(maxlen=EXECUTION_MEMORY)
        runs.append(execution)
        waiting = self._waiting.get(model_id)
        if waiting:
            start = execution.start_ns
            start_us = start // 1000 + (1 if start % 1000 else 0)  # op start_us * 1000 < start
            while waiting and waiting[0][1].start_us < start_us:
                self._place(waiting.popleft()[1])
                self._count -= 1

    def timing(self, e: ev.OpTiming, arrived_ns: int) -> None:
        if (e.stream_id >= 0 or e.task_type) and e.device_id >= 0:
            self._place_task(e)
            return
        if e.model_id == SINGLE_OPERATOR:
            self._place_single(e)
            return
        waiting = self._waiting.get(e.model_id)
        if waiting is None:
            if len(self._waiting) >= LANE_LIMIT:
                self._place(e)
                return
            waiting = self._waiting[e.model_id] = deque()
        waiting.append((arrived_ns, e))
        self._count += 1
        if self.deadline is None:
            self.deadline = arrived_ns + OP_WAIT_NS
        if self._count > OPS_WAITING:
            self._place(waiting.popleft()[1])
            self._count -= 1

    def place_before(self, arrived_ns: int | None) -> None:
        """Places the timings that arrived before ``arrived_ns`` (all: None)."""
        deadline = None
        for waiting in self._waiting.values():
            while waiting and (arrived_ns is None or waiting[0][0] < arrived_ns):
                self._place(waiting.popleft()[1])
                self._count -= 1
            if waiting and (deadline is None or waiting[0][0] < deadline):
                deadline = waiting[0][0]
        self.deadline = deadline + OP_WAIT_NS if deadline is not None else None

    # ------------------------------------------------------------ placing
    def _execution_of(self, model_id: int, device: int, start: int) -> Execution | None:
        """The latest remembered execution of the model (on its device) that started
        before the operator did."""
        runs = self._executions.get(model_id)
        if runs:
            for run in reversed(runs):
                if run.start_ns <= start and (run.device == device or device == UNKNOWN_DEVICE):
                    return run
        return None

    def _run_lane(self, e: ev.OpTiming, run: Execution | None) -> tuple[Lane, Args]:
        """The lane of an operator of ``run`` (None: of no known execution) and the
        args every operator of it shares."""
        model_device, model_name = self._model_of(e.model_id)
        device = e.device_id if e.device_id >= 0 else model_device
        if run is not None and device == UNKNOWN_DEVICE:
            device = run.device
        args: Args = {"Model Id": e.model_id}
        if model_name:
            args["Model Name"] = model_name
        if run is not None and run.stream_id is not None and device != UNKNOWN_DEVICE:
            lane = self.book.stream(device, run.stream_id)
            args["Physic Stream Id"] = run.stream_id
        else:
            lane = self.book.model(device, e.model_id, model_name)
        if run is not None:
            args["Execution"] = run.number
        return lane, args

    def _place(self, e: ev.OpTiming) -> None:
        start = e.start_us * 1000
        end = e.end_us * 1000
        device = e.device_id
        run = self._execution_of(e.model_id, device if device >= 0 else UNKNOWN_DEVICE, start)
        op_type = e.op_type
        if run is not None:  # its operators share a lane, and args by type
            lane = run.lane
            if lane is None:
                lane, run.args = self._run_lane(e, run)
                run.lane = lane
            shared = run.by_type.get(op_type)
            if shared is None:
                shared = run.by_type[op_type] = dict(run.args)
                if op_type:
                    shared["OP Type"] = clip_text(op_type)
            # Items are not changed once made, so operators of one type in one run
            # share their args (a writer encodes them once).
            args = dict(shared) if e.metrics else shared
        else:
            lane, args = self._run_lane(e, None)
            if op_type:
                args["OP Type"] = clip_text(op_type)
        item = self._operator(lane, start, end, args, e)
        if run is not None and not run.flowed:
            run.flowed = True
            call = run.call
            if call.lane.nested and item.lane.nested:  # a flow binds to thread slices only
                self._flow(call.lane, call.start_ns, item.lane, start)

    def _place_single(self, e: ev.OpTiming) -> None:
        device = e.device_id if e.device_id >= 0 else UNKNOWN_DEVICE
        args: Args = {"OP Type": clip_text(e.op_type), "Launch": "single operator (acl.op)"}
        self._operator(self.book.single_ops(device), e.start_us * 1000, e.end_us * 1000, args, e)

    def _place_task(self, e: ev.OpTiming) -> None:
        args: Args = {"Model Id": e.model_id}
        if e.stream_id >= 0:
            args["Physic Stream Id"] = e.stream_id
        model_name = self._model_of(e.model_id)[1]
        if model_name:
            args["Model Name"] = model_name
        if e.op_type:
            args["OP Type"] = clip_text(e.op_type)
        if e.task_id >= 0:
            args["Task Id"] = e.task_id
        if e.task_type:
            args["Task Type"] = clip_text(e.task_type)
        if e.stream_id >= 0:
            lane = self.book.stream(e.device_id, e.stream_id)
        else:
            lane = self.book.unplaced(e.device_id)
        self._operator(lane, e.start_us * 1000, e.end_us * 1000, args, e)

    def _operator(self, lane: Lane, start: int, end: int, args: Args, e: ev.OpTiming) -> Slice:
        if e.metrics and isinstance(e.metrics, dict):
            for key, value in itertools.islice(e.metrics.items(), METRICS_KEPT):
                number = finite_number(value)
                if isinstance(key, str) and number is not None:
                    args[clip_text(key)] = number
        name = e.op_name if len(e.op_name) <= TEXT_LIMIT else clip_text(e.op_name)
        return self._emit(lane, start, max(start, end), name, OPERATOR, args, e)
