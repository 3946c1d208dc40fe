"""What the job wrote, kept in bounded records: its log lines, its failed
calls and the dump files seen (each ring bounded by count, the text ones by
bytes too; the newest always stays, whole).

A record the agent's history sends again (``seq`` 0, to a late or reconnecting
viewer) is skipped when the state holds it already.
"""

from __future__ import annotations

import os

from aclmon import events as ev
from aclmon.events import optypes
from aclmon.store.attribution import learned_op_type
from aclmon.store.state import (
    CALL_FAILURE_BYTES_LIMIT,
    LOG_BYTES_LIMIT,
    CallFailure,
    StoreState,
    ring_add,
)
from aclmon.store.streams import resolve_stream


def fold_dump_file(s: StoreState, e: ev.DumpFileSeen) -> None:
    if e.seq == 0 and any(d.path == e.path and d.ts_ns == e.ts_ns for d in s.dumps):
        return  # from the agent's history, already seen
    if e.kind in ("op-dump", "exception-dump"):
        named = optypes.from_dump_name(
            os.path.basename(e.path), exception_dump=e.kind == "exception-dump"
        )
        if named is not None:
            learned_op_type(s, named[1], named[0])
    s.dumps_total += 1
    s.dumps_dropped += ring_add(s.dumps, e, s.dump_limit)


def fold_log_line(s: StoreState, e: ev.LogLine) -> None:
    # The same line twice: the first copy stays (see StoreState.log_entries). A
    # file entry is the same whenever it was read; an agent's line, at its time.
    key = hash(
        (e.logged_ns, e.pid, e.location, e.text) if e.log_file else (e.ts_ns, e.level, e.text)
    )
    if key in s.log_entries:
        return
    s.log_entries[key] = None
    named = optypes.from_log_text(e.text)  # GE's [AIC_INFO] line of an exception
    if named is not None:
        learned_op_type(s, *named)
    if len(s.log_entries) > 4 * s.log_limit:
        del s.log_entries[next(iter(s.log_entries))]
    s.logs.append(e)
    s.logs_bytes += _text_size(e)
    while len(s.logs) > s.log_limit or (s.logs_bytes > LOG_BYTES_LIMIT and len(s.logs) > 1):
        s.logs_bytes -= _text_size(s.logs.popleft())
        s.logs_dropped += 1


def fold_call_failed(s: StoreState, e: ev.CallFailed) -> None:
    if e.seq == 0:
        key = (e.ts_ns, e.thread_id, e.api)
        if any((f.event.ts_ns, f.event.thread_id, f.event.api) == key for f in s.call_failures):
            return
    device_id = stream_id = -1
    if e.stream != -1:
        stream = resolve_stream(s, e.stream, thread_id=e.thread_id)
        if stream is not None:
            stream.last_error_message = e.message  # shown in the stream's line
            device_id, stream_id = stream.device_id, stream.stream_id
    s.call_failures.append(CallFailure(e, device_id, stream_id))
    s.call_failures_total += 1
    s.call_failures_bytes += len(e.message)
    while len(s.call_failures) > s.log_limit or (
        s.call_failures_bytes > CALL_FAILURE_BYTES_LIMIT and len(s.call_failures) > 1
    ):
        s.call_failures_bytes -= len(s.call_failures.popleft().event.message)


def _text_size(line: ev.LogLine) -> int:
    """What a log line holds in text (its message, where and which file)."""
    return len(line.text) + len(line.location) + len(line.log_file) + len(line.process)
