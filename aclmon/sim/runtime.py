"""One acl.init .. acl.finalize session: what the program created, and device time.

The session's registry keeps every context, stream, event and allocation by its
handle (the objects themselves are in :mod:`aclmon.sim.devices`). The public
``acl.*`` functions (in the ``api_*`` modules) are thin: they check arguments
and call into this module, never into each other, so a wrapper installed on
``acl.rt.*`` sees each user call exactly once.

Device time: each stream has a ``busy_until`` instant on a clock that runs with
the host's monotonic clock. Launching a task computes its result at once (numpy)
and pushes ``busy_until`` by the task's modelled duration (times
``time_scale``); query reports NOT_READY until then and synchronize sleeps
until then. Utilization is the modelled busy time of the last second.

A failed task is reported the way the device reports it: plog lines, the
exception callback on the runtime's own thread, then the stream's error at
the next synchronize.
"""

from __future__ import annotations

import atexit
import bisect
import collections
import queue
import random
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from aclmon import acl_constants as C
from aclmon.sim import slog
from aclmon.sim.acljson import AclJson
from aclmon.sim.config import SimConfig
from aclmon.sim.devices import (
    Allocation,
    Context,
    Device,
    Event,
    ExceptionInfo,
    HostCallback,
    Stream,
    now_ns,
)
from aclmon.sim.driver import DeviceUse, DriverShare
from aclmon.sim.errmsg import fail
from aclmon.sim.faults import FaultState

#: the context each thread made current (set_context, set_device, create_context).
_thread_state = threading.local()

#: ACL code -> the task scheduler's own return code and words, as runtime logs print
#: them ("Kernel task happen error, retCode=0x26, [aicore exception]").
TASK_RET_CODES = {
    C.ACL_ERROR_RT_AICORE_EXCEPTION: (0x26, "aicore exception"),
    C.ACL_ERROR_RT_VECTOR_CORE_EXCEPTION: (0x31, "vector core exception"),
    C.ACL_ERROR_RT_SYS_DMA: (C.ACL_ERROR_RT_SYS_DMA, "memory copy failed"),
    C.ACL_ERROR_RT_AICPU_EXCEPTION: (0x2A, "aicpu exception"),
}

#: where devices hand out memory: device ``i`` from ``BASE + (i << SHIFT)`` on
_ADDRESS_BASE = Device.ADDRESS_BASE
_ADDRESS_SHIFT = Device.ADDRESS_SHIFT
_ADDRESS_MASK = Device.ADDRESS_SPACING - 1

