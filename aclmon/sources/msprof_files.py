"""msprof's exported files as the events a live agent would have sent.

``msprof --export`` (and ``msprof --parse``) writes, in a session's
``PROF_*/mindstudio_profiler_output/`` (older CANN: ``PROF_*/device_N/summary/``
and ``…/timeline/``), files that these readers take, recognised by their names:

* ``op_summary_*.csv``: one row per operator task. Each row is an
  :class:`~aclmon.events.OpTiming` with its device, stream, task, task type and
  the AI Core metric columns the collection had (``aic_*``, ``aiv_*`` …);
* ``msprof_*.json`` (and ``msprof_tx_*.json``): the timeline, a Chrome trace whose
  ``Ascend Hardware`` processes hold one ``X`` slice per device task (an
  ``OpTiming`` on its stream) and whose msproftx process (sort index 6) holds the
  application's ranges and marks (``TxRange``/``TxMark`` on their thread);
* ``msprof_tx_*.csv``: the msproftx ranges and marks.

Tolerant by rule: a missing column, or a value of ``N/A``, ``NA`` or nothing, is
not known (-1, ``""`` or left out, never 0); columns it does not know are
ignored; a row without a start time or a duration is skipped and counted; a
truncated file is read up to its last whole row or event, and said once. The
same task in two files (an op_summary row and its timeline slice) is one event:
the first file read keeps it, and op_summary files are read first (they carry
the operator's type and metrics).

Nothing here imports Textual: ``aclmon replay --json`` and the watch thread use it.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from aclmon import events as ev
from aclmon.acl_constants import AICORE_METRIC_COLUMNS

#: what each recognised file is
OP_SUMMARY = "op_summary"
TIMELINE = "timeline"
TX_CSV = "msprof_tx"
#: the order files are read in (the first file that has a task keeps it)
READ_ORDER = (OP_SUMMARY, TX_CSV, TIMELINE)

#: bytes read of one file at most (MindStudio Insight's own advice: ≤ 1 GiB a JSON)
MAX_FILE_BYTES = 1 << 30
#: how deep and how many entries a followed directory is walked per pass
FOLLOW_DEPTH = 8
FOLLOW_ENTRIES = 50_000
#: the values msprof prints for "not known"
NOT_KNOWN = frozenset({"", "N/A", "NA", "n/a", "na", "None", "null"})
#: msprof's "no model" / "no context" value
UINT32_MAX = 4294967295
#: the model id of an operator run as a single operator (pyACL's model ids start at 1)
NO_MODEL = 0
#: msprof's process sort indexes (layers): its msproftx and device-task processes
LAYER_MSPROFTX = 6
LAYER_HARDWARE = 14
HOST_SLOT = 31
#: times beyond this many µs are not times: their ns must fit an event's int64,
#: ends too (about the year 2255; the check also keeps hostile exponents cheap)
MAX_TIME_US = Decimal(9 * 10**15)
MAX_END_NS = 9 * 10**18
#: ids (device, model, stream, task, thread) at or past this are not ids
MAX_ID = 1 << 63

#: op_summary columns that are AI Core metrics (besides any ``aic_``/``aiv_`` column)
METRIC_COLUMNS = frozenset(
    {"aicore_time(us)", "aiv_time(us)", "total_cycles", "memory_bound", "cube_utilization(%)"}
    | {name for names in AICORE_METRIC_COLUMNS.values() for name in names}
)

_WHITESPACE = re.compile(r"[ \t\n\r]*")


def msprof_file_kind(name: str) -> str | None:
    """What an msprof export file is, from its name (None: not one)."""
    if name.startswith("op_summary_") and name.endswith(".csv"):
        return OP_SUMMARY
    if name.startswith("msprof_tx_") and name.endswith(".csv"):
        return TX_CSV
    if name.startswith("msprof_") and name.endswith(".json"):
        return TIMELINE
    return None


# ---------------------------------------------------------------- values
def _text(value: Any) -> str | None:
    """A cell as text without msprof's padding (it appends a tab to times so that
    spreadsheets keep their digits); None when it says "not known"."""
    if value is None:
        return None
    text = str(value).strip()
    return None if text in NOT_KNOWN else text


def _ns(value: Any) -> int | None:
    """A time or duration in µs (a number, or a string of one) as integer ns.
    Strings are read exactly: an epoch in µs has more digits than a float keeps."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = Decimal(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            return None
        number = Decimal(repr(value))
    else:
        text = _text(value)
        if text is None:
            return None
        try:
            number = Decimal(text)
        except (InvalidOperation, ValueError):
            return None
    if not number.is_finite() or abs(number) > MAX_TIME_US:
        return None
    return int((number * 1000).to_integral_value())


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if -MAX_ID < value < MAX_ID else None
    text = _text(value)
    if text is None:
        return None
    try:
        number = int(text)
    except ValueError:
        try:
            real = float(text)
        except ValueError:
            return None
        if not (math.isfinite(real) and real.is_integer()):
            return None
        number = int(real)
    return number if -MAX_ID < number < MAX_ID else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        text = _text(value)
        if text is None:
            return None
        try:
            number = float(text)
        except ValueError:
            return None
    return number if math.isfinite(number) else None


