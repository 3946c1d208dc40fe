"""Synthetic sources for the timeline tests: a small job told event by event, and
a sink that keeps what the slice model hands it."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from aclmon import events as ev
from aclmon.acl_constants import ACL_ERROR_RT_AICORE_EXCEPTION, ACL_FLOAT16, ACL_FORMAT_ND
from aclmon.store.slices import CounterSample, Flow, Instant, Slice

T0 = 1_764_669_600_000_000_000
MS = 1_000_000
THREAD_A = 140_000_000_000_001
THREAD_B = 140_000_000_000_002
STREAM_A = 0xB000  # device 0, stream id 3
STREAM_B = 0xB100  # device 1, stream id 5


@dataclass
class Collected:
    """A sink that keeps every item (for the tests)."""

    slices: list[Slice] = field(default_factory=list)
    instants: list[Instant] = field(default_factory=list)
    counters: list[CounterSample] = field(default_factory=list)
    flows: list[Flow] = field(default_factory=list)

    def slice(self, item: Slice) -> None:
        self.slices.append(item)

    def instant(self, item: Instant) -> None:
        self.instants.append(item)

    def counter(self, item: CounterSample) -> None:
        self.counters.append(item)

    def flow(self, item: Flow) -> None:
        self.flows.append(item)

    def of(self, kind: str) -> list[Any]:
        return [i for i in [*self.slices, *self.instants] if i.kind == kind]


class Job:
    """Builds a source's events in order; ``at(ms)`` moves the clock."""

    def __init__(self, rank: int = -1) -> None:
        self.events: list[Any] = []
        self.now = T0
        self._seq = itertools.count(1)
        self.add(ev.Hello, ev.SCHEMA_VERSION, "0.1.0", 4242 + rank, "node", ("job.py",), "sim",
                 "Ascend910B1", 2, "train", rank, 3 if rank >= 0 else -1)  # fmt: skip

    def at(self, ms: float) -> Job:
        self.now = T0 + round(ms * MS)
        return self

    def add(self, cls: type, *fields: Any) -> Any:
        event = cls(next(self._seq), self.now, *fields)
        self.events.append(event)
        return event

    def setup(self) -> Job:
        self.add(ev.DeviceSet, 0, 0)
        self.add(ev.DeviceSet, 1, 0)
        self.add(ev.ContextCreated, 0, 0xA0, True)
        self.add(ev.ContextCreated, 1, 0xA1, True)
        self.add(ev.StreamCreated, 0, 0xA0, STREAM_A, 3, 0, 0)
        self.add(ev.StreamCreated, 1, 0xA1, STREAM_B, 5, 0, 0)
        self.add(ev.ModelLoaded, 1, 0, "resnet", 3)
        self.add(ev.ModelLoaded, 2, 1, "bert", 2)
        return self

    def execution(self, model: int, stream: int, start_ms: float, ops: list[tuple[str, float, float]],
                  *, ops_first: int = 0) -> None:  # fmt: skip
        """An execute_async of ``model`` on ``stream`` (0.2 ms call), then its operators
        (name, start ms, end ms); the first ``ops_first`` come before the End."""
        timings = [
            (ev.OpTiming, model, name, "Conv2D", T0 // 1000 + round(a * 1000),
             T0 // 1000 + round(b * 1000), round((b - a) * 1000), -1)
            for name, a, b in ops
        ]  # fmt: skip
        for timing in timings[:ops_first]:
            self.at(start_ms + 0.1).add(*timing)
        self.at(start_ms + 0.2).add(ev.ExecuteEnd, model, stream, 200_000, 0)
        for timing in timings[ops_first:]:
            self.at(ops[-1][2]).add(*timing)

    def sync(self, stream: int, start_ms: float, end_ms: float, ret: int = 0) -> None:
        self.at(end_ms).add(ev.StreamSynchronized, stream, round((end_ms - start_ms) * MS), ret, -1)


def tensor() -> ev.TensorDesc:
    return ev.TensorDesc(ACL_FLOAT16, ACL_FORMAT_ND, (4, 8), 0x1000, 64, "x")


def small_job(rank: int = -1) -> Job:
    """Two devices, two models, every kind the timeline shows once or more."""
    job = Job(rank).setup()
    job.execution(1, STREAM_A, 10, [("conv1", 10.3, 11.0), ("relu1", 11.0, 11.5)], ops_first=1)
    job.sync(STREAM_A, 10.25, 11.6)
    job.execution(2, STREAM_B, 12, [("matmul", 12.4, 14.0)])
    job.sync(STREAM_B, 12.3, 14.1)
    job.execution(1, STREAM_A, 20, [("conv1", 20.3, 21.0), ("relu1", 21.0, 21.5)])
    job.at(20.4).add(ev.StreamSyncBegin, STREAM_A, THREAD_A)  # a slow one: names its thread
    job.sync(STREAM_A, 20.4, 21.7, ACL_ERROR_RT_AICORE_EXCEPTION)
    job.at(21.2).add(ev.AclException, 0, 3, 7, 99, ACL_ERROR_RT_AICORE_EXCEPTION, "relu1", "Relu",
                     (tensor(),), (tensor(),), "resnet", 2)  # fmt: skip
    job.at(21.8).add(ev.CallFailed, "rt.synchronize_stream", ACL_ERROR_RT_AICORE_EXCEPTION,
                     "EZ9999: aicore error", THREAD_A, STREAM_A)  # fmt: skip
    job.at(22).add(ev.DumpFileSeen, "/d/extra-info/data-dump/0/exception_info.relu1.7.1", "exception-dump",
                   100, {"kind": "exception-dump", "task_id": 7})  # fmt: skip
    job.at(23).add(ev.DumpFileSeen, "/d/20261203150939/1/bert/2/0/Opdebug.Node_OpDebug.8.5.1",
                   "overflow", 2099, {"kind": "overflow", "task_id": 6, "stream_id": 5,
                                      "op_type": "MatMul", "op_name": "matmul",
                                      "timestamp": (T0 + 13 * MS) // 1000,
                                      "records": [{"explained": ["AI Core: overflow"]}]})  # fmt: skip
    job.at(15).add(ev.TxRange, "forward", T0 + 10 * MS, T0 + 15 * MS, THREAD_A, THREAD_A)
    job.at(24).add(ev.TxRange, "step 1", T0 + 9 * MS, T0 + 24 * MS, THREAD_A, THREAD_A)
    job.at(25).add(ev.TxRange, "request 7", T0 + 12 * MS, T0 + 25 * MS, THREAD_A, THREAD_B)
    job.at(25.5).add(ev.TxMark, "epoch 1", THREAD_B)
    job.at(25.8).add(ev.LogLine, "error", "aicore error\nline two", "RUNTIME", 4242, "job.py",
                     T0 + round(21.3 * MS), "stream.cc:88", "/log/plog-4242_1.log")  # fmt: skip
    job.at(25.9).add(ev.LogLine, "info", "nothing to see")
    job.at(26).add(ev.DeviceSample, 0, 40, 5, 0, 1 << 30, 1 << 34, "OK", 41.5, 70.0)
    job.at(26).add(ev.HostSample, 12.5, 1 << 28, 9)
    job.at(27).add(ev.ExecuteBegin, 2, STREAM_B, 1)  # never ends: the job stopped inside it
    job.at(30).add(ev.Goodbye, 0, True, "exit")
    return job