#: how often a synchronize waiting for a blocking host callback checks its thread.
CALLBACK_POLL_S = 0.05


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
        #: per device, how far past its first address it hands out memory (is_device_address)
        self._device_extents = [2 * device.total_bytes for device in self.devices]
        #: the device buffers the job freed lately (acl.rt.free), newest last: what a
        #: stale pointer points at (the use_after_free fault)
        self.freed_by_job: collections.deque[Allocation] = collections.deque(maxlen=64)
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
        #: what the simulated driver shows of this process (npu-smi, DCMI).
        self._driver_share: DriverShare | None = None

    # -------------------------------------------------------------- the driver's view
    def share_devices(self) -> None:
        """A device was set: from now on the simulated npu-smi and DCMI list this process."""
        with self.lock:
            if self._driver_share is not None:
                return
            self._driver_share = DriverShare(self.device_uses)
        self._driver_share.start()

    def device_uses(self) -> list[DeviceUse]:
        return [
            DeviceUse(
                device.device_id, device.used_bytes - device.reserved_bytes, *device.utilization()
            )
            for device in self.devices
            if device.refcount > 0 or device.used_bytes > device.reserved_bytes
        ]

    # -------------------------------------------------------------- contexts
    def current_context(self) -> Context | None:
        ctx = getattr(_thread_state, "context", None)
        if ctx is not None and ctx.handle in self.contexts:
            return ctx
        return None

    def set_current_context(self, ctx: Context | None) -> None:
        _thread_state.context = ctx

    def new_context(self, device: Device, *, is_default: bool) -> Context:
        ctx = Context(device, is_default)
        ctx.default_stream = Stream(device.take_stream_id(), ctx)
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
        stream = Stream(ctx.device.take_stream_id(), ctx, priority, flags)
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
        self.wait_delivered(delivered)  # the callback runs before synchronize reports it
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

    def subscribe_reports(self, thread_id: int, stream: Stream) -> int:
        """From now on ``thread_id`` runs ``stream``'s host callbacks (process_report)."""
        with self.lock:
            if stream.report_thread is not None:
                return fail(C.ACL_ERROR_RT_STREAM_SUBSCRIBE, "the stream is already subscribed")
            stream.report_thread = thread_id
            self.reports.setdefault(thread_id, [])
        return C.ACL_SUCCESS

    def unsubscribe_reports(self, thread_id: int, stream: Stream) -> int:
        """``thread_id`` no longer runs ``stream``'s host callbacks; those pending are dropped."""
        with self.lock:
            if stream.report_thread != thread_id:
                return fail(
                    C.ACL_ERROR_RT_STREAM_SUBSCRIBE, "the stream is not subscribed to that thread"
                )
            stream.report_thread = None
            if not any(s.report_thread == thread_id for s in self.streams.values()):
                self.reports.pop(thread_id, None)
            self.reports_changed.notify_all()
        self.drop_callbacks(stream)  # nothing will run them now
        return C.ACL_SUCCESS

    def queue_report(self, thread_id: int, fn: Callable[[Any], Any], args: Any) -> threading.Event:
        """A callback for ``thread_id``'s next process_report (a media channel's result);
        returns what is set once it ran."""
        callback = HostCallback(now_ns(), fn, args, threading.Event())
        with self.lock:
            self.reports.setdefault(thread_id, []).append(callback)
            self.reports_changed.notify_all()
        return callback.done

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
        extent = address + size - _ADDRESS_BASE - (device.device_id << _ADDRESS_SHIFT)
        with self.lock:
            extents = self._device_extents
            extents[device.device_id] = max(extents[device.device_id], extent)
            self.allocations[address] = allocation
            bisect.insort(self._alloc_starts, address)
        return allocation

    def release(self, allocation: Allocation, *, by_job: bool = False) -> None:
        """Give ``allocation`` back; ``by_job``: the job freed it (acl.rt.free)."""
        if by_job:
            self.freed_by_job.append(allocation)
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

    def locate(self, address: int) -> tuple[Allocation, int] | None:
        """The device allocation ``address`` falls in and the offset in it, whatever
        the length of what is done there."""
        starts = self._alloc_starts
        index = bisect.bisect_right(starts, address) - 1
        if index < 0:
            return None
        allocation = self.allocations.get(starts[index])
        if allocation is None or address >= allocation.address + allocation.size:
            return None
        return allocation, address - allocation.address

    def is_device_address(self, address: int) -> bool:
        """Whether ``address`` lies where a device hands out memory (allocated or not):
        such an address is never host memory, so nothing reads it as such. Each
        device's range is what it handed out so far, and at least twice its HBM (far
        below the next device's range)."""
        offset = address - _ADDRESS_BASE
        index = offset >> _ADDRESS_SHIFT
        return (
            0 <= index < len(self._device_extents)
            and (offset & _ADDRESS_MASK) < self._device_extents[index]
        )

    def last_freed(self, device_id: int) -> Allocation | None:
        """The device buffer the job freed most recently on ``device_id``."""
        for allocation in reversed(self.freed_by_job):
            if allocation.device_id == device_id:
                return allocation
        return None

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
        detail: str = "",
        arm: bool = True,
    ) -> threading.Event:
        """Report a failed task: log it, queue the callback and arm the stream's error;
        returns what is set once the callback has run.

        ``detail``: the device's text, already logged (a copy fault, a device fault of
        its own kind); else the AI Core exception's lines are logged here. ``arm``: the stream's next synchronize
        returns the error (not for a synchronous call that returns it itself)."""
        if not detail:
            detail = log_task_exception(
                stream, task_id, code, op_name, op_type, core_id, pc_start, para_base
            )
        info = ExceptionInfo(
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
        if arm:
            stream.pending_error = (code, delivered, detail)
        return delivered

    def wait_delivered(self, delivered: threading.Event) -> None:
        """Wait until the exception callback of a failure ran (not on its own thread)."""
        if threading.get_ident() != self._callback_thread_ident:
            delivered.wait(5.0)

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
        if self._driver_share is not None:
            self._driver_share.stop()
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


def log_copy_fault(
    stream: Stream, task_id: int, count: int, kind: int, src: int, dst: int, reason: str
) -> str:
    """The plog lines of a copy the SDMA engine could not do (CANN's troubleshooting
    guide shows them for an async copy with a bad address). Returns the device's text."""
    device_id, stream_id = stream.device.device_id, stream.stream_id
    detail = (
        f"The error from device(chipId:{device_id}, dieId:0), serial number is {task_id}, "
        f"there is a sdma error: {reason}."
    )
    writer = slog.WRITER
    writer.write(
        slog.LEVEL_ERROR,
        "RUNTIME",
        "device_error_proc.cc:648",
        "ProcessSdmaErrorInfo",
        f"report error module_type=3, module_name=EE8888. {detail}",
    )
    writer.write(
        slog.LEVEL_ERROR,
        "RUNTIME",
        "task.cc:1589",
        "PrintErrorInfo",
        f"Memory async copy failed, device_id={device_id}, stream_id={stream_id}, "
        f"task_id={task_id}, flip_num=0, copy_type=0, memcpy_type={kind}, copy_data_type=0, "
        f"length={count}, src_addr={src:#x}, dst_addr={dst:#x}.",
    )
    return detail


# ---------------------------------------------------------------- the session
_session_lock = threading.Lock()
_runtime: Runtime | None = None


def runtime() -> Runtime | None:
    return _runtime


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
