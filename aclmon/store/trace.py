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
from collections.abc import Callable, Sequence
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

#: names whose JSON form is kept (operator names repeat every step)
NAME_CACHE = 65_536
#: args dicts whose JSON is kept
ARGS_CACHE = 256
#: room kept in each file for the metadata of an item and the closing bracket
_RESERVE = 4096
#: events formatted before they are handed to the file at once
_PENDING = 256

_encoder = json.JSONEncoder(
    ensure_ascii=True, allow_nan=False, check_circular=False, separators=(",", ":"), default=repr
)
_encode_string = json.encoder.encode_basestring_ascii
# The C encoder behind JSONEncoder.encode, made once: encode() makes it anew for
# every call, which costs more than the encoding of a slice's few args.
_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
_one_shot: Callable[[Any, int], Sequence[str]] = (
    _make_encoder(None, repr, _encode_string, None, ":", ",", False, False, False)
    if _make_encoder is not None
    else lambda value, _level: (_encoder.encode(value),)  # without the C accelerator
)


def _encode(value: Any) -> str:
    return "".join(_one_shot(value, 0))


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
        #: items that started before the session start (drawn at 0), and the
        #: earliest such start
        self.clamped = 0
        self.earliest_clamped_ns: int | None = None
        #: items the encoder refused (a value that is not JSON)
        self.unwritable = 0
        self._async_ids = 0
        self._out: TextIO | None = None
        self._size = 0
        self._in_file = 0  # trace events in the current file
        #: events formatted but not yet handed to the file (written in batches)
        self._pending: list[str] = []
        #: processes and lanes whose metadata the current file holds
        self._described: set[Process | Lane] = set()
        self._names: dict[str, str] = {}
        self._places: dict[Lane, str] = {}
        #: id -> (args, their JSON) of the latest args dicts (slices share them)
        self._args: dict[int, tuple[dict[str, Any], str]] = {}

    # ------------------------------------------------------------ sink
    def slice(self, item: Slice) -> None:
        start, end = item.start_ns - self.origin_ns, item.end_ns - self.origin_ns
        if start < 0 or end > MAX_RELATIVE_NS:
            times = self._times(item.start_ns, item.end_ns)
            if times is None:
                return
            start, end = times
        name = self._names.get(item.name) or self._name(item.name)
        cached = self._args.get(id(item.args))
        if cached is not None and cached[0] is item.args:  # args shared between slices
            args = cached[1]
        else:
            try:
                args = "".join(_one_shot(item.args, 0))
            except (ValueError, TypeError):  # a value JSON cannot hold (NaN): not written
                self.unwritable += 1
                return
            if len(self._args) >= ARGS_CACHE:
                self._args.clear()
            # the dict is kept with its text, so its id is not reused while cached
            self._args[id(item.args)] = (item.args, args)
        lane = item.lane
        place = self._places.get(lane) or self._place(lane)
        if lane.nested:
            text = (
                f'{{"name":{name},"ph":"X","ts":{start / 1000!r},"dur":{(end - start) / 1000!r},'
                f'{place},"cat":"{item.kind}","args":{args}}}'
            )
            size = self._size + len(text) + 2
            if lane in self._described and size + _RESERVE <= self.max_bytes:
                # the common case, without _emit's calls: a lane this file knows, room left
                pending = self._pending
                pending.append(",\n" + text)
                self._size = size
                self._in_file += 1
                self.events += 1
                self.items += 1
                if len(pending) >= _PENDING:
                    self._flush()
            else:
                self._emit(text, lane)
            return
        self._async_ids += 1
        ident = self._async_ids
        place = f'{place},"cat":"{item.kind}","id":{ident}'
        self._emit(
            f'{{"name":{name},"ph":"b","ts":{start / 1000!r},{place},"args":{args}}}'
            f',\n{{"name":{name},"ph":"e","ts":{end / 1000!r},{place}}}',
            lane,
            events=2,
        )

    def instant(self, item: Instant) -> None:
        lane = item.lane
        place = f'"s":"t","pid":{lane.process.pid},"tid":{lane.track},"cat":"{item.kind}"'
        self._point(item.ts_ns, item.name, "i", place, item.args, lane, None)

    def counter(self, item: CounterSample) -> None:
        process = item.process
        self._point(item.ts_ns, item.name, "C", f'"pid":{process.pid}', item.values, None, process)

    def _point(self, ts_ns: int, name: str, phase: str, place: str, args: dict[str, Any],
               lane: Lane | None, process: Process | None) -> None:  # fmt: skip
        """An event at one time: an instant on a lane, a counter sample of a process."""
        times = self._times(ts_ns)
        encoded = self._json(args)
        if times is None or encoded is None:
            return
        self._emit(
            f'{{"name":{self._name(name)},"ph":"{phase}","ts":{times[0] / 1000!r},{place},'
            f'"args":{encoded}}}',
            lane,
            process,
        )

    def flow(self, item: Flow) -> None:
        times = self._times(item.source_ns, item.target_ns)
        if times is None:
            return
        source, target = item.source, item.target
        common = f'"name":"{HOST_TO_DEVICE}","cat":"{HOST_TO_DEVICE}","id":{item.flow_id}'
        self._emit(
            f'{{"ph":"s",{common},"ts":{times[0] / 1000!r},"pid":{source.process.pid},'
            f'"tid":{source.track}}},\n{{"ph":"f","bp":"e",{common},"ts":{times[1] / 1000!r},'
            f'"pid":{target.process.pid},"tid":{target.track}}}',
            source,
            target=target,
            events=2,
        )

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
                if self.earliest_clamped_ns is None or ns < self.earliest_clamped_ns:
                    self.earliest_clamped_ns = ns
                relative = 0
            elif relative > MAX_RELATIVE_NS:
                self.unwritable += 1
                return None
            out.append(relative)
        return out

    def _name(self, name: str) -> str:
        """``name`` as a JSON string (names repeat: each is encoded once)."""
        encoded = self._names.get(name)
        if encoded is None:
            if len(self._names) >= NAME_CACHE:
                self._names.clear()
            encoded = self._names[name] = _encode_string(name)
        return encoded

    def _place(self, lane: Lane) -> str:
        """``"pid":P,"tid":T`` of a lane (kept: lanes are few)."""
        place = self._places[lane] = f'"pid":{lane.process.pid},"tid":{lane.track}'
        return place

    def _json(self, value: dict[str, Any]) -> str | None:
        try:
            return _encode(value)
        except (ValueError, TypeError):  # a value JSON cannot hold (NaN): not written
            self.unwritable += 1
            return None

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

    def _emit(
        self,
        text: str,
        lane: Lane | None,
        process: Process | None = None,
        *,
        target: Lane | None = None,
        events: int = 1,
    ) -> None:
        """Writes the events of one item (``events`` lines in ``text``), after the
        metadata of the lanes and process they use if this file has not had it,
        in a new file if this one would pass the cap."""
        if self._out is None:
            self._open()
        elif self._in_file and self._size + len(text) + _RESERVE > self.max_bytes:
            self._finish_file()
            self._open()
        described = self._described
        if lane is not None and lane not in described:
            self._describe(lane.process, lane)
        if target is not None and target not in described:
            self._describe(target.process, target)
        if process is not None and process not in described:
            self._describe(process, None)
        self._append(text, events)
        self.items += 1

    def _append(self, text: str, events: int) -> None:
        pending = self._pending
        pending.append(",\n" + text if self._in_file else text)
        self._size += len(text) + 2
        self._in_file += events
        self.events += events
        if len(pending) >= _PENDING:
            self._flush()

    def _flush(self) -> None:
        if self._pending and self._out is not None:
            self._out.write("".join(self._pending))
            self._pending.clear()

    def _describe(self, process: Process, lane: Lane | None) -> None:
        """The M events of a process (and a nested lane) new to this file."""
        lines: list[str] = []
        if process not in self._described:
            self._described.add(process)
            lines.extend(_encode(event) for event in _process_metadata(process))
        if lane is not None:
            self._described.add(lane)
            if lane.nested:
                lines.extend(_encode(event) for event in _thread_metadata(lane))
        if lines:
            self._append(",\n".join(lines), len(lines))

    def _open(self) -> TextIO:
        if len(self.files) == 1:  # the first split: name the first part as a slice too
            first = self.files[0]
            renamed = _slice_path(self.path, 0)
            os.replace(first, renamed)
            self.files[0] = renamed
        path = self.path if not self.files else _slice_path(self.path, len(self.files))
        other = dict(self.other_data, part=len(self.files))
        out = self._out = open(path, "w", encoding="ascii", buffering=_BUFFER)  # noqa: SIM115
        head = _HEAD % _encode(other)
        out.write(head)
        self._size = len(head)
        self._in_file = 0
        self._described.clear()
        self.files.append(path)
        return out

    def _finish_file(self) -> None:
        if self._out is not None:
            self._flush()
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
