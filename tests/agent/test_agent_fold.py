"""While nobody listens, the publisher hands the ring's records to the history as they
are (``HistoryKeeper.fold``) instead of building, numbering and observing their events.
A late viewer must get the same history and the same numbering either way, and the hot
wrappers that write those records must still count drops and survive their own failures."""

from __future__ import annotations

import gc
import itertools
import time
from types import SimpleNamespace
from typing import Any

import msgpack
from hypothesis import given, settings
from hypothesis import strategies as st

from aclmon.acl_constants import ACL_ERROR_RT_AICORE_EXCEPTION
from aclmon.agent import hot
from aclmon.agent.context import AgentContext, MemorySink
from aclmon.agent.history import BULK_RUN, HistoryKeeper
from aclmon.bus.records import build_records
from aclmon.events import (
    AclException,
    ContextDestroyed,
    LogLine,
    ModelLoaded,
    ModelUnloaded,
    StreamCreated,
    StreamDestroyed,
    StreamSynchronized,
)
from aclmon.events.wire import FrameDecoder

FAIL = ACL_ERROR_RT_AICORE_EXCEPTION
STREAMS = (0xB0, 0xB8, 0xC0)  # handles; stream ids 1, 2, 3 in context 0xA0 or 0xA8
MODELS = (1, 2)
#: what a hooked call may return: success, a failure, and things that are not a bare
#: int 0 although they are false or equal to it (each is built as an event)
RESULTS = (0, 0, 0, FAIL, None, False, (0,), (FAIL,), 0.0)


class _Job:
    """The hot wrappers of one context, over calls that return what they are told."""

    def __init__(self, limit: int = 65536) -> None:
        self.sink = MemorySink(limit)  # the wrappers bind its limit when they are made
        self.ctx = AgentContext(SimpleNamespace(), self.sink)
        self.result: Any = 0
        self.failed: list[str] = []

        def original(*args: Any, **kwargs: Any) -> Any:
            return self.result

        def call_failed(name: str, args: Any, kwargs: Any, result: Any) -> None:
            self.failed.append(name)

        def wrap(factory: Any, name: str) -> Any:
            return factory(self.ctx, name, original, call_failed)

        self.sync = wrap(hot.synchronize, "rt.synchronize_stream")
        self.sync_timeout = wrap(hot.synchronize, "rt.synchronize_stream_with_timeout")
        self.sync_device = wrap(hot.synchronize, "rt.synchronize_device")
        self.execute = wrap(hot.execute, "mdl.execute")
        self.execute_async = wrap(hot.execute, "mdl.execute_async")

    def call(self, fn: Any, result: Any, *args: Any, **kwargs: Any) -> None:
        self.result = result
        assert fn(*args, **kwargs) is result  # the job gets exactly what the call returned


def _bad_builder(counter: Any, record: Any) -> Any:
    raise ValueError("a record that cannot be built")


def _step(job: _Job, op: tuple[Any, ...]) -> None:
    """One thing the job or the agent does: a hot call or an ordinary event."""
    ctx = job.ctx
    kind, *rest = op
    if kind == "sync":
        stream, result, by_keyword = rest
        if by_keyword:
            job.call(job.sync, result, stream=stream)
        else:
            job.call(job.sync, result, stream)
    elif kind == "sync_timeout":
        job.call(job.sync_timeout, rest[1], rest[0], 100)
    elif kind == "sync_device":
        job.call(job.sync_device, rest[0])
    elif kind == "execute_async":
        model, stream, result = rest
        job.call(job.execute_async, result, model, "in", "out", stream)
    elif kind == "execute":
        model, result = rest
        job.call(job.execute, result, model_id=model)
    elif kind == "load":
        ctx.publish(ctx.make(ModelLoaded, rest[0], 0, f"model{rest[0]}", 3))
    elif kind == "unload":
        ctx.emit(ModelUnloaded, rest[0], rest[1])
    elif kind == "create_stream":
        index = STREAMS.index(rest[0])
        ctx.emit(StreamCreated, 0, 0xA0 + 8 * (index % 2), rest[0], index + 1, 0, 0)
    elif kind == "destroy_stream":
        ctx.emit(StreamDestroyed, rest[0], rest[1])
    elif kind == "destroy_context":
        ctx.emit(ContextDestroyed, rest[0], 0)
    elif kind == "exception":
        stream_id, task = rest
        ctx.publish(ctx.make(AclException, 0, stream_id, task, 1, FAIL, "mm1", "", (), (), "", 0))
    elif kind == "log":
        ctx.log_line("error", "EZ9999")
    elif kind == "ready":  # an event sent as it is, its seq kept (Publisher.publish)
        ctx.sink.submit(LogLine(0, 1, "warning", "ready", "", ctx.pid, "", 0, "", ""))
    else:
        ctx.sink.submit((_bad_builder,))