def _us(ns: int) -> int:
    """ns as whole µs, rounded (rounding keeps the order of starts and ends, so
    tasks that did not overlap still do not)."""
    return (ns + 500) // 1000


def _model(value: Any) -> int:
    model = _int(value)
    return NO_MODEL if model is None or model == UINT32_MAX or model < 0 else model


def _known_id(value: Any) -> int:
    number = _int(value)
    return -1 if number is None or number < 0 or number == UINT32_MAX else number


def _timed(start_ns: int | None, duration_ns: int | None) -> bool:
    """Whether a start and a duration make a span an event can carry."""
    return (
        start_ns is not None
        and duration_ns is not None
        and start_ns >= 0
        and 0 <= duration_ns <= MAX_END_NS - start_ns
    )


def _timing(
    op_name: str, op_type: str, start_ns: int, duration_ns: int, *, model: int = NO_MODEL,
    device: int = -1, stream: int = -1, task: int = -1, task_type: str = "",
    metrics: dict[str, float] | None = None,
) -> ev.OpTiming:  # fmt: skip
    """The OpTiming of one task (seq 0: numbered when all files are read)."""
    start_us = _us(start_ns)
    end_us = _us(start_ns + max(duration_ns, 0))
    return ev.OpTiming(
        0, end_us * 1000, model, op_name, op_type, start_us, end_us, _us(max(duration_ns, 0)),
        device, metrics or {}, stream, task, task_type,
    )  # fmt: skip


# ---------------------------------------------------------------- parsed files
@dataclass
class Parsed:
    """What one file gave: its events, and what was said about it (one line each)."""

    events: list[ev.Event] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: rows or slices left out (no start time, no duration, not a task we show)
    skipped: int = 0


def _whole_lines(data: bytes, name: str, parsed: Parsed) -> str:
    """The text of a CSV up to its last whole row (a truncated file says so)."""
    end = len(data)
    if data and not data.endswith(b"\n"):
        end = data.rfind(b"\n") + 1
        parsed.problems.append(f"{name}: truncated; read up to its last whole row")
    text = data[:end].decode("utf-8", errors="replace")
    return text.removeprefix("\ufeff").replace("\x00", "")


