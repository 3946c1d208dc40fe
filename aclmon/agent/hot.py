"""The hand-written wrappers of the calls a job makes in its inner loop, and the
control thread's search for those of them still waiting.

``synchronize_stream``, ``synchronize_device``, ``execute``, ``execute_async`` and
``set_context`` run thousands of times a second in a busy job, so their wrappers
are not made by the builder (:func:`aclmon.agent.wrappers.observed`): each is
written out by hand, with every name it uses bound in the closure (no attribute
lookups per call), and on the job's thread it only reads the clock twice and
appends one tuple to the publisher's ring. The event is built and numbered later
on the publisher's thread (see :data:`aclmon.bus.records.Record`) by the
``*_builder`` functions below. What the builder's extra calls and lookups would
cost is measured by ``bench/bench_agent.py`` (``hook_over_floor``).

No Begin event is recorded on the job's thread either: :class:`SlowCalls`, on the
control thread, finds calls still waiting after ``SLOW_CALL_NS`` on the threads'
stacks (a frame of one of these wrappers with ``start`` set and no ``end`` yet)
and announces them. The wrappers' local names ``start``, ``end``, ``name``,
``args`` and ``kwargs`` are what it reads.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from aclmon.acl_constants import ACL_SUCCESS
from aclmon.agent.wrappers import CallFailed, Wrapper, arg, ret_of
from aclmon.events import (
    DEVICE_SYNC,
    SLOW_CALL_NS,
    ContextCurrent,
    ExecuteBegin,
    ExecuteEnd,
    StreamSyncBegin,
    StreamSynchronized,
)

if TYPE_CHECKING:
    from aclmon.agent.context import AgentContext

#: hot wrappers whose long calls the control thread announces, and what they are
SLOW_CALLS = {
    "rt.synchronize_stream": "sync",
    "rt.synchronize_stream_with_timeout": "sync",
    "rt.synchronize_device": "device",
    "rt.synchronize_device_with_timeout": "device",
    "mdl.execute": "execute",
    "mdl.execute_async": "execute_async",
}

#: frames searched per thread for a synchronize/execute wrapper
MAX_STACK_DEPTH = 64

_get_ident = threading.get_ident
_perf_ns = time.perf_counter_ns
_tuple_new = tuple.__new__


def synchronize(
    ctx: AgentContext,
    name: str,
    original: Callable[..., Any],
    call_failed: CallFailed,
    *,
    timed: bool,
) -> Wrapper:
    """synchronize_stream / synchronize_device (``DEVICE_SYNC``), with or without a timeout."""
    sink = ctx.sink
    ring = sink.ring
    limit = sink.ring_limit
    append = ring.append
    drop = sink.count_drop
    fail = ctx.fail
    where = f"hook {name}"
    size = len
    if timed or name.startswith("rt.synchronize_device"):
        build = _sync_builder(
            ctx.wall_offset, device=name.startswith("rt.synchronize_device"), timed=timed
        )

        # Rarer forms: the builder reads the arguments on the publisher's thread.
        def synchronize(*args: Any, **kwargs: Any) -> Any:
            start = _perf_ns()
            result = original(*args, **kwargs)
            end = _perf_ns()
            try:
                if result:  # an int ACL code: non-zero only when the call failed
                    call_failed(name, args, kwargs, result)
                if size(ring) < limit:
                    append((build, start, end, args, kwargs, result))
                else:
                    drop()
            except Exception as exc:
                fail(where, exc)
            return result

        return synchronize
    build_stream = _sync_stream_builder(ctx.wall_offset)

    # The call jobs make most often. The record is flat (the stream, not args and
    # kwargs): keeping fewer objects alive until the publisher takes them is
    # measurably cheaper.
    def synchronize_stream(*args: Any, **kwargs: Any) -> Any:
        start = _perf_ns()
        result = original(*args, **kwargs)
        end = _perf_ns()
        try:
            if result:  # an int ACL code: non-zero only when the call failed
                call_failed(name, args, kwargs, result)
            if size(ring) < limit:
                append(
                    (
                        build_stream,
                        start,
                        end,
                        args[0] if args else kwargs.get("stream", 0),
                        result,
                    )
                )
            else:
                drop()
        except Exception as exc:
            fail(where, exc)
        return result

    return synchronize_stream


def execute(
    ctx: AgentContext,
    name: str,
    original: Callable[..., Any],
    call_failed: CallFailed,
    *,
    asynchronous: bool,
) -> Wrapper:
    """mdl.execute / execute_async: once per model step; a flat record."""
    sink = ctx.sink
    ring = sink.ring
    limit = sink.ring_limit
    append = ring.append
    drop = sink.count_drop
    fail = ctx.fail
    where = f"hook {name}"
    build = _execute_builder(ctx.wall_offset)
    size = len

    def execute(*args: Any, **kwargs: Any) -> Any:
        start = _perf_ns()
        result = original(*args, **kwargs)
        end = _perf_ns()
        try:
            if result:
                call_failed(name, args, kwargs, result)
            if size(ring) < limit:
                model_id = args[0] if args else kwargs.get("model_id")
                if asynchronous:
                    stream = args[3] if len(args) > 3 else kwargs.get("stream", 0)
                    append((build, start, end, model_id, stream, result))
                else:
                    append((build, start, end, model_id, 0, result))
            else:
                drop()
        except Exception as exc:
            fail(where, exc)
        return result

    return execute


def set_context(
    ctx: AgentContext, name: str, original: Callable[..., Any], call_failed: CallFailed
) -> Wrapper:
    """rt.set_context: jobs often set the same context in every step, and only a
    change is news, so the common call costs one dict lookup."""
    publish = ctx.publish
    fail = ctx.fail
    current = ctx.state.current
    time_ns = time.time_ns

    def set_context(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        try:
            if result == ACL_SUCCESS:
                context = args[0] if args else kwargs.get("context")
                thread = _get_ident()
                previous = current.get(thread)
                if previous is None or previous[2] != context:
                    event = ContextCurrent(0, time_ns(), context, thread)
                    current[thread] = event
                    publish(event)
            else:
                call_failed(name, args, kwargs, result)
        except Exception as exc:
            fail("hook rt.set_context", exc)
        return result

    return set_context


# ---------------------------------------------------------------- publisher side
def _sync_builder(wall_offset: list[int], *, device: bool, timed: bool) -> Any:
    """The publisher-side half of a synchronize wrapper: its record as StreamSynchronized."""

    def build(counter: Iterator[int], record: tuple[Any, ...]) -> Any:
        _, start, end, args, kwargs, result = record
        if device:
            stream = DEVICE_SYNC
            timeout_ms = (args[0] if args else kwargs.get("timeout", -1)) if timed else -1
        else:
            stream = args[0] if args else kwargs.get("stream", 0)
            timeout_ms = (args[1] if len(args) > 1 else kwargs.get("timeout", -1)) if timed else -1
        ret = result if type(result) is int else ret_of(result)
        return _tuple_new(
            StreamSynchronized,
            (next(counter), end + wall_offset[0], stream, end - start, ret, timeout_ms),
        )

    return build


def _sync_stream_builder(wall_offset: list[int]) -> Any:
    """The publisher-side half of the synchronize_stream wrapper."""

    def build(counter: Iterator[int], record: tuple[Any, ...]) -> Any:
        _, start, end, stream, result = record
        ret = result if type(result) is int else ret_of(result)
        return _tuple_new(
            StreamSynchronized,
            (next(counter), end + wall_offset[0], stream, end - start, ret, -1),
        )

    return build


def _execute_builder(wall_offset: list[int]) -> Any:
    """The publisher-side half of an execute wrapper: its record as ExecuteEnd."""

    def build(counter: Iterator[int], record: tuple[Any, ...]) -> Any:
        _, start, end, model_id, stream, result = record
        ret = result if type(result) is int else ret_of(result)
        return _tuple_new(
            ExecuteEnd, (next(counter), end + wall_offset[0], model_id, stream, end - start, ret)
        )

    return build


# ---------------------------------------------------------------- control thread
class SlowCalls:
    """Finds the hot wrappers' calls still waiting, on the threads' stacks."""

    def __init__(self, ctx: AgentContext) -> None:
        self.ctx = ctx
        #: code object of a hot wrapper -> what a long call of it is ("sync", "execute"...)
        self.codes: dict[Any, str] = {}
        #: thread id -> start (perf_counter_ns) of the slow call last announced on it
        self._announced: dict[int, int] = {}

    def watch(self, qualified: str, wrapper: Wrapper) -> None:
        """Remember ``wrapper`` if it is the hot wrapper of a call that can run long."""
        what = SLOW_CALLS.get(qualified)
        if what is not None:
            self.codes[wrapper.__code__] = what

    def waiting(self) -> Iterator[tuple[int, dict[str, Any], str]]:
        """(thread, the wrapper frame's locals, what) of each hot call that has not
        returned yet."""
        codes = self.codes
        if not codes:
            return
        for thread, frame in list(sys._current_frames().items()):
            depth = 0
            while frame is not None and depth < MAX_STACK_DEPTH and frame.f_code not in codes:
                frame = frame.f_back
                depth += 1
            if frame is None or depth >= MAX_STACK_DEPTH:
                continue
            local = frame.f_locals
            if type(local.get("start")) is not int or "end" in local:
                continue
            # One code object serves several calls: the closure's ``name`` says which.
            yield thread, local, SLOW_CALLS.get(local.get("name", ""), codes[frame.f_code])

    def announce(self) -> None:
        """Publish the Begin event of each synchronize/execute that has run too long
        (runs on the control thread).

        Nothing is recorded on the job's thread for this, so a hooked call costs one
        record, while a viewer still learns which thread is stuck waiting on which
        stream or model.
        """
        if not self.codes:
            return
        ctx = self.ctx
        now_perf = time.perf_counter_ns()
        now_wall = time.time_ns()
        seen: dict[int, int] = {}
        for thread, local, what in self.waiting():
            start = local["start"]
            seen[thread] = start
            if self._announced.get(thread) == start or now_perf - start < SLOW_CALL_NS:
                continue
            args = local.get("args", ())
            kwargs = local.get("kwargs", {})
            if what == "sync":
                event = ctx.make(StreamSyncBegin, arg(args, kwargs, 0, "stream"), thread)
            elif what == "device":
                event = ctx.make(StreamSyncBegin, DEVICE_SYNC, thread)
            else:
                model_id = arg(args, kwargs, 0, "model_id")
                stream = arg(args, kwargs, 3, "stream") if what == "execute_async" else 0
                model = ctx.state.models.get(model_id)
                device = model.device_id if model is not None else -1
                event = ctx.make(ExecuteBegin, model_id, stream or 0, device)
            ctx.publish(event._replace(ts_ns=now_wall - (now_perf - start)))
            self._announced[thread] = start
        self._announced = {t: s for t, s in self._announced.items() if seen.get(t) == s}

    def synchronous_execute_in_flight(self, device: int) -> int | None:
        """The model of the one synchronous ``mdl.execute`` running on ``device`` now;
        None if none or several."""
        models = self.ctx.state.models
        found = set()
        for _, local, what in self.waiting():
            if what != "execute":
                continue
            model_id = arg(local.get("args", ()), local.get("kwargs", {}), 0, "model_id")
            model = models.get(model_id)
            if model is not None and model.device_id in (device, -1):
                found.add(model_id)
        return found.pop() if len(found) == 1 else None
