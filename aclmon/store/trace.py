"""The trace export: timeline items as Chrome trace-event JSON that Perfetto and
MindStudio Insight open (docs/timeline.md).

:class:`TraceWriter` is a :class:`~aclmon.store.slices.TimelineSink`: it writes
each item as it comes, one event per line, so memory stays flat whatever the
length. What the format's readers need and msprof's own files get wrong
(docs/reference/trace_formats.md):

- the object form with ``displayTimeUnit: "ns"``; ``ts`` and ``dur`` are JSON
  numbers in microseconds relative to the session start (kept in ``otherData``),
  so a float64 keeps every nanosecond and no slice gains a fake overlap;
- every string goes through the JSON encoder (no raw control character), ASCII only;
- flow and async ids count from 1 (far below 2^53); tids are small numbers;
- a pair of events that belong together (an async ``b``/``e``, a flow's
  ``s``/``f``) is written at once, into one file;
- files are cut below ``max_bytes`` (``OUT.json`` becomes ``OUT_slice_0.json``,
  ``OUT_slice_1.json``… as msprof names its slices); each file is a complete
  trace with the metadata of the processes and threads it uses.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any, TextIO

from aclmon.store.slices import HOST_TO_DEVICE, CounterSample, Flow, Instant, Lane, Process, Slice

#: the default cap of one file: Perfetto's UI and Insight load this much comfortably
DEFAULT_MAX_BYTES = 512 * 1024 * 1024
#: the smallest cap that still leaves room for a file's metadata and a few events
MIN_MAX_BYTES = 64 * 1024
#: the latest time written (ns after the start, 104 days): a float64 of µs keeps
#: every ns below it, so readers rounding ``ts * 1000`` get the exact time back
MAX_RELATIVE_NS = (1 << 53) - 1
_HEAD = '{"displayTimeUnit":"ns","otherData":%s,"traceEvents":[\n'
_TAIL = "\n]}\n"
_BUFFER = 1 << 20

_encode = json.JSONEncoder(
    ensure_ascii=True, allow_nan=False, check_circular=False, separators=(",", ":"), default=repr
).encode


class TraceWriter:
    """Writes timeline items to ``path`` (see the module docstring). ``origin_ns``
    is the session start (ts 0); ``other_data`` goes into each file's
    ``otherData`` beside the start. :meth:`close` returns the files written."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        origin_ns: int,
        max_bytes: int = DEFAULT_MAX_BYTES,
        other_data: dict[str, Any] | None = None,
    ) -> None:
        if max_bytes < MIN_MAX_BYTES:
            raise ValueError(f"the size cap must be at least {MIN_MAX_BYTES} bytes")
        self.path = Path(path)
        self.origin_ns = origin_ns
        self.max_bytes = max_bytes
        self.other_data = dict(other_data or {})
        self.other_data["session_start_ns"] = origin_ns
        self.other_data["session_start"] = _iso(origin_ns)
        self.files: list[Path] = []
        #: trace events written (metadata included), and items written
        self.events = 0
        self.items = 0
        #: items that started before the session start (drawn at 0)
        self.clamped = 0
        #: items the encoder refused (a value that is not JSON)
        self.unwritable = 0
        self._async_ids = 0
        self._out: TextIO | None = None
        self._size = 0
        self._in_file = 0  # trace events in the current file
        self._processes: set[Process] = set()
        self._threads: set[Lane] = set()

    # ------------------------------------------------------------ sink
    def slice(self, item: Slice) -> None:
        times = self._times(item.start_ns, item.end_ns)
        if times is None:
            return
        start, end = times
        lane = item.lane
        pid = lane.process.pid
        if lane.nested:
            event = {"name": item.name, "ph": "X", "ts": start / 1000, "dur": (end - start) / 1000,
                     "pid": pid, "tid": lane.track, "cat": item.kind, "args": item.args}  # fmt: skip
            self._write([event], (lane,))
            return
        self._async_ids += 1
        common = {"cat": item.kind, "id": self._async_ids, "pid": pid, "tid": lane.track}
        begin = {"name": item.name, "ph": "b", "ts": start / 1000, **common, "args": item.args}
        self._write([begin, {"name": item.name, "ph": "e", "ts": end / 1000, **common}], (lane,))

    def instant(self, item: Instant) -> None:
        times = self._times(item.ts_ns)
        if times is None:
            return
        lane = item.lane
        event = {"name": item.name, "ph": "i", "s": "t", "ts": times[0] / 1000,
                 "pid": lane.process.pid, "tid": lane.track, "cat": item.kind,
                 "args": item.args}  # fmt: skip
        self._write([event], (lane,))

    def counter(self, item: CounterSample) -> None:
        times = self._times(item.ts_ns)
        if times is None:
            return
        event = {"name": item.name, "ph": "C", "ts": times[0] / 1000, "pid": item.process.pid,
                 "args": item.values}  # fmt: skip
        self._write([event], (), item.process)

    def flow(self, item: Flow) -> None:
        times = self._times(item.source_ns, item.target_ns)
        if times is None:
            return
        source, target = item.source, item.target
        common = {"name": HOST_TO_DEVICE, "cat": HOST_TO_DEVICE, "id": item.flow_id}
        start = {"ph": "s", **common, "ts": times[0] / 1000, "pid": source.process.pid,
                 "tid": source.track}  # fmt: skip
        end = {"ph": "f", "bp": "e", **common, "ts": times[1] / 1000, "pid": target.process.pid,
               "tid": target.track}  # fmt: skip
        self._write([start, end], (source, target))

    def _times(self, *times_ns: int) -> list[int] | None:
        """The times in ns since the session start (a trace's ``ts`` is that over
        1000): a time before the start is drawn at it (counted in ``clamped``); an
        item with a time past :data:`MAX_RELATIVE_NS` is not written (``unwritable``)."""
        origin = self.origin_ns
        out = []
        for ns in times_ns:
            relative = ns - origin
            if relative < 0:
                self.clamped += 1
                relative = 0
            elif relative > MAX_RELATIVE_NS:
                self.unwritable += 1
                return None
            out.append(relative)
        return out

    # ------------------------------------------------------------ files
    def close(self) -> list[Path]:
        """Ends the last file (an empty export is one valid, empty trace)."""
        if self._out is None and not self.files:
            self._open()
        self._finish_file()
        return list(self.files)

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, events: list[dict[str, Any]], lanes: tuple[Lane, ...],
               process: Process | None = None) -> None:  # fmt: skip
        try:
            lines = [_encode(event) for event in events]
        except (ValueError, TypeError):
            self.unwritable += 1
            return
        if self._out is None:
            self._open()
        size = sum(len(line) + 2 for line in lines)
        if self._in_file and self._size + size + 4096 + len(_TAIL) > self.max_bytes:
            self._finish_file()
            self._open()
        meta = self._metadata(lanes, process)
        if meta:
            lines = meta + lines
        out = self._out
        assert out is not None
        text = ",\n".join(lines)
        if self._in_file:
            text = ",\n" + text
        out.write(text)
        self._size += len(text)
        self._in_file += len(lines)
        self.events += len(lines)
        self.items += 1

    def _metadata(self, lanes: tuple[Lane, ...], process: Process | None) -> list[str]:
        """The M events of processes and threads not yet described in this file."""
        lines: list[str] = []
        for wanted in (process, *(lane.process for lane in lanes)):
            if wanted is not None and wanted not in self._processes:
                self._processes.add(wanted)
                lines.extend(_encode(event) for event in _process_metadata(wanted))
        for lane in lanes:
            if lane.nested and lane not in self._threads:
                self._threads.add(lane)
                lines.extend(_encode(event) for event in _thread_metadata(lane))
        return lines

    def _open(self) -> None:
        if len(self.files) == 1:  # the first split: name the first part as a slice too
            first = self.files[0]
            renamed = _slice_path(self.path, 0)
            os.replace(first, renamed)
            self.files[0] = renamed
        path = self.path if not self.files else _slice_path(self.path, len(self.files))
        other = dict(self.other_data, part=len(self.files))
        self._out = open(path, "w", encoding="ascii", buffering=_BUFFER)  # noqa: SIM115
        head = _HEAD % _encode(other)
        self._out.write(head)
        self._size = len(head)
        self._in_file = 0
        self._processes.clear()
        self._threads.clear()
        self.files.append(path)

    def _finish_file(self) -> None:
        if self._out is not None:
            self._out.write(_TAIL)
            self._out.close()
            self._out = None


def _slice_path(path: Path, number: int) -> Path:
    return path.with_name(f"{path.stem}_slice_{number}{path.suffix}")


def _process_metadata(process: Process) -> list[dict[str, Any]]:
    pid = process.pid
    return [
        {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": process.name}},
        {"name": "process_labels", "ph": "M", "pid": pid, "args": {"labels": process.label}},
        {"name": "process_sort_index", "ph": "M", "pid": pid,
         "args": {"sort_index": (process.group - 1) * 64 + process.sort}},
    ]  # fmt: skip


def _thread_metadata(lane: Lane) -> list[dict[str, Any]]:
    pid, tid = lane.process.pid, lane.track
    return [
        {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": lane.title}},
        {"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
         "args": {"sort_index": lane.order}},
    ]  # fmt: skip


def _iso(ns: int) -> str:
    try:
        when = dt.datetime.fromtimestamp(ns / 1e9, tz=dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return ""
    return when.isoformat(timespec="microseconds").replace("+00:00", "Z")
