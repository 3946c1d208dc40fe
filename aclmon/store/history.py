"""A History event folded into the state: the agent's totals since it started.

A viewer that joined late (or reconnected) takes them; one that saw everything
keeps its own: the larger figure wins either way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aclmon import events as ev

if TYPE_CHECKING:
    from aclmon.store.fold import Store


def fold_history(store: Store, e: ev.History) -> None:
    """Take the totals of ``e`` where they are larger than the store's own."""
    s = store.state
    s.history_since_ns = e.since_ns
    for model_id, executions, failures in _groups(e.models, 3):
        model = s.models.get(model_id)
        if model is not None:
            model.executions = max(model.executions, executions)
            model.failures = max(model.failures, failures)
    for handle, syncs, errors, last_error in _groups(e.streams, 4):
        stream = store.resolve_stream(handle)
        if stream is not None:
            stream.syncs = max(stream.syncs, syncs)
            if errors > stream.errors:
                stream.errors, stream.last_error = errors, last_error
    for device_id, stream_id, count in _groups(e.stream_exceptions, 3):
        stream = store.stream_by_id(device_id, stream_id)
        if stream is not None:
            stream.exceptions = max(stream.exceptions, count)
    for device_id, errors, exceptions, failed_streams in _groups(e.devices, 4):
        device = s.devices.get(device_id)
        if device is not None:
            device.stream_errors = max(device.stream_errors, errors)
            device.exceptions = max(device.exceptions, exceptions)
            device.failed_streams = max(device.failed_streams, failed_streams)
    if e.through_seq:
        # Events numbered up to it are in these figures: the next one folded is the
        # one after it (no gap), and a copy of one of them arriving later (a replay
        # after a stored snapshot) is not folded again.
        s.covered_seq = max(s.covered_seq, e.through_seq)
        s.last_seq = max(s.last_seq, e.through_seq)
    s.exceptions_total = max(s.exceptions_total, e.exceptions_total)
    s.exceptions_dropped = max(s.exceptions_dropped, s.exceptions_total - len(s.exceptions))
    s.dumps_total = max(s.dumps_total, e.dumps_total)
    s.dumps_dropped = max(s.dumps_dropped, s.dumps_total - len(s.dumps))
    s.call_failures_total = max(s.call_failures_total, e.call_failures_total)


def _groups(values: tuple[int, ...], size: int) -> list[tuple[int, ...]]:
    """A History's flat figures in groups of ``size`` (a short tail is ignored)."""
    return [tuple(values[i : i + size]) for i in range(0, len(values) - size + 1, size)]
