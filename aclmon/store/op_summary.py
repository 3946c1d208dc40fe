"""``aclmon export --format op-summary``: the operator slices as the subset of
msprof's ``op_summary_*.csv`` that aclmon knows (docs/timeline.md).

Columns keep msprof's names and order: ``Device_id``, ``Model Name``,
``Model ID``, ``Task ID``, ``Stream ID``, ``Op Name``, ``OP Type``, ``Task Type``,
``Task Start Time(us)``, ``Task Duration(us)``, ``Task Wait Time(us)``, then the
AI Core metric columns the timings carry (by their op_summary names). What
aclmon does not know prints ``N/A``, as msprof prints an absent value: the task
id and type unless the timings came from msprof's own files (model
subscription does not give them). The stream is the one the
slice model placed the operator on. ``Task Wait Time(us)`` is the time since the
previous operator on the same stream ended, as in msprof. A trace of several
sources (a fleet) adds a ``Rank`` column at the end.
"""

from __future__ import annotations

import csv
import os
from typing import Any, TextIO

from aclmon.store.slices import OPERATOR, CounterSample, Flow, Instant, Slice

NOT_AVAILABLE = "N/A"
COLUMNS = (
    "Device_id",
    "Model Name",
    "Model ID",
    "Task ID",
    "Stream ID",
    "Op Name",
    "OP Type",
    "Task Type",
    "Task Start Time(us)",
    "Task Duration(us)",
    "Task Wait Time(us)",
)


class OpSummaryWriter:
    """A :class:`~aclmon.store.slices.TimelineSink` that writes each operator slice
    as one CSV row (other items are not operators and are ignored). ``metrics``:
    the AI Core metric columns, known before the first row (a recording's survey)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        metrics: list[str] | None = None,
        *,
        with_rank: bool = False,
    ) -> None:
        self.path = os.fspath(path)
        self.metrics = list(metrics or [])
        self.with_rank = with_rank
        self.rows = 0
        self._handle: TextIO = open(self.path, "w", encoding="utf-8", newline="")  # noqa: SIM115
        self._csv = csv.writer(self._handle)
        header = [*COLUMNS, *self.metrics]
        if with_rank:
            header.append("Rank")
        self._csv.writerow(header)
        #: (pid, tid) of a stream lane -> when its last operator ended (ns)
        self._last_end: dict[tuple[int, int], int] = {}

    def slice(self, item: Slice) -> None:
        if item.kind != OPERATOR:
            return
        args = item.args
        lane = item.lane
        key = (lane.process.pid, lane.track)
        previous = self._last_end.get(key)
        self._last_end[key] = max(item.end_ns, previous or item.end_ns)
        wait = max(item.start_ns - previous, 0) / 1000 if previous is not None else 0.0
        device = lane.process.device
        row: list[Any] = [
            device if device >= 0 else NOT_AVAILABLE,
            args.get("Model Name", NOT_AVAILABLE),
            args.get("Model Id", NOT_AVAILABLE),
            args.get("Task Id", NOT_AVAILABLE),
            args.get("Physic Stream Id", NOT_AVAILABLE),
            item.name,
            args.get("OP Type", NOT_AVAILABLE),
            args.get("Task Type", NOT_AVAILABLE),
            f"{item.start_ns / 1000:.3f}",
            f"{(item.end_ns - item.start_ns) / 1000:.3f}",
            f"{wait:.3f}",
        ]
        row.extend(args.get(name, NOT_AVAILABLE) for name in self.metrics)
        if self.with_rank:
            rank = lane.process.rank
            row.append(rank if rank >= 0 else NOT_AVAILABLE)
        self._csv.writerow(row)
        self.rows += 1

    def instant(self, item: Instant) -> None:
        pass

    def counter(self, item: CounterSample) -> None:
        pass

    def flow(self, item: Flow) -> None:
        pass

    def close(self) -> list[str]:
        self._handle.close()
        return [self.path]