_ops = st.one_of(
    st.tuples(
        st.just("sync"),
        st.sampled_from((*STREAMS, True)),  # a handle that is not a plain int: as it is
        st.sampled_from(RESULTS),
        st.booleans(),
    ),
    st.tuples(st.just("sync_timeout"), st.sampled_from(STREAMS), st.sampled_from(RESULTS)),
    st.tuples(st.just("sync_device"), st.sampled_from(RESULTS)),
    st.tuples(
        st.just("execute_async"),
        st.sampled_from((*MODELS, 9)),
        st.sampled_from(STREAMS),
        st.sampled_from(RESULTS),
    ),
    st.tuples(st.just("execute"), st.sampled_from((*MODELS, 9)), st.sampled_from(RESULTS)),
    st.tuples(st.just("load"), st.sampled_from(MODELS)),
    st.tuples(st.just("unload"), st.sampled_from(MODELS), st.sampled_from((0, FAIL))),
    st.tuples(st.just("create_stream"), st.sampled_from(STREAMS)),
    st.tuples(st.just("destroy_stream"), st.sampled_from(STREAMS), st.sampled_from((0, FAIL))),
    st.tuples(st.just("destroy_context"), st.sampled_from((0xA0, 0xA8))),
    st.tuples(st.just("exception"), st.sampled_from((1, 2, 3)), st.integers(1, 5)),
    st.tuples(st.sampled_from(("log", "bad", "ready"))),
)
#: a job's first steps: models and streams to count on
_SETUP = [("load", 1), ("load", 2)] + [("create_stream", handle) for handle in STREAMS]


def _state(keeper: HistoryKeeper) -> tuple[Any, ...]:
    """Everything a late viewer gets from the history (the snapshot, without the
    moment it is taken), and what later attribution depends on."""
    *kept, totals = keeper.snapshot_events()
    streams = {
        h: (s.syncs, s.errors, s.last_error, s.last_launch) for h, s in keeper.streams.items()
    }
    models = {m: (x.name, x.executions, x.failures) for m, x in keeper.models.items()}
    return tuple(kept), totals[3:], streams, models


def _arrays(segments: list[Any]) -> list[tuple[Any, ...]]:
    """The arrays of what ``observe_records`` gave for the wire (frames decoded)."""
    arrays: list[tuple[Any, ...]] = []
    for segment in segments:
        if type(segment) is bytes:
            arrays += [tuple(msgpack.unpackb(p)) for p in FrameDecoder().feed(segment)]
        else:
            arrays += segment
    return arrays


@settings(max_examples=150, deadline=None)
@given(
    steps=st.lists(st.tuples(_ops, st.sampled_from((1, 1, 1, BULK_RUN + 2))), max_size=40),
    cuts=st.lists(st.integers(0, 70), max_size=4),
)
def test_folding_records_leaves_the_history_and_numbering_of_observing_their_events(steps, cuts):
    # each step once, or in a run long enough to be taken in bulk
    ops = [op for op, times in steps for _ in range(times)]
    job = _Job()
    for op in _SETUP + ops:
        _step(job, op)
    records = list(job.sink.ring)

    eager, eager_numbers = HistoryKeeper(), itertools.count(1)
    events, eager_failed = build_records(records, eager_numbers)
    eager.observe(events)

    # The same records in batches, some folded (nobody listening), some built and
    # observed, some observed as the arrays the wire carries (a viewer came and went):
    # the publisher may do any of these at any batch.
    lazy, lazy_numbers = HistoryKeeper(), itertools.count(1)
    bounds = [0, *sorted(set(cuts)), len(records)]
    lazy_failed = 0
    sent: list[tuple[Any, ...]] = []
    for index, (start, stop) in enumerate(itertools.pairwise(bounds)):
        batch = records[start:stop]
        if index % 3 == 0:
            lazy_failed += lazy.fold(batch, lazy_numbers)
        elif index % 3 == 1:
            segments, count, failed = lazy.observe_records(batch, lazy_numbers)
            arrays = _arrays(segments)
            assert count == len(arrays)
            sent += arrays
            lazy_failed += failed
        else:
            built, failed = build_records(batch, lazy_numbers)
            lazy.observe(built)
            lazy_failed += failed
    # what viewers would receive: the eager events (exceptions completed), kind first
    eager_arrays = {event.seq: event.KIND_TUPLE + event for event in events}
    assert all(type(array) is tuple for array in sent)
    assert sent == [eager_arrays[array[1]] for array in sent]

    assert _state(lazy) == _state(eager)
    assert next(lazy_numbers) == next(eager_numbers)  # every event took its number
    assert lazy_failed == eager_failed == sum(1 for op in ops if op[0] == "bad")


