"""The store's stream indexes: how an event that names only a stream handle
(or an exception's stream id) finds its stream, and how streams join and leave
the indexes kept in :class:`~aclmon.store.state.StoreState`.

No event walks every stream: streams are found by handle
(``stream_handles``), by exception-info id (``stream_ids``) and among the few
with a Begin pending (``pending_streams``).
"""

from __future__ import annotations

from typing import TypeVar

from aclmon.store.state import STREAM_DESTROYED, ContextState, StoreState, StreamState

#: a stream's key in the state: (context, handle)
StreamKey = tuple[int, int]
_By = TypeVar("_By", int, tuple[int, int])


def stream_by_id(state: StoreState, device_id: int, stream_id: int) -> StreamState | None:
    """The stream with this exception-info id on this device: the first
    live one, else the newest destroyed one."""
    streams = state.streams
    found = None
    for key in state.stream_ids.get((device_id, stream_id), ()):
        stream = streams[key]
        if stream.state != STREAM_DESTROYED:
            return stream
        found = stream
    return found


def resolve_stream(
    state: StoreState, handle: int, *, thread_id: int | None = None, device_id: int | None = None
) -> StreamState | None:
    """The stream an event naming only ``handle`` is about.

    StreamDestroyed, StreamSyncBegin, StreamSynchronized, ExecuteBegin and
    ExecuteEnd carry a stream handle but no context, and handles are not unique
    (every context's default stream is 0). The rule, first match wins, a live
    stream before a destroyed one:

    1. the stream with this handle in ``thread_id``'s current context (only
       StreamSyncBegin names its thread);
    2. the stream with this handle in the context most recently made current
       by any thread;
    3. the most recently created stream with this handle.

    ``device_id`` (ExecuteBegin's device, or the model's device for ExecuteEnd)
    excludes streams of other devices at every step. None if no stream matches.
    StreamSynchronized and ExecuteEnd first try the stream holding a matching
    pending Begin (resolved when the Begin came); stream ``DEVICE_SYNC`` (-1) never
    comes here: it is a device-level figure (DeviceState.syncs).
    """
    streams = state.streams
    fallback: StreamState | None = None
    contexts = []
    if thread_id is not None:
        thread_context = state.thread_contexts.get(thread_id)
        if thread_context is not None:
            contexts.append(thread_context)
    if state.current_context is not None:
        contexts.append(state.current_context)
    for context in contexts:
        stream = streams.get((context, handle))
        if stream is not None and (device_id is None or stream.device_id == device_id):
            if stream.state != STREAM_DESTROYED:
                return stream
            fallback = fallback or stream
    # Newest first: _add_stream (re)inserts each new stream at the end.
    for key in reversed(state.stream_handles.get(handle, {})):
        stream = streams[key]
        if device_id is None or stream.device_id == device_id:
            if stream.state != STREAM_DESTROYED:
                return stream
            fallback = fallback or stream
    return fallback


def refresh_stream(state: StoreState, stream: StreamState) -> None:
    """Re-derive the stream's state and keep the index of streams with Begins pending."""
    stream.refresh()
    key = (stream.context, stream.stream)
    if stream.pending_syncs or stream.pending_executes:
        state.pending_streams.add(key)
    else:
        state.pending_streams.discard(key)


def pending_streams(state: StoreState, handle: int | None) -> list[StreamState]:
    """Streams (with this handle) that have a Begin pending, in key order.

    Slow calls are rare, so this small index spares End events, the commonest
    events, a walk over every stream."""
    if not state.pending_streams:
        return []
    found = []
    for key in sorted(state.pending_streams):
        stream = state.streams.get(key)
        if stream is not None and (handle is None or key[1] == handle):
            found.append(stream)
    return found


def add_stream(state: StoreState, ctx: ContextState, stream: StreamState) -> None:
    key = stream.key
    state.streams[key] = stream
    state.stream_handles.setdefault(stream.stream, {})[key] = None
    state.stream_ids.setdefault((stream.device_id, stream.stream_id), {})[key] = None
    ctx.streams[stream.stream] = None


def forget_stream(state: StoreState, key: tuple[int, int]) -> None:
    """Remove a stream and every trace of it from the indexes."""
    stream = state.streams.pop(key)
    _unindex(state.stream_handles, stream.stream, key)
    _unindex(state.stream_ids, (stream.device_id, stream.stream_id), key)
    ctx = state.contexts.get(key[0])
    if ctx is not None:
        ctx.streams.pop(key[1], None)
    state.pending_streams.discard(key)
    state.stream_history.discard(key)


def _unindex(index: dict[_By, dict[StreamKey, None]], by: _By, key: StreamKey) -> None:
    """Take ``key`` out of ``index[by]`` (and the entry, once it is empty)."""
    keys = index.get(by)
    if keys is not None:
        keys.pop(key, None)
        if not keys:
            del index[by]


def forget_context(state: StoreState, context: int) -> None:
    ctx = state.contexts.pop(context)
    for handle in list(ctx.streams):
        if (context, handle) in state.streams:
            forget_stream(state, (context, handle))
    state.context_history.discard(context)