def _rows(text: str, name: str, parsed: Parsed) -> Iterator[dict[str, str]]:
    """Each row of a CSV by its header's names (a short row: the rest not known)."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    bad = 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error:
            bad += 1
            continue
        if header is None:
            header = [column.strip() for column in row]
            continue
        if row:
            yield dict(zip(header, row, strict=False))
    if header is None:
        parsed.problems.append(f"{name}: no header row")
    if bad:
        parsed.problems.append(f"{name}: {bad} row(s) that are not CSV skipped")


def parse_op_summary(data: bytes, name: str = "op_summary") -> Parsed:
    """An ``op_summary_*.csv``: one OpTiming per row that has a start and a duration."""
    parsed = Parsed()
    for row in _rows(_whole_lines(data, name, parsed), name, parsed):
        start, duration = _ns(row.get("Task Start Time(us)")), _ns(row.get("Task Duration(us)"))
        if start is None or duration is None or not _timed(start, duration):
            parsed.skipped += 1
            continue
        op_type = _text(row.get("OP Type")) or ""
        task_type = _text(row.get("Task Type")) or ""
        op_name = _text(row.get("Op Name")) or op_type or task_type
        metrics: dict[str, float] = {}
        for column, value in row.items():
            if isinstance(column, str) and (
                column in METRIC_COLUMNS or column.startswith(("aic_", "aiv_"))
            ):
                number = _number(value)
                if number is not None:
                    metrics[column] = number
        timing = _timing(
            op_name, op_type, start, duration, model=_model(row.get("Model ID")),
            device=_known_id(row.get("Device_id")), stream=_known_id(row.get("Stream ID")),
            task=_known_id(row.get("Task ID")), task_type=task_type, metrics=metrics,
        )  # fmt: skip
        parsed.events.append(timing)
    if parsed.skipped:
        parsed.problems.append(f"{name}: {parsed.skipped} row(s) without a start or a duration")
    return parsed


def _tx_event(
    message: str, start_ns: int, end_ns: int | None, thread: int, event_type: str
) -> ev.TxMark | ev.TxRange:
    if end_ns is None or end_ns <= start_ns or "mark" in event_type.lower():
        return ev.TxMark(0, start_ns, message, thread)
    return ev.TxRange(0, end_ns, message, start_ns, end_ns, thread, thread)


def parse_tx_csv(data: bytes, name: str = "msprof_tx") -> Parsed:
    """An ``msprof_tx_*.csv``: a TxRange per range, a TxMark per mark."""
    parsed = Parsed()
    for row in _rows(_whole_lines(data, name, parsed), name, parsed):
        start, end = _ns(row.get("Start_time(us)")), _ns(row.get("End_time(us)"))
        if start is None or not _timed(start, 0):
            parsed.skipped += 1
            continue
        if end is not None and not _timed(start, end - start):
            end = None  # before its start, or past any time: a mark at its start
        tid = _int(row.get("tid"))
        parsed.events.append(
            _tx_event(
                _text(row.get("message")) or "",
                start,
                end,
                tid if tid is not None and tid > 0 else 0,
                _text(row.get("event_type")) or "",
            )
        )
    if parsed.skipped:
        parsed.problems.append(f"{name}: {parsed.skipped} row(s) without a start time")
    return parsed


# ---------------------------------------------------------------- the timeline JSON
def _trace_events(text: str, name: str, parsed: Parsed) -> list[Any]:
    """The events of a Chrome trace, the array form (msprof's) or the object form;
    a truncated file gives the events before the cut."""
    position = _WHITESPACE.match(text, 0)
    start = position.end() if position else 0
    if text.startswith("{", start):
        try:
            whole = json.loads(text)
        except (ValueError, RecursionError):
            found = text.find('"traceEvents"', start)
            start = text.find("[", found) if found >= 0 else -1
        else:
            events = whole.get("traceEvents") if isinstance(whole, dict) else None
            if isinstance(events, list):
                return events
            parsed.problems.append(f"{name}: no traceEvents array")
            return []
    if start < 0 or not text.startswith("[", start):
        parsed.problems.append(f"{name}: not a Chrome trace (no array of events)")
        return []
    return _array_items(text, start + 1, name, parsed)


def _array_items(text: str, at: int, name: str, parsed: Parsed) -> list[Any]:
    decoder = json.JSONDecoder()
    items: list[Any] = []
    while True:
        at = _WHITESPACE.match(text, at).end()  # type: ignore[union-attr]  # matches ""
        if text.startswith("]", at):
            return items
        try:
            item, at = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            break
        items.append(item)
        at = _WHITESPACE.match(text, at).end()  # type: ignore[union-attr]  # matches ""
        if text.startswith(",", at):
            at += 1
        elif text.startswith("]", at):
            return items
        else:
            break
    parsed.problems.append(
        f"{name}: truncated or damaged after {len(items)} event(s); read up to there"
    )
    return items


def parse_timeline(data: bytes, name: str = "msprof.json") -> Parsed:
    """An ``msprof_*.json``: device tasks as OpTimings on their stream, msproftx
    ranges and marks on their thread; other processes' slices (CANN API calls,
    counters) are skipped and counted."""
    parsed = Parsed()
    text = data.decode("utf-8", errors="replace")
    items = _trace_events(text, name, parsed)
    process_names: dict[int, str] = {}
    process_sorts: dict[int, int] = {}
    slices: list[dict[str, Any]] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        phase, pid = item.get("ph"), _int(item.get("pid"))
        if pid is None:
            continue
        if phase == "M":
            args = item.get("args")
            if not isinstance(args, dict):
                continue
            if item.get("name") == "process_name" and isinstance(args.get("name"), str):
                process_names[pid] = args["name"]
            elif item.get("name") == "process_sort_index":
                sort = _int(args.get("sort_index"))
                if sort is not None:
                    process_sorts[pid] = sort
        elif phase == "X":
            slices.append(item)
    for item in slices:
        pid = _int(item.get("pid")) or 0
        layer = process_sorts.get(pid, (pid >> 5) & 31)
        hardware = process_names.get(pid) == "Ascend Hardware" or (
            pid not in process_names and layer == LAYER_HARDWARE
        )
        event = _slice_event(item, pid, hardware, layer == LAYER_MSPROFTX)
        if event is None:
            parsed.skipped += 1
        else:
            parsed.events.append(event)
    if parsed.skipped:
        parsed.problems.append(
            f"{name}: {parsed.skipped} slice(s) that are not device tasks or msproftx"
            " ranges (CANN API calls, other layers) left out"
        )
    return parsed


def _slice_event(item: dict[str, Any], pid: int, hardware: bool, msproftx: bool) -> ev.Event | None:
    start, duration = _ns(item.get("ts")), _ns(item.get("dur"))
    if start is None or duration is None or not _timed(start, duration):
        return None
    if not (hardware or msproftx):
        return None
    name = item.get("name")
    name = name if isinstance(name, str) else ""
    args = item.get("args")
    args = args if isinstance(args, dict) else {}
    tid = _int(item.get("tid"))
    if msproftx:
        event_type = args.get("event_type")
        return _tx_event(
            name, start, start + duration, tid if tid is not None and tid > 0 else 0,
            event_type if isinstance(event_type, str) else "",
        )  # fmt: skip
    device = pid & 31
    stream = _known_id(args.get("Physic Stream Id"))
    task_type = _text(args.get("Task Type")) or ""
    return _timing(
        name or task_type, "", start, duration, model=_model(args.get("Model Id")),
        device=-1 if device == HOST_SLOT else device,
        stream=stream if stream >= 0 else _known_id(tid), task=_known_id(args.get("Task Id")),
        task_type=task_type,
    )  # fmt: skip


PARSERS = {OP_SUMMARY: parse_op_summary, TX_CSV: parse_tx_csv, TIMELINE: parse_timeline}


# ---------------------------------------------------------------- several files
class MsprofReader:
    """Reads msprof export files, each task and msproftx record once however many
    files hold it (see the module docstring); keeps what it has seen, so a file
    read again (watch: it grew) gives only what is new."""

    def __init__(self) -> None:
        self._seen: set[tuple[Any, ...]] = set()
        self.problems: list[str] = []

    def read(self, path: Path) -> list[ev.Event]:
        """The new events of one file; what went wrong goes to ``problems``."""
        kind = msprof_file_kind(path.name)
        if kind is None:
            return []
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            self.problems.append(f"{path}: {exc.strerror or exc}")
            return []
        if len(data) > MAX_FILE_BYTES:
            data = data[:MAX_FILE_BYTES]
            self.problems.append(f"{path}: larger than {MAX_FILE_BYTES >> 30} GiB; read its start")
        parsed = PARSERS[kind](data, str(path))
        self.problems.extend(parsed.problems)
        return [e for e in parsed.events if self._first_sight(e)]

    def _first_sight(self, event: ev.Event) -> bool:
        if type(event) is ev.OpTiming:
            if event.task_id < 0 or event.stream_id < 0:  # a communication op, say
                key: tuple[Any, ...] = (event.device_id, event.op_name, event.start_us)
            else:
                key = (event.device_id, event.stream_id, event.task_id, event.start_us)
        elif type(event) is ev.TxRange:
            key = ("range", event.message, event.start_ns // 1000, event.thread_id)
        elif type(event) is ev.TxMark:
            key = ("mark", event.message, event.ts_ns // 1000, event.thread_id)
        else:
            return True
        if key in self._seen:
            return False
        self._seen.add(key)
        return True


def read_order(files: Iterable[Path]) -> list[Path]:
    """``files`` in the order they are read: op_summary, msprof_tx CSV, timelines."""
    rank = {kind: n for n, kind in enumerate(READ_ORDER)}
    return sorted(
        files, key=lambda p: (rank.get(msprof_file_kind(p.name) or "", len(rank)), str(p))
    )


def msprof_events(files: Iterable[Path], first_seq: int = 1) -> tuple[list[ev.Event], list[str]]:
    """Every event of the files, in time order and numbered from ``first_seq``, and
    one problem line per thing that went wrong (never raised)."""
    reader = MsprofReader()
    events: list[ev.Event] = []
    for path in read_order(files):
        events.extend(reader.read(path))
    events.sort(key=lambda e: int(e.ts_ns))  # a range's ts is its end, as the agent's
    numbered = [e._replace(seq=n) for n, e in enumerate(events, start=first_seq)]
    return numbered, reader.problems


class MsprofFollower:
    """The export files under a directory as they appear (``aclmon watch
    --profiling DIR``): each is read once its size and time are the same at two
    passes (msprof may still be writing it), and again when it changes, giving
    only what is new. Call :meth:`scan` off the UI thread."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.reader = MsprofReader()
        #: path -> (size, mtime) when read, or when last seen still changing
        self._read: dict[str, tuple[int, int]] = {}
        self._changing: dict[str, tuple[int, int]] = {}
        self._said: set[str] = set()

    def scan(self, final: bool = False) -> tuple[list[ev.Event], list[str]]:
        """New events (seq 0: read from files, outside any sequence) in time order,
        and what went wrong that was not said before. ``final``: read what is
        there now without waiting for it to settle."""
        from aclmon.dump.walk import walk_files

        ready: list[Path] = []
        for entry in walk_files(self.directory, FOLLOW_DEPTH, FOLLOW_ENTRIES):
            if msprof_file_kind(entry.name) is None:
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            seen = (info.st_size, info.st_mtime_ns)
            if self._read.get(entry.path) == seen:
                continue
            if not final and self._changing.get(entry.path) != seen:
                self._changing[entry.path] = seen
                continue
            self._changing.pop(entry.path, None)
            self._read[entry.path] = seen
            ready.append(Path(entry.path))
        events: list[ev.Event] = []
        for path in read_order(ready):
            events.extend(self.reader.read(path))
        events.sort(key=lambda e: int(e.ts_ns))
        new = [p for p in dict.fromkeys(self.reader.problems) if p not in self._said]
        self._said.update(new)
        self.reader.problems.clear()
        return events, new