def test_fold_counts_hot_calls_without_building_them_and_numbers_what_it_builds():
    job = _Job()
    for op in _SETUP:
        _step(job, op)
    job.call(job.execute_async, 0, 1, "in", "out", 0xB0)
    for _ in range(3):
        job.call(job.sync, 0, 0xB0)
    job.call(job.sync, FAIL, 0xB0)
    job.call(job.sync, 0, 0xB8)
    keeper = HistoryKeeper()
    numbers = itertools.count(1)
    assert keeper.fold(list(job.sink.ring), numbers) == 0
    # 5 set-up events, 1 execute, 5 synchronizes: the next event is number 12
    assert next(numbers) == 12
    streams = keeper.snapshot_events()[-1].streams
    assert streams == (0xB0, 4, 1, FAIL, 0xB8, 1, 0, 0, 0xC0, 0, 0, 0)
    assert keeper.streams[0xB0].last_launch == (1, 1)
    assert job.failed == ["rt.synchronize_stream"]  # reported on the job's thread


def test_hot_wrappers_count_drops_when_the_ring_is_full_and_number_the_rest():
    job = _Job(limit=3)
    for _ in range(5):
        job.call(job.sync, 0, 0xB0)
    job.call(job.execute_async, 0, 1, "in", "out", 0xB0)
    assert job.sink.dropped == 3
    events = job.sink.take()
    assert [(type(e), e.seq) for e in events] == [(StreamSynchronized, n) for n in (1, 2, 3)]


def test_hot_records_are_left_untracked_by_the_first_collection():
    """A hot record holds numbers only (its builder too, by number): the cyclic GC stops
    tracking it at the first collection, so records waiting in the ring never reach the
    old generations, which every full collection of the job's heap walks."""
    job = _Job()
    job.call(job.sync, 0, 0xB0)
    job.call(job.sync, FAIL, stream=0xB8)
    job.call(job.sync_device, 0)
    job.call(job.execute, 0, 1, "in", "out")
    job.call(job.execute_async, 0, 1, "in", "out", 0xB0)
    gc.collect()
    assert len(job.sink.ring) == 5
    assert not [record for record in job.sink.ring if gc.is_tracked(record)]
    assert len(job.sink.take()) == 5  # and each still builds its event


def test_a_failing_ring_is_counted_and_the_job_gets_its_result():
    job = _Job()

    class Broken:
        def append(self, record: Any) -> None:
            raise MemoryError("full")

        def __len__(self) -> int:
            return 0

    job.sink.ring = Broken()  # type: ignore[assignment]
    job.sync = hot.synchronize(job.ctx, "rt.synchronize_stream", lambda s: FAIL, lambda *a: None)
    assert job.sync(0xB0) == FAIL
    assert job.ctx.failures == {"hook rt.synchronize_stream": 1}


def test_a_late_viewer_gets_the_folded_history_and_numbers_without_a_hole(tmp_path):
    """Through a real publisher: records taken while nobody listened are in the late
    viewer's history, and the first event it receives has the next number."""
    from aclmon.bus.publisher import Publisher
    from aclmon.bus.subscriber import Subscriber

    keeper = HistoryKeeper()
    publisher = Publisher(
        str(tmp_path / "p.sock"),
        snapshot=keeper.snapshot_events,
        observer=keeper,
    ).start()
    subscriber = None
    try:
        ctx = AgentContext(SimpleNamespace(), publisher)
        sync = hot.synchronize(ctx, "rt.synchronize_stream", lambda s: 0, lambda *a: None)
        ctx.emit(StreamCreated, 0, 0xA0, 0xB0, 1, 0, 0)
        for _ in range(10):
            sync(0xB0)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (
            0xB0 in keeper.streams and keeper.streams[0xB0].syncs == 10
        ):
            time.sleep(0.01)
        assert keeper.streams[0xB0].syncs == 10
        subscriber = Subscriber(publisher.address).start()
        assert subscriber.wait_connected(10), subscriber.state_reason
        received: list[Any] = []
        while time.monotonic() < deadline and not any(e.seq for e in received):
            if not received:
                sync(0xB0)  # once connected (the snapshot comes first)
            received += subscriber.poll(100, 0.05)
        (history,) = [e for e in received if e.seq == 0 and hasattr(e, "streams")]
        assert history.streams == (0xB0, 10, 0, 0)
        live = [e for e in received if e.seq]
        assert type(live[0]) is StreamSynchronized and live[0].seq == 12
        assert publisher.dropped == 0
    finally:
        if subscriber is not None:
            subscriber.close()
        publisher.close()


def test_the_jobs_exception_passes_through_and_its_traceback_shows_the_wrapper_line():
    import traceback

    job = _Job()

    def original(stream: int) -> int:
        raise RuntimeError("the runtime's own error")

    sync = hot.synchronize(job.ctx, "rt.synchronize_stream", original, lambda *a: None)
    try:
        sync(0xB0)
    except RuntimeError as exc:
        text = "".join(traceback.format_exception(exc))
    assert "result = original(*args, **kwargs)" in text
    assert not job.sink.ring and not job.ctx.failures  # nothing recorded, nothing failed
