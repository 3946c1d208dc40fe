"""``aclmon replay --json PATH``: what a recording and a dump directory hold,
as one JSON object, without a screen (for scripts and CI).

Counts by kind, every exception with its operator and error code, every
overflow with what its status bits mean, and the time span. A recording is
read once from start to end with the replay engine's batch decoder, so a
million-event file takes seconds and little memory; listed items are capped
(``*_total`` says how many there were).
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from aclmon import events as ev
from aclmon.acl_constants import error_name, error_text
from aclmon.sources.replay_inputs import ReplayInputs, dump_events, exception_events, log_events

#: items listed per section at most; totals are always exact.
LIST_LIMIT = 1_000


def _utc(ts_ns: int | None) -> str | None:
    if not ts_ns:
        return None
    import datetime as dt

    when = dt.datetime.fromtimestamp(ts_ns / 1e9, tz=dt.timezone.utc)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _span(first: int | None, last: int | None) -> dict[str, Any]:
    return {
        "first_ns": first,
        "last_ns": last,
        "first_utc": _utc(first),
        "last_utc": _utc(last),
        "seconds": round((last - first) / 1e9, 3) if first and last else 0.0,
    }


def exception_json(e: ev.AclException) -> dict[str, Any]:
    return {
        "ts_ns": e.ts_ns,
        "utc": _utc(e.ts_ns),
        "device_id": e.device_id,
        "stream_id": e.stream_id,
        "task_id": e.task_id,
        "error_code": e.error_code,
        # 0: not recorded (an exception dump says which operator failed, not how)
        "error_name": error_name(e.error_code) if e.error_code else None,
        "meaning": error_text(e.error_code) if e.error_code else None,
        "op_name": e.op_name,
        "op_type": e.op_type,
    }


def overflow_json(d: ev.DumpFileSeen) -> dict[str, Any]:
    """An overflow file: the status meanings of each record and the operator."""
    from aclmon.dump.summary import summary_operator, summary_target

    summary = d.summary if isinstance(d.summary, dict) else {}
    target = summary_target(summary)
    records = []
    for item in summary.get("records") or ():
        if not isinstance(item, dict):
            continue
        explained = item.get("explained") or []
        records.append(
            {
                "output": item.get("output"),
                "status": [str(x) for x in explained],
                "overflowed": [str(x) for x in explained if not str(x).endswith("no overflow")],
                "error": item.get("error"),
            }
        )
    return {
        "ts_ns": d.ts_ns,
        "utc": _utc(d.ts_ns),
        "path": d.path,
        # of the operator that overflowed (the file's own name carries the debug task's)
        "task_id": target.get("task_id"),
        "stream_id": target.get("stream_id"),
        "operator": summary_operator(summary) or None,
        "op_dump": summary.get("op_dump"),
        "group": summary.get("group"),
        "records": records,
        "error": summary.get("error"),
    }


#: operator dumps remembered to name the operators of overflows
MAX_OP_DUMPS = 200_000


def _op_dump_key(d: ev.DumpFileSeen) -> tuple[str, int, int | None] | None:
    task = d.summary.get("task_id")
    stream = d.summary.get("stream_id")
    if not isinstance(task, int) or not (stream is None or isinstance(stream, int)):
        return None
    return (os.path.dirname(d.path), task, stream)


def _target(d: ev.DumpFileSeen) -> tuple[str, int, int | None] | None:
    """Where the operator an overflow record points at would be: its directory,
    and the task and stream ids from the first decoded record."""
    from aclmon.dump.summary import summary_target

    target = summary_target(d.summary)
    task, stream = target.get("task_id"), target.get("stream_id")
    if isinstance(task, int):
        return (os.path.dirname(d.path), task, stream if isinstance(stream, int) else None)
    return None


def _find_op_dump(
    op_dumps: dict[tuple[str, int, int | None], ev.DumpFileSeen],
    target: tuple[str, int, int | None] | None,
) -> ev.DumpFileSeen | None:
    if target is None:
        return None
    return op_dumps.get(target) or op_dumps.get((target[0], target[1], None))


def recording_summary(path: os.PathLike[str] | str) -> dict[str, Any]:
    from aclmon.bus.recording import RecordingReader
    from aclmon.store.replay import ReplayEngine, iter_recording_events

    with RecordingReader(path, background=False) as reader:
        engine = ReplayEngine(reader, reader.path)
        try:
            counts: Counter[str] = Counter()
            exceptions: list[dict[str, Any]] = []
            overflows: list[dict[str, Any]] = []
            exceptions_total = overflows_total = 0
            first = last = None
            decoded = 0
            # (directory, task id, stream id) -> the operator dump, to name the
            # operator each overflow points at (it may come before or after it).
            op_dumps: dict[tuple[str, int, int | None], ev.DumpFileSeen] = {}
            targets: list[tuple[str, int, int | None] | None] = []
            # Snapshot copies (seq 0: what an agent re-sends a viewer, as it closes too)
            # of an exception or a dump file already in the recording are not counted.
            seen: set[tuple[Any, ...]] = set()
            restated = 0
            for event in iter_recording_events(engine):
                decoded += 1
                if isinstance(event, (ev.AclException, ev.DumpFileSeen)):
                    same = (type(event), event.ts_ns, event[2], event[3])
                    if not event.seq and same in seen:
                        restated += 1
                        continue
                    seen.add(same)
                counts[ev.KIND_NAMES[type(event)]] += 1
                ts = event.ts_ns
                if ts:  # seq-0 snapshot events may carry real times; 0 means none
                    first = ts if first is None or ts < first else first
                    last = ts if last is None or ts > last else last
                if type(event) is ev.AclException:
                    exceptions_total += 1
                    if len(exceptions) < LIST_LIMIT:
                        exceptions.append(exception_json(event))
                elif type(event) is ev.DumpFileSeen and event.kind == ev.OVERFLOW_DUMP:
                    overflows_total += 1
                    if len(overflows) < LIST_LIMIT:
                        overflows.append(overflow_json(event))
                        targets.append(_target(event))
                elif type(event) is ev.DumpFileSeen and isinstance(event.summary, dict):
                    key = _op_dump_key(event)
                    if key is not None and len(op_dumps) < MAX_OP_DUMPS:
                        op_dumps.setdefault(key, event)
        finally:
            engine.frames.close()
        for item, target in zip(overflows, targets, strict=True):
            found = _find_op_dump(op_dumps, target)
            if found is not None:
                summary = found.summary if isinstance(found.summary, dict) else {}
                operator = f"{summary.get('op_type', '')} {summary.get('op_name', '')}".strip()
                item["operator"], item["op_dump"] = operator or None, found.path
        cut = reader.cut
        return {
            "path": str(path),
            "source_info": reader.header.source_info,
            "created_utc": _utc(reader.header.created_ns),
            "frames": len(reader),
            "events": decoded,
            "skipped_frames": len(reader) - decoded,
            "truncated": None
            if cut is None
            else {"offset": cut.offset, "reason": cut.reason, "damaged": cut.damaged},
            "time_span": _span(first, last),
            "counts": dict(sorted(counts.items())),
            "restated": restated,
            "exceptions_total": exceptions_total,
            "exceptions": exceptions,
            "overflows_total": overflows_total,
            "overflows": overflows,
        }


def dumps_summary(inputs: ReplayInputs) -> dict[str, Any]:
    events = dump_events(inputs.dump_files)
    counts: Counter[str] = Counter(d.kind for d in events)
    groups: Counter[str] = Counter()
    errors = []
    for d in events:
        summary = d.summary if isinstance(d.summary, dict) else {}
        if d.kind != ev.OVERFLOW_DUMP:
            groups[str(summary.get("group", ""))] += 1
        if summary.get("error"):
            errors.append({"path": d.path, "error": summary["error"]})
    times = [d.ts_ns for d in events if d.ts_ns]
    overflows = [overflow_json(d) for d in events if d.kind == ev.OVERFLOW_DUMP]
    exceptions = [exception_json(e) for e in exception_events(events)]
    return {
        "files": len(events),
        "counts": dict(sorted(counts.items())),
        "time_span": _span(min(times) if times else None, max(times) if times else None),
        # one per exception dump, as the replay's Exceptions view lists them
        "exceptions_total": len(exceptions),
        "exceptions": exceptions[:LIST_LIMIT],
        "overflows_total": len(overflows),
        "overflows": overflows[:LIST_LIMIT],
        "op_dumps_by_group": dict(groups),
        "errors": errors[:LIST_LIMIT],
    }


def logs_summary(inputs: ReplayInputs) -> dict[str, Any]:
    """The CANN log files found: their warnings and errors (as the Logs view shows them)."""
    lines, problems = log_events(inputs.log_files)
    inputs.problems.extend(problems)
    levels: Counter[str] = Counter(line.level for line in lines)
    times = [line.logged_ns for line in lines if line.logged_ns]
    return {
        "files": [str(p) for p in inputs.log_files],
        "lines_total": len(lines),
        "levels": dict(sorted(levels.items())),
        "time_span": _span(min(times) if times else None, max(times) if times else None),
        "lines": [ev.to_json(line) for line in lines[:LIST_LIMIT]],
    }


def msprof_summary(inputs: ReplayInputs) -> dict[str, Any]:
    """msprof's exported files: the operators as the Profiling view's table
    shows them (by total time), the msproftx records and the time span."""
    from aclmon.sources.msprof_files import msprof_events
    from aclmon.store import Store

    events, problems = msprof_events(inputs.msprof_files)
    inputs.problems.extend(problems)
    store = Store(op_limit=max(10_000, len(events)))
    store.apply_many(events)
    counts: Counter[str] = Counter(ev.KIND_NAMES[type(e)] for e in events)
    times = [e.ts_ns for e in events if e.ts_ns]
    operators = [
        {
            "op_name": o.op_name,
            "op_type": o.op_type or None,
            "device_id": o.device_id if o.device_id >= 0 else None,
            "model_id": o.model_id,
            "count": o.count,
            "total_us": o.total_us,
            "mean_us": round(o.mean_us, 3),
            "min_us": o.min_us,
            "max_us": o.max_us,
            "metrics": {name: o.metric(name) for name in o.metric_sums},
        }
        for o in store.sorted_ops()[:LIST_LIMIT]
    ]
    return {
        "files": [str(p) for p in inputs.msprof_files],
        "counts": dict(sorted(counts.items())),
        "time_span": _span(min(times) if times else None, max(times) if times else None),
        "operators_total": len(store.state.ops),
        "operators": operators,
    }


def replay_summary(inputs: ReplayInputs) -> dict[str, Any]:
    """The whole ``--json`` object for what ``find_inputs`` found."""
    chosen = inputs.recording
    return {
        "path": str(inputs.root),
        "recording": recording_summary(chosen) if chosen is not None else None,
        "other_recordings": [str(p) for p in inputs.recordings if p != chosen],
        "dumps": dumps_summary(inputs) if inputs.dump_files else None,
        "logs": logs_summary(inputs) if inputs.log_files else None,
        "msprof": msprof_summary(inputs) if inputs.msprof_files else None,
        "problems": inputs.problems,
    }
