"""The state of the simulated machine: devices, contexts, streams, events, memory.

Everything a handle refers to lives here, keyed by plain ``int`` handles that
look like the pointer values pyACL returns. The public ``acl.*`` functions (in
the ``api_*`` modules) are thin: they check arguments and call into this module,
never into each other, so a wrapper installed on ``acl.rt.*`` sees each user
call exactly once.

Device time: each stream has a ``busy_until`` instant on a clock that runs with
the host's monotonic clock. Launching a task computes its result at once (numpy)
and pushes ``busy_until`` by the task's modelled duration (times
``time_scale``); query reports NOT_READY until then and synchronize sleeps
until then. Utilization is the modelled busy time of the last second.
"""

from __future__ import annotations

import atexit
import bisect
import ctypes
import functools
import inspect
import itertools
import queue
import random
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from aclmon import acl_constants as C
from aclmon.sim import errmsg, slog
from aclmon.sim.acljson import AclJson
from aclmon.sim.config import SimConfig
from aclmon.sim.faults import FaultState

T = TypeVar("T")

# ---------------------------------------------------------------- clock
_EPOCH_OFFSET_NS = time.time_ns() - time.monotonic_ns()


def now_ns() -> int:
    """Device/host time as epoch nanoseconds, but monotonic (never steps back)."""
    return time.monotonic_ns() + _EPOCH_OFFSET_NS


# ---------------------------------------------------------------- handles
_handle_counter = itertools.count(1)
_HANDLE_BASE = 0x5600_0000_0000


def new_handle() -> int:
    """A fresh pointer-like handle (never reused within a process)."""
    return _HANDLE_BASE + next(_handle_counter) * 0x40


# ---------------------------------------------------------------- errors in words
_thread_state = threading.local()


def fail(code: int, message: str, detail: str = "", *, call: tuple[str, str] | None = None) -> int:
    """Remember why a call failed (acl.get_recent_err_msg), log it, return its code.

    ``detail`` is the device's own text for a failed task (AI Core exception);
    ``call`` is ``(api module, function)`` when the caller is not on the stack.
    """
    api_module, function = call or errmsg.failing_call()
    _thread_state.last_error = errmsg.compose(code, message, api_module, function, detail)
    _thread_state.last_code = code
    errmsg.log_failure(code, message, api_module, function)
    return code


def last_error_code(*, clear: bool) -> int:
    code = getattr(_thread_state, "last_code", C.ACL_SUCCESS)
    if clear:
        _thread_state.last_code = C.ACL_SUCCESS
    return code


def recent_error() -> str:
    message = getattr(_thread_state, "last_error", "")
    _thread_state.last_error = ""
    return message


# ---------------------------------------------------------------- objects
@dataclass(eq=False)
class Allocation:
    address: int
    size: int
    device_id: int
    _buffer: np.ndarray | None = None

    @property
    def buffer(self) -> np.ndarray:
        # Backing bytes are created on first touch, so a large malloc that is
        # only accounted for costs no host memory.
        if self._buffer is None:
            self._buffer = np.zeros(self.size, dtype=np.uint8)
        return self._buffer


@dataclass(eq=False)
class Stream:
    handle: int
    stream_id: int
    context: Context
    priority: int = 0
    flags: int = 0
    busy_until: int = 0
    next_task: int = 0
    overflow_switch: int = 0
    #: a failed task's (error code, set once the exception callback has run,
    #: the device's text for get_recent_err_msg).
    pending_error: tuple[int, threading.Event, str] | None = None
    #: native id of the thread that processes this stream's host callbacks.
    report_thread: int | None = None
    #: completion events of ACL_CALLBACK_BLOCK callbacks the stream waits for.
    blocking_callbacks: list[threading.Event] = field(default_factory=list)

    @property
    def device(self) -> Device:
        return self.context.device

    def take_task_id(self) -> int:
        task_id = self.next_task
        self.next_task = (task_id + 1) & 0xFFFF
        return task_id


@dataclass(eq=False)
class Context:
    handle: int
    device: Device
    is_default: bool
    default_stream: Stream | None = None
    streams: dict[int, Stream] = field(default_factory=dict)


