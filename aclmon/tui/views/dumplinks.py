"""How dump files point at each other, from what the agent said about them
(``DumpFileSeen.summary``), without reading any file: the operator an overflow
record names, the operator dumps of a task, the first overflow of a step.

A step is the directory a file sits in: the runtime writes one directory per
``{time}/{device}/{model}/{model id}/{step}``, so files side by side belong to
the same iteration of the same model on the same device.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from aclmon import events as ev
from aclmon.dump.opdebug import overflow_target
from aclmon.sources.replay_inputs import DumpGroup, dump_group


def _summary(dump: ev.DumpFileSeen) -> dict[str, Any]:
    return dump.summary if isinstance(dump.summary, dict) else {}


@lru_cache(maxsize=8_192)
def dump_place(path: str) -> DumpGroup:
    """The device, model and step a file belongs to, from the directories it sits in."""
    return dump_group(Path(path))


def overflow_targets(dump: ev.DumpFileSeen) -> list[tuple[int, int | None]]:
    """(task id, stream id or None) of each operator an overflow file's records name."""
    records = _summary(dump).get("records")
    found = []
    for item in records if isinstance(records, (list, tuple)) else ():
        if isinstance(item, dict) and isinstance(item.get("record"), dict):
            target = overflow_target(item["record"])
            task, stream = target.get("task_id"), target.get("stream_id")
            if isinstance(task, int):
                found.append((task, stream if isinstance(stream, int) else None))
    return found


def is_task_dump(dump: ev.DumpFileSeen, task: int, stream: int | None) -> bool:
    """An operator dump (not an overflow record) of ``task`` on ``stream``: by what the
    agent read from its header, or by the ``.{task}.{stream}.`` of its name."""
    if dump.kind == ev.OVERFLOW_DUMP:
        return False
    summary = _summary(dump)
    if summary.get("task_id") == task and summary.get("stream_id") in (None, stream):
        return True
    return stream is not None and f".{task}.{stream}." in os.path.basename(dump.path)


def overflow_operator(
    overflow: ev.DumpFileSeen, dumps: list[ev.DumpFileSeen]
) -> ev.DumpFileSeen | None:
    """The operator dump an overflow record points at: the one a dump directory
    scan linked (``op_dump``), else one of the named task and stream, preferring
    the record's own directory (its step) and the latest before the record."""
    linked = _summary(overflow).get("op_dump")
    if isinstance(linked, str) and linked:
        for dump in dumps:
            if dump.path == linked:
                return dump
    here = os.path.dirname(overflow.path)
    best: tuple[tuple[bool, bool, int], ev.DumpFileSeen] | None = None
    for task, stream in overflow_targets(overflow):
        for dump in dumps:
            if not is_task_dump(dump, task, stream):
                continue
            before = dump.ts_ns <= overflow.ts_ns
            key = (
                os.path.dirname(dump.path) == here,
                before,
                dump.ts_ns if before else -dump.ts_ns,
            )
            if best is None or key > best[0]:
                best = (key, dump)
    return best[1] if best is not None else None


def overflows_of_step(
    overflow: ev.DumpFileSeen, dumps: list[ev.DumpFileSeen]
) -> list[ev.DumpFileSeen]:
    """The overflow records of the same step (directory) as ``overflow``, earliest first."""
    here = os.path.dirname(overflow.path)
    same = [d for d in dumps if d.kind == ev.OVERFLOW_DUMP and os.path.dirname(d.path) == here]
    return sorted(same, key=lambda d: (d.ts_ns, d.seq))


def operator_name(dump: ev.DumpFileSeen) -> str:
    """The operator a file is about, as the agent named it ("" when it did not)."""
    summary = _summary(dump)
    for key in ("op_name", "operator"):
        value = summary.get(key)
        if isinstance(value, str) and value:
            return value
    return ""
