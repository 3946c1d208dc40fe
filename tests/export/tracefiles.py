"""Reading an export back, and counting a recording against it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from aclmon import events as ev
from aclmon.bus.recording import RecordingReader

#: the kinds whose every event the export shows once, by the trace category
COUNTED = ("operator", "execution", "synchronize", "msproftx", "msproftx mark", "exception",
           "overflow")  # fmt: skip


def load(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    trace = json.loads(Path(path).read_text())
    return trace, trace["traceEvents"]


def trace_items(paths: list[Path]) -> Counter[tuple[Any, ...]]:
    """(category, name, start ns, end ns) of every slice and instant in the files, as
    a multiset (an async slice once, from its b and e)."""
    items: Counter[tuple[Any, ...]] = Counter()
    for path in paths:
        trace, events = load(path)
        origin = trace["otherData"]["session_start_ns"]
        begins: dict[Any, dict[str, Any]] = {}
        for e in events:
            ph = e["ph"]
            if ph == "X":
                start = origin + round(e["ts"] * 1000)
                end = start + round(e["dur"] * 1000)
                items[(e["cat"], _plain_name(e["cat"], e["name"]), start, end)] += 1
            elif ph == "i":
                at = origin + round(e["ts"] * 1000)
                items[(e["cat"], _plain_name(e["cat"], e["name"]), at, at)] += 1
            elif ph == "b":
                begins[(e["cat"], e["id"])] = e
            elif ph == "e":
                b = begins.pop((e["cat"], e["id"]))
                start, end = (origin + round(x["ts"] * 1000) for x in (b, e))
                items[(e["cat"], _plain_name(e["cat"], b["name"]), start, end)] += 1
    return items


def recording_items(path: Path) -> Counter[tuple[Any, ...]]:
    """The same, from the recording's own events (what the export must show once)."""
    items: Counter[tuple[Any, ...]] = Counter()
    seen_overflows = set()
    with RecordingReader(path, background=False) as reader:
        for e in reader.iter_events():
            kind = type(e)
            if kind is ev.OpTiming:
                items[
                    ("operator", e.op_name, e.start_us * 1000, max(e.end_us, e.start_us) * 1000)
                ] += 1
            elif kind is ev.ExecuteEnd:
                name = "AscendCL@aclmdlExecuteAsync" if e.stream else "AscendCL@aclmdlExecute"
                items[("execution", name, e.ts_ns - e.duration_ns, e.ts_ns)] += 1
            elif kind is ev.StreamSynchronized:
                items[("synchronize", "sync", e.ts_ns - e.duration_ns, e.ts_ns)] += 1
            elif kind is ev.TxRange:
                items[("msproftx", e.message, e.start_ns, e.end_ns)] += 1
            elif kind is ev.TxMark:
                items[("msproftx mark", e.message, e.ts_ns, e.ts_ns)] += 1
            elif kind is ev.AclException:
                items[("exception", e.op_name, e.ts_ns, e.ts_ns)] += 1
            elif kind is ev.DumpFileSeen and e.kind == "overflow" and e.path not in seen_overflows:
                seen_overflows.add(e.path)
                stamp = e.summary.get("timestamp")
                at = stamp * 1000 if isinstance(stamp, int) and stamp > 0 else e.ts_ns
                items[("overflow", e.summary.get("op_name", "?"), at, at)] += 1
    return items


def comparable(items: Counter[tuple[Any, ...]]) -> Counter[tuple[Any, ...]]:
    """The counted kinds only, named as both sides can say them."""
    return Counter({key: n for key, n in items.items() if key[0] in COUNTED})


def _plain_name(cat: str, name: str) -> str:
    """A trace event's name as the recording says it: synchronize calls by their
    kind alone, exceptions and overflows by their operator."""
    if cat == "synchronize":
        return "sync"
    if cat == "exception":
        return name.partition(": ")[2]
    if cat == "overflow":
        return name.removeprefix("overflow: ").rpartition(" ")[2] or "?"
    return name


def cut_inside_a_frame(recording: Path, cut: Path, fraction: float = 0.5) -> Path:
    """``recording`` cut a few bytes into the frame at ``fraction`` of its frames
    (a file cut at a frame's end is not damaged: it just ends)."""
    with RecordingReader(recording, background=False) as reader:
        offset = int(reader.offsets[int(len(reader) * fraction)])
    cut.write_bytes(recording.read_bytes()[: offset + 7])
    return cut
