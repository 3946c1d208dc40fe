"""The hand-written wrappers of the calls a job makes in its inner loop, and the
control thread's search for those of them still waiting.

``synchronize_stream``, ``synchronize_device``, ``execute``, ``execute_async`` and
``set_context`` run thousands of times a second in a busy job, so their wrappers
are not made by the builder (:func:`aclmon.agent.wrappers.observed`). Each binds
every name it uses in its closure (no attribute lookups per call), and on the
job's thread it only reads the clock twice and appends one flat tuple to the
publisher's ring: those of synchronize and execute share one body
(``_RECORDING_WRAPPER``), compiled once per record layout so that no call pays for
a choice between layouts. The event is built and numbered later on the
publisher's thread (see :data:`aclmon.bus.records.Record`) by the ``*_builder``
functions below, or not built at all while nobody listens (the history counts the
record: :meth:`aclmon.agent.history.HistoryKeeper.fold`). What the builder's
extra calls and lookups would cost is measured by ``bench/bench_agent.py``
(``hook_over_floor``).

No Begin event is recorded on the job's thread either: :class:`SlowCalls`, on the
control thread, finds calls still waiting after ``SLOW_CALL_NS`` on the threads'
stacks (a frame of one of these wrappers with ``start`` set and no ``end`` yet)
and announces them. The wrappers' local names ``start``, ``end``, ``name``,
``args`` and ``kwargs`` are what it reads.
"""

from __future__ import annotations

import linecache
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from itertools import islice, repeat
from operator import add, itemgetter, sub
from types import FrameType
from typing import TYPE_CHECKING, Any