@dataclass(eq=False)
class Event:
    handle: int
    device_id: int
    flag: int
    timestamp: int = 0
    recorded: bool = False


UTIL_BUCKET_NS = 100_000_000
UTIL_BUCKETS = 10


class Device:
    """One simulated NPU: refcount, default context, memory, utilization."""

    ADDRESS_SPACING = 1 << 44

    def __init__(self, device_id: int, config: SimConfig) -> None:
        self.device_id = device_id
        self.refcount = 0
        self.default_context: Context | None = None
        self.total_bytes = config.hbm_bytes
        # The driver and runtime keep part of the HBM (firmware, task queues):
        # get_mem_info's free starts below total, as on a real card.
        self.reserved_bytes = min(config.hbm_bytes // 32, 4 << 30)
        self.used_bytes = self.reserved_bytes
        self._next_address = 0x12C0_0000_0000 + device_id * self.ADDRESS_SPACING
        self._next_stream_id = 0
        self.lock = threading.Lock()
        # busy nanoseconds per 100 ms bucket: [bucket index, cube, vector, aicpu]
        self._buckets = [[0, 0, 0, 0] for _ in range(UTIL_BUCKETS)]

    def take_stream_id(self) -> int:
        with self.lock:
            stream_id = self._next_stream_id
            self._next_stream_id += 1
            return stream_id

    def reserve(self, size: int) -> int | None:
        """Account ``size`` bytes the way aclrtMalloc does (32-byte rounding + 32)."""
        rounded = ((size + 31) // 32) * 32 + 32
        with self.lock:
            if self.used_bytes + rounded > self.total_bytes:
                return None
            self.used_bytes += rounded
            address = self._next_address
            self._next_address += ((rounded + 511) // 512) * 512
            return address

    def release(self, size: int) -> None:
        rounded = ((size + 31) // 32) * 32 + 32
        with self.lock:
            self.used_bytes = max(self.reserved_bytes, self.used_bytes - rounded)

    def add_busy(self, start_ns: int, duration_ns: int, unit: int) -> None:
        index = start_ns // UTIL_BUCKET_NS
        bucket = self._buckets[index % UTIL_BUCKETS]
        with self.lock:
            if bucket[0] != index:
                bucket[0] = index
                bucket[1] = bucket[2] = bucket[3] = 0
            bucket[unit] += duration_ns

    def utilization(self) -> tuple[int, int, int]:
        """(cube, vector, aicpu) percent busy over the last second of device time."""
        current = now_ns() // UTIL_BUCKET_NS
        totals = [0, 0, 0]
        with self.lock:
            for bucket in self._buckets:
                if current - UTIL_BUCKETS < bucket[0] <= current:
                    totals[0] += bucket[1]
                    totals[1] += bucket[2]
                    totals[2] += bucket[3]
        window = UTIL_BUCKETS * UTIL_BUCKET_NS
        return tuple(min(100, round(100 * t / window)) for t in totals)  # type: ignore[return-value]


#: ACL code -> the task scheduler's own return code and words, as runtime logs print
#: them ("Kernel task happen error, retCode=0x26, [aicore exception]").
TASK_RET_CODES = {
    C.ACL_ERROR_RT_AICORE_EXCEPTION: (0x26, "aicore exception"),
    C.ACL_ERROR_RT_VECTOR_CORE_EXCEPTION: (0x31, "vector core exception"),
}

#: how often a synchronize waiting for a blocking host callback checks its thread.
CALLBACK_POLL_S = 0.05

UNIT_CUBE = 1
UNIT_VECTOR = 2
UNIT_AICPU = 3


@dataclass(eq=False)
class HostCallback:
    """A launch_callback task: runs on the subscribed thread once the stream gets there."""

    ready_ns: int
    fn: Callable[[Any], Any]
    args: Any
    done: threading.Event


@dataclass(eq=False)
class ExceptionInfo:
    handle: int
    device_id: int
    stream_id: int
    task_id: int
    thread_id: int
    error_code: int


# ---------------------------------------------------------------- the runtime
class Runtime:
    """One acl.init .. acl.finalize session."""

    def __init__(self, config: SimConfig, acl_json: AclJson) -> None:
        self.config = config
        self.acl_json = acl_json
        self.init_count = 1
        self.lock = threading.RLock()
        self.devices = [Device(i, config) for i in range(config.device_count)]
        self.contexts: dict[int, Context] = {}
        self.streams: dict[int, Stream] = {}
        self.events: dict[int, Event] = {}
        self.allocations: dict[int, Allocation] = {}
        self._alloc_starts: list[int] = []
        self.host_allocations: dict[int, np.ndarray] = {}
        self.exception_infos: dict[int, ExceptionInfo] = {}
        self.exception_callback: Callable[[int], Any] | None = None
        self._callback_queue: queue.SimpleQueue[tuple[int, threading.Event] | None] = (
            queue.SimpleQueue()
        )
        self._callback_thread: threading.Thread | None = None
        self._callback_thread_ident = 0
        self.rng = random.Random(config.seed)
        self.fault_states = [FaultState(rule, self.rng) for rule in config.faults]
        #: (device, stream id, task id) -> task record, for create_and_get_op_desc.
        self.tasks: dict[tuple[int, int, int], Any] = {}
        self.session_time = time.strftime("%Y%m%d%H%M%S")
        #: subscribed thread (native id) -> its pending host callbacks, in launch order.
        self.reports: dict[int, list[HostCallback]] = {}
        self.reports_changed = threading.Condition(self.lock)
        # filled in by the model and profiling modules
        self.models: dict[int, Any] = {}
        self.next_model_id = 1
        self.extras: dict[str, Any] = {}

    # -------------------------------------------------------------- contexts
    def current_context(self) -> Context | None:
        ctx = getattr(_thread_state, "context", None)
        if ctx is not None and ctx.handle in self.contexts:
            return ctx
        return None

    def set_current_context(self, ctx: Context | None) -> None:
        _thread_state.context = ctx

    def new_context(self, device: Device, *, is_default: bool) -> Context:
        ctx = Context(new_handle(), device, is_default)
        ctx.default_stream = Stream(new_handle(), device.take_stream_id(), ctx)
        self.contexts[ctx.handle] = ctx
        return ctx

    def drop_context(self, ctx: Context) -> None:
        for stream in list(ctx.streams.values()):
            self.streams.pop(stream.handle, None)
        ctx.streams.clear()
        self.contexts.pop(ctx.handle, None)
        if getattr(_thread_state, "context", None) is ctx:
            _thread_state.context = None

    def new_stream(self, ctx: Context, priority: int = 0, flags: int = 0) -> Stream:
        stream = Stream(new_handle(), ctx.device.take_stream_id(), ctx, priority, flags)
        ctx.streams[stream.handle] = stream
        self.streams[stream.handle] = stream
        return stream

    def resolve_stream(self, handle: int) -> Stream | int:
        """A stream handle (0 = the current context's default stream) or an error code."""
        if handle == 0:
            ctx = self.current_context()
            if ctx is None:
                return fail(C.ACL_ERROR_RT_CONTEXT_NULL, "no current context")
            assert ctx.default_stream is not None
            return ctx.default_stream
        stream = self.streams.get(handle)
        if stream is None:
            return fail(C.ACL_ERROR_RT_INVALID_HANDLE, f"stream {handle:#x} does not exist")
        return stream

    # -------------------------------------------------------------- device time
    def wait_stream(self, stream: Stream, timeout_ms: int = -1) -> int:
        """Block until the stream's tasks are done; return its pending error, if any."""
        deadline = None if timeout_ms < 0 else time.monotonic() + timeout_ms / 1000
        while stream.blocking_callbacks:
            # A blocking host callback holds the stream until process_report ran it,
            # but never forever: if no live thread can run it any more, fail.
            done = stream.blocking_callbacks[0]
            while not done.wait(CALLBACK_POLL_S):
                if not self.report_thread_alive(stream):
                    self.drop_callbacks(stream)
                    return fail(
                        C.ACL_ERROR_RT_THREAD_SUBSCRIBE,
                        f"stream {stream.stream_id} waits for a host callback, but no live "
                        "thread is subscribed to run it (the report thread ended or "
                        "unsubscribed)",
                    )
                if deadline is not None and time.monotonic() >= deadline:
                    return fail(
                        C.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, "a blocking callback is pending"
                    )
            if stream.blocking_callbacks and stream.blocking_callbacks[0] is done:
                stream.blocking_callbacks.pop(0)
        remaining = stream.busy_until - now_ns()
        if remaining > 0:
            if timeout_ms >= 0 and remaining > timeout_ms * 1_000_000:
                time.sleep(timeout_ms / 1000)
                return fail(C.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, "stream synchronize timed out")
            time.sleep(remaining / 1e9)
        pending = stream.pending_error
        if pending is None:
            return C.ACL_SUCCESS
        stream.pending_error = None
        code, delivered, detail = pending
        if threading.get_ident() != self._callback_thread_ident:
            delivered.wait(5.0)  # the callback runs before synchronize reports the error
        ret_code, what = TASK_RET_CODES.get(code, (code, C.error_name(code)))
        return fail(
            code,
            f"Stream synchronize failed, stream_id={stream.stream_id}, "
            f"retCode={ret_code:#x}, [{what}]",
            detail,
        )

    def report_thread_alive(self, stream: Stream) -> bool:
        """Whether a live thread is subscribed to run ``stream``'s host callbacks."""
        thread_id = stream.report_thread
        if thread_id is None:
            return False
        return any(t.native_id == thread_id for t in threading.enumerate())

    def drop_callbacks(self, stream: Stream) -> None:
        """Forget callbacks that can no longer run; release whoever waits on them."""
        with self.lock:
            waiting = stream.blocking_callbacks[:]
            stream.blocking_callbacks.clear()
            for pending in self.reports.values():
                pending[:] = [c for c in pending if c.done not in waiting]
        for done in waiting:
            done.set()

    # -------------------------------------------------------------- memory
    def allocate(self, device: Device, size: int) -> Allocation | None:
        address = device.reserve(size)
        if address is None:
            return None
        allocation = Allocation(address, size, device.device_id)
        with self.lock:
            self.allocations[address] = allocation
            bisect.insort(self._alloc_starts, address)
        return allocation

    def release(self, allocation: Allocation) -> None:
        with self.lock:
            self.allocations.pop(allocation.address, None)
            index = bisect.bisect_left(self._alloc_starts, allocation.address)
            if index < len(self._alloc_starts) and self._alloc_starts[index] == allocation.address:
                del self._alloc_starts[index]
        self.devices[allocation.device_id].release(allocation.size)

    def find_allocation(self, address: int, count: int) -> tuple[Allocation, int] | None:
        """The device allocation holding [address, address+count) and the offset in it."""
        starts = self._alloc_starts
        index = bisect.bisect_right(starts, address) - 1
        if index < 0:
            return None
        allocation = self.allocations.get(starts[index])
        if allocation is None:
            return None
        offset = address - allocation.address
        if offset + count > allocation.size:
            return None
        return allocation, offset

    def read_device(self, address: int, count: int) -> np.ndarray | None:
        found = self.find_allocation(address, count)
        if found is None:
            return None
        allocation, offset = found
        return allocation.buffer[offset : offset + count]

    def write_device(self, address: int, data: bytes | np.ndarray) -> bool:
        raw = (
            np.frombuffer(data, dtype=np.uint8)
            if isinstance(data, bytes)
            else data.view(np.uint8).ravel()
        )
        found = self.find_allocation(address, raw.size)
        if found is None:
            return False
        allocation, offset = found
        allocation.buffer[offset : offset + raw.size] = raw
        return True

    # -------------------------------------------------------------- exceptions
    def raise_exception(
        self,
        stream: Stream,
        task_id: int,
        code: int,
        *,
        op_name: str = "",
        op_type: str = "",
        core_id: int = 0,
        pc_start: int = 0,
        para_base: int = 0,
    ) -> None:
        """Report a failed task: log it, queue the callback and arm the stream's error."""
        detail = log_task_exception(
            stream, task_id, code, op_name, op_type, core_id, pc_start, para_base
        )
        info = ExceptionInfo(
            new_handle(),
            stream.device.device_id,
            stream.stream_id,
            task_id,
            threading.get_native_id(),
            code,
        )
        delivered = threading.Event()
        with self.lock:
            self.exception_infos[info.handle] = info
            while len(self.exception_infos) > 256:
                self.exception_infos.pop(next(iter(self.exception_infos)))
            if self.exception_callback is None:
                delivered.set()
            else:
                self._ensure_callback_thread()
                self._callback_queue.put((info.handle, delivered))
        stream.pending_error = (code, delivered, detail)

    def _ensure_callback_thread(self) -> None:
        if self._callback_thread is None or not self._callback_thread.is_alive():
            self._callback_thread = threading.Thread(
                target=self._deliver_callbacks, name="acl-sim-runtime", daemon=True
            )
            self._callback_thread.start()

    def _deliver_callbacks(self) -> None:
        self._callback_thread_ident = threading.get_ident()
        while True:
            item = self._callback_queue.get()
            if item is None:
                return
            handle, delivered = item
            callback = self.exception_callback
            try:
                if callback is not None:
                    callback(handle)
            except BaseException:
                # pyACL drops a callback that raises: it is never called again.
                self.exception_callback = None
                print("acl (sim): the exception callback raised and was removed:", file=sys.stderr)
                traceback.print_exc()
            finally:
                delivered.set()

    def shutdown(self) -> None:
        with self.lock:  # wake process_report callers: their subscriptions are gone
            self.reports.clear()
            self.reports_changed.notify_all()
        if self._callback_thread is not None and self._callback_thread.is_alive():
            self._callback_queue.put(None)
            if threading.get_ident() != self._callback_thread_ident:
                self._callback_thread.join(2.0)


def log_task_exception(
    stream: Stream,
    task_id: int,
    code: int,
    op_name: str,
    op_type: str,
    core_id: int,
    pc_start: int,
    para_base: int,
) -> str:
    """The plog lines the runtime writes when the device reports a failed task.

    Returns the device's text, which get_recent_err_msg repeats.
    """
    device_id, stream_id = stream.device.device_id, stream.stream_id
    detail = (
        f"The error from device(chipId:{device_id}, dieId:0), serial number is {task_id}, "
        f"there is an aicore error exception, core id is {core_id}, error code = 0, "
        f"dump info: pc start: {pc_start:#x}, current: {pc_start + 0x16C:#x}, "
        f"vec error info: 0, mte error info: 0, ifu error info: 0, ccu error info: 0, "
        f"cube error info: 0, biu error info: 0, aic error mask: 0, para base: {para_base:#x}."
    )
    writer = slog.WRITER
    writer.write(
        slog.LEVEL_ERROR, "RUNTIME", "device_error_proc.cc:1047", "ProcessCoreErrorInfo", detail
    )
    writer.write(
        slog.LEVEL_ERROR,
        "RUNTIME",
        "task_info.cc:1276",
        "PrintErrorInfo",
        f"Aicore kernel execute failed, device_id={device_id}, stream_id={stream_id}, "
        f"report_stream_id={stream_id}, task_id={task_id}, flip_num=0, "
        f"fault kernel_name={op_name}, program id=0, "
        f"retCode={TASK_RET_CODES.get(code, (code, ''))[0]:#x}.",
    )
    writer.write(
        slog.LEVEL_ERROR,
        "GE",
        "error_tracking.cc:172",
        "ProcessException",
        f"[AIC_INFO] node_name:{op_name}, node_type:{op_type}, stream_id:{stream_id}, "
        f"task_id:{task_id}",
    )
    return detail


# ---------------------------------------------------------------- the session
_session_lock = threading.Lock()
_runtime: Runtime | None = None


def runtime() -> Runtime | None:
    return _runtime


def needs_init(
    *failed: Any, handle: bool = False
) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """The one "acl.init was not called" guard of the ``acl.*`` functions.

    The decorated implementation takes the running session as its first
    argument; the public function keeps the pyACL name and signature (without
    that argument). Before ``acl.init`` (or after ``acl.finalize``) it records
    ACL_ERROR_UNINITIALIZE for ``get_recent_err_msg`` and returns it in the
    call's own shape: ``ret`` alone, ``(*failed, ret)`` for calls with
    out-parameters, or a NULL handle (0) for ``create_*`` calls (``handle``).
    """

    def decorate(impl: Callable[..., T]) -> Callable[..., T]:
        where = (impl.__module__.rsplit(".", 1)[-1], impl.__name__)

        def uninitialized() -> Any:
            code = fail(C.ACL_ERROR_UNINITIALIZE, "acl.init was not called", call=where)
            if handle:
                return 0
            return (*failed, code) if failed else code

        signature = inspect.signature(impl)
        params = list(signature.parameters.values())[1:]
        call = _guarded_call(impl, params, uninitialized)
        functools.update_wrapper(call, impl)
        call.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        return call

    return decorate


def _guarded_call(
    impl: Callable[..., Any], params: list[inspect.Parameter], uninitialized: Callable[[], Any]
) -> Callable[..., Any]:
    """A function with ``params`` that passes the session to ``impl``.

    Written out with the real parameter names (not ``*args, **kwargs``) so the
    guard costs one plain call: these are the runtime's hottest functions.
    """
    plain = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.POSITIONAL_ONLY)
    if not all(p.kind in plain for p in params):

        def call(*args: Any, **kwargs: Any) -> Any:
            rt = _runtime
            if rt is None:
                return uninitialized()
            return impl(rt, *args, **kwargs)

        return call
    namespace: dict[str, Any] = {
        "_session": sys.modules[__name__],
        "_impl": impl,
        "_uninitialized": uninitialized,
    }
    declared = []
    for index, param in enumerate(params):
        if param.default is inspect.Parameter.empty:
            declared.append(param.name)
        else:
            namespace[f"_default{index}"] = param.default
            declared.append(f"{param.name}=_default{index}")
    names = ", ".join(p.name for p in params)
    source = (
        f"def {impl.__name__}({', '.join(declared)}):\n"
        "    rt = _session._runtime\n"
        "    if rt is None:\n"
        "        return _uninitialized()\n"
        f"    return _impl(rt{', ' if names else ''}{names})\n"
    )
    exec(compile(source, f"<acl guard {impl.__name__}>", "exec"), namespace)
    return namespace[impl.__name__]


def start_session(config: SimConfig, acl_json: AclJson) -> Runtime:
    global _runtime, _exit_hook_installed
    with _session_lock:
        _runtime = Runtime(config, acl_json)
        if not _exit_hook_installed:
            atexit.register(_close_profiling_at_exit)
            _exit_hook_installed = True
        return _runtime


_exit_hook_installed = False


def _close_profiling_at_exit() -> None:
    """A job that exits without acl.finalize still leaves complete profiling files."""
    rt = _runtime
    if rt is not None and rt.extras.get("prof") is not None:
        rt.extras["prof"].shutdown()


def end_session() -> None:
    global _runtime
    with _session_lock:
        if _runtime is not None:
            _runtime.shutdown()
        _runtime = None
        _thread_state.context = None


# ---------------------------------------------------------------- host memory
def read_host(address: int, count: int) -> bytes:
    """Bytes at a real host address (pyACL host pointers are real pointers)."""
    return ctypes.string_at(address, count)


def write_host(address: int, data: bytes | np.ndarray) -> None:
    raw = data if isinstance(data, bytes) else np.ascontiguousarray(data).tobytes()
    ctypes.memmove(address, raw, len(raw))


# ---------------------------------------------------------------- host-side objects
# Data buffers, datasets and descriptors are host structures: they exist with or
# without acl.init, like the C structs pyACL hands out.
@dataclass(eq=False)
class TensorDesc:
    acl_dtype: int
    dims: tuple[int, ...]
    acl_format: int
    name: str = ""
    address: int = 0
    #: bytes given by acl.set_tensor_const (a constant operator input).
    const_data: bytes | None = None


#: data buffer handle -> [device address, size]
DATA_BUFFERS: dict[int, list[int]] = {}
#: dataset handle -> data buffer handles
DATASETS: dict[int, list[int]] = {}
TENSOR_DESCS: dict[int, TensorDesc] = {}
#: op-desc array handle (create_and_get_op_desc) -> tensor desc handles
DESC_ARRAYS: dict[int, list[int]] = {}
#: model desc handle -> model id it describes (0 = not filled yet)
MODEL_DESCS: dict[int, Any] = {}
