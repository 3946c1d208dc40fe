"""Synchronizes folded into the state: a stream's (its Begin marks it
synchronizing, its End counts it) and a device's (``synchronize_device``,
stream ``DEVICE_SYNC``: a per-device figure, as the event names no stream).

An End is matched to the Begin it closes by time (:mod:`aclmon.store.pairing`):
a stream or device with a Begin waiting is the better guess than the usual
resolution of a handle-only event.
"""

from __future__ import annotations

from aclmon import events as ev
from aclmon.events import DEVICE_SYNC
from aclmon.store.attribution import synchronized
from aclmon.store.pairing import distance, note_begin, note_end, take_back
from aclmon.store.state import STREAM_DESTROYED, DeviceState, StoreState, StreamState, device_of
from aclmon.store.streams import pending_streams, refresh_stream, resolve_stream


def sync_device(s: StoreState, thread_id: int | None = None) -> DeviceState | None:
    """The device a synchronize_device (stream = DEVICE_SYNC) waited on.

    The device of the thread's current context, else of the context most
    recently made current, else the only device we know; None if ambiguous.
    """
    candidates = []
    if thread_id is not None and thread_id in s.thread_contexts:
        candidates.append(s.thread_contexts[thread_id])
    if s.current_context is not None:
        candidates.append(s.current_context)
    for context in candidates:
        ctx = s.contexts.get(context)
        if ctx is not None:
            return device_of(s, ctx.device_id)
    if len(s.devices) == 1:
        return next(iter(s.devices.values()))
    return None


def stream_failed(s: StoreState, stream: StreamState, code: int) -> None:
    """A synchronize or execute on ``stream`` failed: count it there and on its
    device (where it stays when the stream goes)."""
    device = device_of(s, stream.device_id)
    device.stream_errors += 1
    if not stream.errors:
        device.failed_streams += 1
    stream.errors += 1
    stream.last_error = code


def fold_sync_begin(s: StoreState, e: ev.StreamSyncBegin) -> None:
    if e.stream == DEVICE_SYNC:
        device = sync_device(s, e.thread_id)
        if device is not None and note_begin(
            device.pending_syncs, device.recent_sync_ends, e.ts_ns
        ):
            device.synchronizing = True
        return
    stream = resolve_stream(s, e.stream, thread_id=e.thread_id)
    if stream is not None and stream.state != STREAM_DESTROYED:
        note_begin(stream.pending_syncs, stream.recent_sync_ends, e.ts_ns)
        refresh_stream(s, stream)


def fold_synchronized(s: StoreState, e: ev.StreamSynchronized) -> None:
    if e.stream == DEVICE_SYNC:
        _device_synchronized(s, e)
        return
    start = e.ts_ns - e.duration_ns
    # A stream whose sync Begin (resolved through its thread) is pending is the
    # better guess; otherwise the usual resolution.
    waiting = (
        [st for st in pending_streams(s, e.stream) if st.pending_syncs]
        if s.pending_streams
        else None
    )
    stream: StreamState | None
    if waiting:
        stream = min(waiting, key=lambda st: distance(st.pending_syncs, start))
    else:
        stream = resolve_stream(s, e.stream)
    if stream is None:
        return
    if _count_sync(stream, e):
        stream_failed(s, stream, e.ret)
    synchronized(s, stream, e.ret)
    if stream.pending_syncs:
        take_back(stream.pending_syncs, stream.recent_sync_ends, start, e.ts_ns)
        refresh_stream(s, stream)
    else:  # nothing pending: the derived state cannot change
        note_end(stream.recent_sync_ends, start, e.duration_ns)


def _device_synchronized(s: StoreState, e: ev.StreamSynchronized) -> None:
    # No thread in the event: a device whose synchronize_device Begin is pending
    # first (closest start), else the current context's device.
    start = e.ts_ns - e.duration_ns
    waiting = [d for d in s.devices.values() if d.pending_syncs]
    if waiting:
        device: DeviceState | None = min(waiting, key=lambda d: distance(d.pending_syncs, start))
    else:
        device = sync_device(s)
    if device is None:
        s.device_syncs_unattributed += 1
        return
    if _count_sync(device, e):
        device.sync_errors += 1
    take_back(device.pending_syncs, device.recent_sync_ends, start, e.ts_ns)
    device.synchronizing = bool(device.pending_syncs)


def _count_sync(target: StreamState | DeviceState, e: ev.StreamSynchronized) -> bool:
    """Count one finished synchronize on a stream or device; True if it failed."""
    target.syncs += 1
    target.last_sync_ns = e.duration_ns
    target.last_sync_ret = e.ret
    return e.ret != 0
