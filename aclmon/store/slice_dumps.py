"""What the timeline says about dump files: the exception dump an exception
instant names, and the overflow instant an overflow record becomes.

The dump watcher announces an exception dump a moment after the exception it
belongs to, so an exception instant is held back (bounded, in event time) until
its dump is seen or it is clearly not coming. A dump directory given with a
recording is known from the start, and the overflows it holds may also be in the
recording: each overflow file is shown once, recognised by the tree below the
dump path (the directory may have moved since).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from aclmon import events as ev
from aclmon.store.slices import UNKNOWN_DEVICE, Args, Instant, clip_text

#: exceptions held back, waiting for their exception dump to be announced
PENDING_EXCEPTIONS = 1024
#: how long (event time) an exception waits for its dump before it goes without
DUMP_WAIT_NS = 10_000_000_000
#: exception dumps (by device and task) and overflow files remembered
DUMP_MEMORY = 65_536
#: the directory levels that name a dump file under its dump path
#: (``{time}/{device}/{model}/{model_id}/{step}/file``)
_TREE_DEPTH = 6


def dump_tree_device(path: str) -> int | None:
    """The device directory of a file in the runtime's documented dump trees
    (``{time}/{device}/{model}/{model_id}/{step}/file`` and exception dumps'
    ``…/data-dump/{device}/file``), or None."""
    parts = path.replace("\\", "/").split("/")
    if len(parts) >= 3 and parts[-3] == "data-dump" and parts[-2].isdigit():
        return int(parts[-2])
    if len(parts) >= _TREE_DEPTH:
        time_dir, device, _model, model_id, step = parts[-_TREE_DEPTH:-1]
        numbers = (device, model_id, step)
        if len(time_dir) == 14 and time_dir.isdigit() and all(n.isdigit() for n in numbers):
            return int(device)
    return None


def overflow_time(e: ev.DumpFileSeen) -> int:
    """When an overflow happened: the stamp (µs) in its file name, else when the
    file was seen."""
    stamp = e.summary.get("timestamp") if isinstance(e.summary, dict) else None
    return stamp * 1000 if type(stamp) is int and 0 < stamp < 1 << 53 else int(e.ts_ns)


@dataclass
class Held:
    instant: Instant
    device: int
    task: int
    stream: int


class DumpLinks:
    """Exception dumps seen, exceptions waiting for theirs, overflow files shown."""

    def __init__(self) -> None:
        #: (device, task id) -> (stream id or None, path) of its exception dumps
        self._dumps: dict[tuple[int, int], list[tuple[int | None, str]]] = {}
        #: exceptions waiting for their dump, oldest first
        self.held: deque[Held] = deque()
        self._overflows: dict[str, None] = {}

    def exception_dump(self, device: int, task: int, stream: int) -> str | None:
        for key in ((device, task), (UNKNOWN_DEVICE, task)):
            for stream_id, path in self._dumps.get(key, ()):
                if stream_id is None or stream_id == stream:
                    return path
        return None

    def hold(self, instant: Instant, device: int, task: int, stream: int) -> Instant | None:
        """Hold an exception until its dump comes; returns the oldest one held if it
        must go now (too many held)."""
        pushed = self.held.popleft().instant if len(self.held) >= PENDING_EXCEPTIONS else None
        self.held.append(Held(instant, device, task, stream))
        return pushed

    def release(self, before_ns: int | None) -> list[Instant]:
        """The exceptions held since before ``before_ns`` (all: None); they go
        without a dump."""
        held, out = self.held, []
        while held and (before_ns is None or held[0].instant.ts_ns < before_ns):
            out.append(held.popleft().instant)
        return out

    def note_exception_dump(self, e: ev.DumpFileSeen) -> list[Instant]:
        """Remember an exception dump; returns the held exceptions it belongs to
        (their ``Dump Path`` now set)."""
        summary = e.summary if isinstance(e.summary, dict) else {}
        task, stream = summary.get("task_id"), summary.get("stream_id")
        if type(task) is not int:
            return []
        stream_id = stream if type(stream) is int else None
        device = dump_tree_device(e.path)
        if device is None and type(summary.get("device_id")) is int:
            device = summary["device_id"]
        key = (device if device is not None else UNKNOWN_DEVICE, task)
        dumps = self._dumps
        if key not in dumps and len(dumps) >= DUMP_MEMORY:
            del dumps[next(iter(dumps))]
        path = clip_text(e.path)
        known = dumps.setdefault(key, [])
        known.append((stream_id, path))
        del known[:-4]
        found: list[Instant] = []
        kept: deque[Held] = deque()
        for held in self.held:
            if (
                held.task == task
                and device in (None, held.device)
                and stream_id in (None, held.stream)
            ):
                held.instant.args["Dump Path"] = path
                found.append(held.instant)
            else:
                kept.append(held)
        self.held = kept
        return found

    def first_sight(self, overflow: ev.DumpFileSeen) -> bool:
        """True the first time this overflow file is seen (by its place in the tree)."""
        key = "/".join(overflow.path.replace("\\", "/").split("/")[-_TREE_DEPTH:])
        if key in self._overflows:
            return False
        if len(self._overflows) >= DUMP_MEMORY:
            del self._overflows[next(iter(self._overflows))]
        self._overflows[key] = None
        return True


class OverflowItem:
    """An overflow file as an instant: when, what it is called, its args, and the
    device and stream it happened on (None: not known)."""

    __slots__ = ("args", "device", "name", "stream", "ts_ns")

    def __init__(self, e: ev.DumpFileSeen) -> None:
        summary: dict[str, Any] = e.summary if isinstance(e.summary, dict) else {}
        self.ts_ns = overflow_time(e)
        task, stream = summary.get("task_id"), summary.get("stream_id")
        op_type, op_name = summary.get("op_type"), summary.get("op_name")
        if isinstance(op_type, str) and op_type.lower() == "opdebug":
            # an older summary: the Opdebug file's own name and ids, not the operator's
            op_type = op_name = task = stream = None
        operator = " ".join(clip_text(v) for v in (op_type, op_name) if isinstance(v, str) and v)
        args: Args = {"Dump Path": clip_text(e.path)}
        if isinstance(op_name, str) and op_name:
            args["Op Name"] = clip_text(op_name)
        if isinstance(op_type, str) and op_type:
            args["OP Type"] = clip_text(op_type)
        if type(task) is int:
            args["Task Id"] = task
        if type(stream) is int:
            args["Physic Stream Id"] = stream
        op_dump = summary.get("op_dump")
        if isinstance(op_dump, str) and op_dump:
            args["Op Dump"] = clip_text(op_dump)
        records = summary.get("records")
        explained = [
            str(text)
            for item in (records if isinstance(records, (list, tuple)) else ())[:8]
            if isinstance(item, dict) and isinstance(item.get("explained"), (list, tuple))
            for text in item["explained"][:4]
        ]
        if explained:
            args["Status"] = clip_text("; ".join(explained))
        self.args = args
        self.name = f"overflow: {operator or '?'}"
        self.device = dump_tree_device(e.path)
        self.stream = stream if type(stream) is int else None