from aclmon.acl_constants import ACL_SUCCESS
from aclmon.agent.launches import LaunchSites, stack_of
from aclmon.agent.wrappers import CallFailed, Wrapper, arg, ret_of
from aclmon.bus.records import register_builder
from aclmon.events import (
    DEVICE_SYNC,
    SLOW_CALL_NS,
    ContextCurrent,
    ExecuteBegin,
    ExecuteEnd,
    StreamSyncBegin,
    StreamSynchronized,
    kind_of,
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

#: the thread id plog prints and the runtime reports (not Python's own ident)
_get_ident = threading.get_native_id
_perf_ns = time.perf_counter_ns
_tuple_new = tuple.__new__
_SYNCHRONIZED = kind_of(StreamSynchronized)
_EXECUTED = kind_of(ExecuteEnd)
#: a hot record's items (see the record layouts below)
_START, _END, _ITEM3 = itemgetter(1), itemgetter(2), itemgetter(3)
_INT = {int}


def _numbers(counter: Iterator[int], count: int) -> range:
    """The next ``count`` numbers of ``counter`` (an ``itertools.count``), taken by one
    C call (no other thread takes one in between), as a range: no int kept per number."""
    (last,) = deque(islice(counter, count), maxlen=1)
    return range(last - count + 1, last + 1)


#: Record layouts the history can count without building the event
#: (``HistoryKeeper.fold``), named on their builder (``build.record_layout``; 0 or
#: none: build it). The call's result is always the record's last item; ``build``
#: is the builder's number (:func:`aclmon.bus.records.register_builder`).
#: ``(build, start, end, stream, result)``
SYNC_STREAM_RECORD = 1
#: ``(build, start, end, model_id, stream, result)`` (``stream`` 0 for ``mdl.execute``)
EXECUTE_RECORD = 2
#: ``(build, start, end, args, kwargs or None, result)``: the rarer synchronize forms,
#: whose builder reads the arguments on the publisher's thread
ARGS_RECORD = 0

#: The one body of the wrappers that append a record: it is compiled once per record
#: layout (``{fields}``: what the record carries between ``end`` and ``result``), so
#: each wrapper runs exactly these lines with every name bound in its closure. The
#: names ``start``, ``end``, ``name``, ``args`` and ``kwargs`` are what
#: :class:`SlowCalls` reads.
_RECORDING_WRAPPER = """
def make(name, original, call_failed, build, ring, limit, append, drop, fail, where, launches):
    perf_ns = _perf_ns
    size = len
{setup}
    def {function}(*args, **kwargs):
        start = perf_ns()
{prelude}        result = original(*args, **kwargs)
        end = perf_ns()
        try:
            if result:  # an int ACL code: non-zero only when the call failed
                call_failed(name, args, kwargs, result)
            if size(ring) < limit:
                append((build, start, end, {fields}, result))
            else:
                drop()
        except Exception as exc:
            fail(where, exc)
        return result

    return {function}
"""

#: What a launch wrapper (``execute_async``) does first: note where the job launched
#: it in the stream's ring (:mod:`aclmon.agent.launches`); ``{stack}`` is the stack
#: of the launch with launch_stacks, else nothing.
_LAUNCH_SETUP = """
    getframe = _getframe
    stack_of = _stack_of
    rings_get = launches.rings.get
    new_ring = launches.new_ring
"""
_LAUNCH_PRELUDE = """\
        try:
            frame = getframe(1)
            stream = args[3] if len(args) > 3 else kwargs.get("stream", 0)
            sites = rings_get(stream)
            if sites is None:
                sites = new_ring(stream)
            sites.append((start, name, frame.f_code, frame.f_lineno{stack}))
        except Exception as exc:
            fail(where, exc)
"""

#: the recording wrappers by function name: (their record's layout, what it carries)
_RECORDERS = {
    "synchronize_stream": (SYNC_STREAM_RECORD, 'args[0] if args else kwargs.get("stream", 0)'),
    "execute_async": (
        EXECUTE_RECORD,
        'args[0] if args else kwargs.get("model_id"),'
        ' args[3] if len(args) > 3 else kwargs.get("stream", 0)',
    ),
    "execute": (EXECUTE_RECORD, 'args[0] if args else kwargs.get("model_id"), 0'),
    # kwargs only when there are any: a dict, even empty, keeps the record tracked
    "synchronize": (ARGS_RECORD, "args, kwargs or None"),
}


def _compile(function: str, fields: str, launch: str = "") -> Callable[..., Wrapper]:
    """The factory of the recording wrapper ``function`` (see ``_RECORDING_WRAPPER``);
    ``launch``: "sites" or "stacks" to note the launch site first."""
    namespace: dict[str, Any] = {
        "__name__": __name__, "_perf_ns": _perf_ns, "_getframe": sys._getframe,
        "_stack_of": stack_of,
    }  # fmt: skip
    prelude = (
        _LAUNCH_PRELUDE.format(stack=", stack_of(frame)" if launch == "stacks" else "")
        if launch
        else ""
    )
    source = _RECORDING_WRAPPER.format(
        function=function, fields=fields, setup=_LAUNCH_SETUP if launch else "", prelude=prelude
    )
    filename = f"<{__name__} {function}{' ' + launch if launch else ''}>"
    # A traceback through the wrapper (the job's own call raising) shows its lines.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    return namespace["make"]


_MAKERS = {function: _compile(function, fields) for function, (_, fields) in _RECORDERS.items()}
#: execute_async noting its launch site, without and with the stack
_LAUNCH_MAKERS = {
    launch: _compile("execute_async", _RECORDERS["execute_async"][1], launch)
    for launch in ("sites", "stacks")
}


def _recording(
    ctx: AgentContext, name: str, original: Callable[..., Any], call_failed: CallFailed,
    function: str, key: Hashable, make_builder: Callable[[], Any],
    launches: LaunchSites | None = None,
) -> Wrapper:  # fmt: skip
    """The recording wrapper ``function`` of the call ``name``: it appends its record,
    which the builder ``make_builder()`` gives turns into the event, to the sink's ring
    (or counts a drop when the ring is full); with ``launches``, it first notes its
    launch site there. The record names its builder by number, registered once per
    context and ``key``, so it holds only numbers."""
    sink = ctx.sink
    ring = sink.ring
    number = ctx.record_builders.get(key)
    if number is None:
        build = make_builder()
        build.record_layout = _RECORDERS[function][0]  # read by history.fold
        number = ctx.record_builders[key] = register_builder(build)
    maker = _MAKERS[function]
    if launches is not None:
        maker = _LAUNCH_MAKERS["stacks" if launches.stacks else "sites"]
    return maker(
        name, original, call_failed, number, ring, sink.ring_limit, ring.append,
        sink.count_drop, ctx.fail, f"hook {name}", launches,
    )  # fmt: skip


def synchronize(
    ctx: AgentContext, name: str, original: Callable[..., Any], call_failed: CallFailed
) -> Wrapper:
    """synchronize_stream, the call jobs make most often, with a flat record (the
    stream, not args and kwargs: keeping fewer objects alive until the publisher takes
    them is measurably cheaper); synchronize_device (``DEVICE_SYNC``) and the forms
    with a timeout, rarer, whose builder reads the arguments on the publisher's thread."""
    timed = name.endswith("_with_timeout")
    device = name.startswith("rt.synchronize_device")
    offset = ctx.wall_offset
    if timed or device:
        return _recording(ctx, name, original, call_failed, "synchronize", ("sync", device, timed),
                          lambda: _sync_builder(offset, device=device, timed=timed))  # fmt: skip
    return _recording(ctx, name, original, call_failed, "synchronize_stream", "sync_stream",
                      lambda: _sync_stream_builder(offset))  # fmt: skip


def execute(
    ctx: AgentContext,
    name: str,
    original: Callable[..., Any],
    call_failed: CallFailed,
    launches: LaunchSites | None = None,
) -> Wrapper:
    """mdl.execute / execute_async: once per model step; a flat record. An
    ``execute_async`` also notes its launch site in ``launches``."""
    function = "execute_async" if name.endswith("_async") else "execute"
    offset = ctx.wall_offset
    sites = launches if function == "execute_async" else None
    return _recording(ctx, name, original, call_failed, function, "execute",
                      lambda: _execute_builder(offset), sites)  # fmt: skip


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
                if context is not None and (previous is None or previous[2] != context):
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
        kwargs = kwargs or {}
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
    """The publisher-side half of the synchronize_stream wrapper. Its ``wire`` makes
    the array the wire carries (kind first) straight from the record: a plain tuple
    of numbers, which the GC stops tracking, where the event would stay tracked; its
    ``columns``, the arrays of a run of records whose call succeeded, column by column
    (:func:`aclmon.events.wire.encode_columns` packs them at once)."""

    def wire(counter: Iterator[int], record: tuple[Any, ...]) -> tuple[Any, ...]:
        _, start, end, stream, result = record
        ret = result if type(result) is int else ret_of(result)
        return (_SYNCHRONIZED, next(counter), end + wall_offset[0], stream, end - start, ret, -1)

    def columns(counter: Iterator[int], records: list[tuple[Any, ...]]) -> list[Any] | None:
        # the arrays of records whose call succeeded, by column (see encode_columns),
        # made by C-level maps, no Python code per record; None (nothing taken) when
        # a stream is not a plain int
        streams = list(map(_ITEM3, records))
        if not set(map(type, streams)) <= _INT:
            return None
        ends = list(map(_END, records))
        return [
            _SYNCHRONIZED, _numbers(counter, len(records)),
            list(map(add, ends, repeat(wall_offset[0]))), streams,
            list(map(sub, ends, map(_START, records))), ACL_SUCCESS, -1,
        ]  # fmt: skip

    def build(counter: Iterator[int], record: tuple[Any, ...]) -> Any:
        return _tuple_new(StreamSynchronized, wire(counter, record)[1:])

    build.wire, build.columns = wire, columns  # type: ignore[attr-defined]  # history
    return build


def _execute_builder(wall_offset: list[int]) -> Any:
    """The publisher-side half of an execute wrapper: its record as ExecuteEnd (and
    ``wire``, as the synchronize_stream builder's)."""

    def wire(counter: Iterator[int], record: tuple[Any, ...]) -> tuple[Any, ...]:
        _, start, end, model_id, stream, result = record
        ret = result if type(result) is int else ret_of(result)
        return (_EXECUTED, next(counter), end + wall_offset[0], model_id, stream, end - start, ret)

    def build(counter: Iterator[int], record: tuple[Any, ...]) -> Any:
        return _tuple_new(ExecuteEnd, wire(counter, record)[1:])

    build.wire = wire  # type: ignore[attr-defined]  # read by history.observe_records
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

    def waiting(self, *, returning: bool = False) -> Iterator[tuple[int, dict[str, Any], str]]:
        """(thread's native id, the wrapper frame's locals, what) of each hot call
        that has not returned yet; with ``returning``, also those back from the
        runtime whose wrapper has not returned (their record may not be in the ring yet)."""
        codes = self.codes
        if not codes:
            return
        # frames come by Python's thread ident; events name the native id plog prints
        native = {t.ident: t.native_id for t in threading.enumerate()}
        for ident, top in list(sys._current_frames().items()):
            thread = native.get(ident) or ident
            frame: FrameType | None = top
            depth = 0
            while frame is not None and depth < MAX_STACK_DEPTH and frame.f_code not in codes:
                frame = frame.f_back
                depth += 1
            if frame is None or depth >= MAX_STACK_DEPTH:
                continue
            local = frame.f_locals
            if type(local.get("start")) is not int or ("end" in local and not returning):
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

    def launch_unrecorded(self, device_id: int, stream_id: int) -> bool:
        """An ``execute_async`` on stream ``stream_id`` of ``device_id`` (or a stream the
        agent does not know, of a model on that device) is inside its wrapper on
        another thread: its record may not be in the ring yet."""
        state = self.ctx.state
        me = _get_ident()
        for thread, local, what in self.waiting(returning=True):
            if what != "execute_async" or thread == me:
                continue
            args, kwargs = local.get("args", ()), local.get("kwargs", {})
            created = state.streams.get(arg(args, kwargs, 3, "stream"))
            if created is not None:
                if (created.device_id, created.stream_id) == (device_id, stream_id):
                    return True
                continue
            model = state.models.get(arg(args, kwargs, 0, "model_id"))
            if model is None or model.device_id in (device_id, -1):
                return True
        return False

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
