"""``acl.rt.*``: devices, contexts, streams, events, memory, exception info.

Each function checks its arguments, calls into :mod:`aclmon.sim.runtime`, and
returns the pyACL shape. None of them calls another public function.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from aclmon import acl_constants as C
from aclmon.sim import devices as D
from aclmon.sim import errmsg, slog
from aclmon.sim import host as H
from aclmon.sim import runtime as R
from aclmon.sim.accessors import named
from aclmon.sim.config import SimConfigError, load_config
from aclmon.sim.devices import now_ns
from aclmon.sim.errmsg import fail
from aclmon.sim.faults import FaultRuleError
from aclmon.sim.guard import needs_init
from aclmon.sim.runtime import Runtime

T = TypeVar("T")

MAX_STREAMS_PER_DEVICE = 2048
#: aclrtMemcpyKind values (HOST_TO_HOST .. INTER_DEVICE_TO_DEVICE); the kind is reserved
MEMCPY_KINDS = 8
VALID_STREAM_FLAGS = (
    C.ACL_STREAM_FAST_LAUNCH | C.ACL_STREAM_FAST_SYNC | C.ACL_STREAM_PERSISTENT | C.ACL_STREAM_HUGE
)
VALID_EVENT_FLAGS = (
    C.ACL_EVENT_SYNC
    | C.ACL_EVENT_CAPTURE_STREAM_PROGRESS
    | C.ACL_EVENT_TIME_LINE
    | C.ACL_EVENT_EXTERNAL
    | C.ACL_EVENT_IPC
)
HBM_ATTRS = {
    C.ACL_HBM_MEM,
    C.ACL_HBM_MEM_HUGE,
    C.ACL_HBM_MEM_NORMAL,
    C.ACL_HBM_MEM_P2P_HUGE,
    C.ACL_HBM_MEM_P2P_NORMAL,
    C.ACL_HBM_MEM_HUGE1G,
    C.ACL_HBM_MEM_P2P_HUGE1G,
}
DDR_ATTRS = {
    C.ACL_DDR_MEM,
    C.ACL_DDR_MEM_HUGE,
    C.ACL_DDR_MEM_NORMAL,
    C.ACL_DDR_MEM_P2P_HUGE,
    C.ACL_DDR_MEM_P2P_NORMAL,
}


def _current(rt: Runtime) -> D.Context | int:
    ctx = rt.current_context()
    if ctx is None:
        return fail(
            C.ACL_ERROR_RT_CONTEXT_NULL, "no current context: call set_device or set_context"
        )
    return ctx


# ---------------------------------------------------------------- devices
@needs_init()
def set_device(rt: Runtime, device_id: int) -> int:
    if not 0 <= device_id < len(rt.devices):
        return fail(C.ACL_ERROR_RT_INVALID_DEVICEID, f"no device {device_id}")
    device = rt.devices[device_id]
    with rt.lock:
        device.refcount += 1
        if device.default_context is None:
            device.default_context = rt.new_context(device, is_default=True)
        rt.set_current_context(device.default_context)
    rt.share_devices()
    return C.ACL_SUCCESS


def _reset(rt: Runtime, device_id: int, force: bool) -> int:
    if not 0 <= device_id < len(rt.devices):
        return fail(C.ACL_ERROR_RT_INVALID_DEVICEID, f"no device {device_id}")
    device = rt.devices[device_id]
    with rt.lock:
        if device.refcount == 0:
            return C.ACL_SUCCESS
        device.refcount = 0 if force else device.refcount - 1
        if device.refcount == 0 and device.default_context is not None:
            rt.drop_context(device.default_context)
            device.default_context = None
    return C.ACL_SUCCESS


@needs_init()
def reset_device(rt: Runtime, device_id: int) -> int:
    return _reset(rt, device_id, force=False)


@needs_init()
def reset_device_force(rt: Runtime, device_id: int) -> int:
    return _reset(rt, device_id, force=True)


@needs_init(-1)
def get_device(rt: Runtime) -> tuple[int, int]:
    ctx = _current(rt)
    if isinstance(ctx, int):
        return -1, ctx
    return ctx.device.device_id, C.ACL_SUCCESS


@needs_init(0)
def get_device_count(rt: Runtime) -> tuple[int, int]:
    return len(rt.devices), C.ACL_SUCCESS


def get_run_mode() -> tuple[int, int]:
    """ACL_HOST: PCIe cards in a server, the program copies between host and device.
    ACL_DEVICE: the program runs on the board, its memory is device memory.

    Answers before acl.init too: acllite's image class asks it at import time.
    """
    rt = R.runtime()
    if rt is not None:
        return rt.config.run_mode, C.ACL_SUCCESS
    try:
        return load_config().run_mode, C.ACL_SUCCESS
    except (SimConfigError, FaultRuleError):
        return C.ACL_HOST, C.ACL_SUCCESS  # acl.init reports the bad configuration


@needs_init(C.ACL_DEVICE_STATUS_ABNORMAL)
def query_device_status(rt: Runtime, device_id: int) -> tuple[int, int]:
    if not 0 <= device_id < len(rt.devices):
        return C.ACL_DEVICE_STATUS_ABNORMAL, fail(C.ACL_ERROR_RT_INVALID_DEVICEID, "no such device")
    return C.ACL_DEVICE_STATUS_NORMAL, C.ACL_SUCCESS


@needs_init(0)
def get_device_info(rt: Runtime, device_id: int, attr: int) -> tuple[int, int]:
    if not 0 <= device_id < len(rt.devices):
        return 0, fail(C.ACL_ERROR_RT_INVALID_DEVICEID, f"no device {device_id}")
    cfg = rt.config
    values = {
        C.ACL_DEV_ATTR_AICPU_CORE_NUM: cfg.aicpu_core_count,
        C.ACL_DEV_ATTR_AICORE_CORE_NUM: cfg.ai_core_count,
        C.ACL_DEV_ATTR_CUBE_CORE_NUM: cfg.ai_core_count,
        C.ACL_DEV_ATTR_VECTOR_CORE_NUM: cfg.vector_core_count,
        C.ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE: cfg.hbm_bytes,
        C.ACL_DEV_ATTR_L2_CACHE_SIZE: cfg.l2_cache_bytes,
        C.ACL_DEV_ATTR_PHY_CHIP_ID: device_id,
        C.ACL_DEV_ATTR_IS_VIRTUAL: 0,
    }
    if attr not in values:
        return 0, fail(C.ACL_ERROR_INVALID_PARAM, f"unknown device attribute {attr}")
    return values[attr], C.ACL_SUCCESS


@needs_init({})
def get_device_utilization_rate(rt: Runtime, device_id: int) -> tuple[dict[str, int], int]:
    if not 0 <= device_id < len(rt.devices):
        return {}, fail(C.ACL_ERROR_RT_INVALID_DEVICEID, f"no device {device_id}")
    cube, vector, aicpu = rt.devices[device_id].utilization()
    if rt.config.soc_name in ("Ascend910", "Ascend910A", "Ascend910ProA", "Ascend910PremiumA"):
        vector = C.DEVICE_UTILIZATION_NOT_SUPPORT  # Atlas training (910A) has no vector unit
    return (
        {
            "cube_utilization": cube,
            "vector_utilization": vector,
            "aicpu_utilization": aicpu,
            "memory_utilization": C.DEVICE_UTILIZATION_NOT_SUPPORT,
            "utilization_extend": 0,
        },
        C.ACL_SUCCESS,
    )


def _sync_device(rt: Runtime, timeout_ms: int) -> int:
    ctx = _current(rt)
    if isinstance(ctx, int):
        return ctx
    device = ctx.device
    streams = [c.default_stream for c in list(rt.contexts.values()) if c.device is device]
    streams += [s for s in list(rt.streams.values()) if s.device is device]
    deadline = time.monotonic() + timeout_ms / 1000 if timeout_ms >= 0 else None
    first_error = C.ACL_SUCCESS
    for stream in streams:
        if stream is None:
            continue
        left = -1 if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
        code = rt.wait_stream(stream, left)
        if code == C.ACL_ERROR_RT_STREAM_SYNC_TIMEOUT:
            return code
        if code and not first_error:
            first_error = code
    return first_error


@needs_init()
def synchronize_device(rt: Runtime) -> int:
    return _sync_device(rt, -1)


@needs_init()
def synchronize_device_with_timeout(rt: Runtime, timeout: int) -> int:
    if timeout < -1:
        return fail(C.ACL_ERROR_INVALID_PARAM, "timeout must be -1 or >= 0 ms")
    return _sync_device(rt, timeout)


@needs_init()
def set_op_execute_timeout(rt: Runtime, timeout: int) -> int:
    return C.ACL_SUCCESS


@needs_init()
def set_op_wait_timeout(rt: Runtime, timeout: int) -> int:
    return C.ACL_SUCCESS


def get_last_error(level: int) -> int:
    return errmsg.last_error_code(clear=True)


def peek_at_last_error(level: int) -> int:
    return errmsg.last_error_code(clear=False)


# ---------------------------------------------------------------- contexts
@needs_init(0)
def create_context(rt: Runtime, device_id: int) -> tuple[int, int]:
    if not 0 <= device_id < len(rt.devices):
        return 0, fail(C.ACL_ERROR_RT_INVALID_DEVICEID, f"no device {device_id}")
    with rt.lock:
        ctx = rt.new_context(rt.devices[device_id], is_default=False)
        rt.set_current_context(ctx)
    return ctx.handle, C.ACL_SUCCESS


def _find(registry: dict[int, T], handle: int, what: str) -> T | int:
    """What ``handle`` names, or the code pyACL gives for a NULL or an unknown handle."""
    if not handle:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{what} is NULL")
    found = registry.get(handle)
    if found is None:
        return fail(C.ACL_ERROR_RT_INVALID_HANDLE, f"{what} {handle:#x} does not exist")
    return found


@needs_init()
def destroy_context(rt: Runtime, context: int) -> int:
    ctx = _find(rt.contexts, context, "context")
    if isinstance(ctx, int):
        return ctx
    if ctx.is_default:
        return fail(C.ACL_ERROR_RT_INVALID_HANDLE, f"context {context:#x} cannot be destroyed")
    with rt.lock:
        rt.drop_context(ctx)
    return C.ACL_SUCCESS


@needs_init()
def set_context(rt: Runtime, context: int) -> int:
    ctx = _find(rt.contexts, context, "context")
    if isinstance(ctx, int):
        return ctx
    rt.set_current_context(ctx)
    return C.ACL_SUCCESS


@needs_init(0)
def get_context(rt: Runtime) -> tuple[int, int]:
    ctx = _current(rt)
    if isinstance(ctx, int):
        return 0, ctx
    return ctx.handle, C.ACL_SUCCESS


# ---------------------------------------------------------------- streams
def _new_stream(rt: Runtime, priority: int, flags: int) -> tuple[int, int]:
    ctx = _current(rt)
    if isinstance(ctx, int):
        return 0, ctx
    with rt.lock:
        count = sum(1 for s in rt.streams.values() if s.device is ctx.device)
        if count >= MAX_STREAMS_PER_DEVICE:
            return 0, fail(C.ACL_ERROR_RT_NO_STREAM_RESOURCE, "out of streams")
        stream = rt.new_stream(ctx, priority, flags)
    return stream.handle, C.ACL_SUCCESS


@needs_init(0)
def create_stream(rt: Runtime) -> tuple[int, int]:
    return _new_stream(rt, 0, 0)


@needs_init(0)
def create_stream_with_config(rt: Runtime, priority: int, flag: int) -> tuple[int, int]:
    if not 0 <= priority <= 7 or flag & ~VALID_STREAM_FLAGS:
        return 0, fail(C.ACL_ERROR_INVALID_PARAM, "invalid stream priority or flag")
    return _new_stream(rt, priority, flag)


def _destroy_stream(rt: Runtime, stream: int) -> int:
    if not stream:
        return fail(C.ACL_ERROR_INVALID_PARAM, "stream is NULL")
    with rt.lock:
        found = rt.streams.pop(stream, None)
        if found is None:
            return fail(C.ACL_ERROR_RT_INVALID_HANDLE, f"stream {stream:#x} does not exist")
        found.context.streams.pop(stream, None)
    return C.ACL_SUCCESS


@needs_init()
def destroy_stream(rt: Runtime, stream: int) -> int:
    return _destroy_stream(rt, stream)


@needs_init()
def destroy_stream_force(rt: Runtime, stream: int) -> int:
    return _destroy_stream(rt, stream)


def _on_stream(rt: Runtime, stream: int, act: Callable[[D.Stream], int]) -> int:
    """``act(stream)``'s ret for a stream that exists (0: the current context's default)."""
    target = rt.resolve_stream(stream)
    return target if isinstance(target, int) else act(target)


@needs_init()
def synchronize_stream(rt: Runtime, stream: int) -> int:
    return _on_stream(rt, stream, rt.wait_stream)


@needs_init()
def synchronize_stream_with_timeout(rt: Runtime, stream: int, timeout: int) -> int:
    if timeout < -1:
        return fail(C.ACL_ERROR_INVALID_PARAM, "timeout must be -1 or >= 0 ms")
    return _on_stream(rt, stream, lambda found: rt.wait_stream(found, timeout))


@needs_init(C.ACL_STREAM_STATUS_NOT_READY)
def stream_query(rt: Runtime, stream: int) -> tuple[int, int]:
    found = rt.resolve_stream(stream)
    if isinstance(found, int):
        return C.ACL_STREAM_STATUS_NOT_READY, found
    done = now_ns() >= found.busy_until
    return (C.ACL_STREAM_STATUS_COMPLETE if done else C.ACL_STREAM_STATUS_NOT_READY), C.ACL_SUCCESS


@needs_init(-1)
def stream_get_id(rt: Runtime, stream: int) -> tuple[int, int]:
    found = rt.resolve_stream(stream)
    if isinstance(found, int):
        return -1, found
    return found.stream_id, C.ACL_SUCCESS


@needs_init(0)
def get_stream_available_num(rt: Runtime) -> tuple[int, int]:
    ctx = _current(rt)
    if isinstance(ctx, int):
        return 0, ctx
    used = sum(1 for s in list(rt.streams.values()) if s.device is ctx.device)
    return MAX_STREAMS_PER_DEVICE - used, C.ACL_SUCCESS


@needs_init()
def set_stream_overflow_switch(rt: Runtime, stream: int, flag: int) -> int:
    if flag not in (0, 1):
        return fail(C.ACL_ERROR_INVALID_PARAM, "flag must be 0 or 1")
    found = rt.resolve_stream(stream)
    if isinstance(found, int):
        return found
    found.overflow_switch = flag
    return C.ACL_SUCCESS


@needs_init(0)
def get_stream_overflow_switch(rt: Runtime, stream: int) -> tuple[int, int]:
    found = rt.resolve_stream(stream)
    if isinstance(found, int):
        return 0, found
    return found.overflow_switch, C.ACL_SUCCESS


# ---------------------------------------------------------------- events
def _event(rt: Runtime, event: int) -> D.Event | int:
    return _find(rt.events, event, "event")


def _new_event(rt: Runtime, flag: int) -> tuple[int, int]:
    if flag & ~VALID_EVENT_FLAGS:
        return 0, fail(C.ACL_ERROR_INVALID_PARAM, f"invalid event flag {flag:#x}")
    ctx = _current(rt)
    if isinstance(ctx, int):
        return 0, ctx
    event = D.Event(ctx.device.device_id, flag)
    rt.events[event.handle] = event
    return event.handle, C.ACL_SUCCESS


@needs_init(0)
def create_event(rt: Runtime) -> tuple[int, int]:
    return _new_event(rt, C.ACL_EVENT_SYNC)


@needs_init(0)
def create_event_with_flag(rt: Runtime, flag: int) -> tuple[int, int]:
    return _new_event(rt, flag)


@needs_init(0)
def create_event_ex_with_flag(rt: Runtime, flag: int) -> tuple[int, int]:
    return _new_event(rt, flag)


def _with_event(rt: Runtime, event: int, act: Callable[[D.Event], object]) -> int:
    """``act(event)`` on an existing event; ret."""
    found = _event(rt, event)
    if isinstance(found, int):
        return found
    act(found)
    return C.ACL_SUCCESS


def _with_event_and_stream(
    rt: Runtime, event: int, stream: int, act: Callable[[D.Event, D.Stream], None]
) -> int:
    """``act(event, stream)`` on an existing event and stream (0: the default one); ret."""
    found = _event(rt, event)
    if isinstance(found, int):
        return found
    target = rt.resolve_stream(stream)
    if isinstance(target, int):
        return target
    act(found, target)
    return C.ACL_SUCCESS


@needs_init()
def record_event(rt: Runtime, event: int, stream: int) -> int:
    return _with_event_and_stream(rt, event, stream, D.Event.record)


@needs_init()
def reset_event(rt: Runtime, event: int, stream: int) -> int:
    return _with_event(rt, event, D.Event.reset)


@needs_init()
def destroy_event(rt: Runtime, event: int) -> int:
    return _with_event(rt, event, lambda found: rt.events.pop(found.handle))


def _wait_event(rt: Runtime, event: int, timeout_ms: int) -> int:
    found = _event(rt, event)
    if isinstance(found, int):
        return found
    remaining = found.timestamp - now_ns() if found.recorded else 0
    if remaining > 0:
        if timeout_ms >= 0 and remaining > timeout_ms * 1_000_000:
            time.sleep(timeout_ms / 1000)
            return fail(C.ACL_ERROR_RT_EVENT_SYNC_TIMEOUT, "event synchronize timed out")
        time.sleep(remaining / 1e9)
    return C.ACL_SUCCESS


@needs_init()
def synchronize_event(rt: Runtime, event: int) -> int:
    return _wait_event(rt, event, -1)


@needs_init()
def synchronize_event_with_timeout(rt: Runtime, event: int, timeout: int) -> int:
    if timeout < -1:
        return fail(C.ACL_ERROR_INVALID_PARAM, "timeout must be -1 or >= 0 ms")
    return _wait_event(rt, event, timeout)


@needs_init()
def stream_wait_event(rt: Runtime, stream: int, event: int) -> int:
    return _with_event_and_stream(rt, event, stream, lambda found, target: target.wait_for(found))


@needs_init(C.ACL_EVENT_STATUS_NOT_READY)
def query_event(rt: Runtime, event: int) -> tuple[int, int]:
    found = _event(rt, event)
    if isinstance(found, int):
        return C.ACL_EVENT_STATUS_NOT_READY, found
    done = not found.recorded or now_ns() >= found.timestamp
    return (C.ACL_EVENT_STATUS_COMPLETE if done else C.ACL_EVENT_STATUS_NOT_READY), C.ACL_SUCCESS


@needs_init(C.ACL_EVENT_RECORDED_STATUS_NOT_READY)
def query_event_status(rt: Runtime, event: int) -> tuple[int, int]:
    found = _event(rt, event)
    if isinstance(found, int):
        return C.ACL_EVENT_RECORDED_STATUS_NOT_READY, found
    done = found.recorded and now_ns() >= found.timestamp
    status = C.ACL_EVENT_RECORDED_STATUS_COMPLETE if done else C.ACL_EVENT_RECORDED_STATUS_NOT_READY
    return status, C.ACL_SUCCESS


@needs_init(0.0)
def event_elapsed_time(rt: Runtime, start: int, end: int) -> tuple[float, int]:
    first, last = _event(rt, start), _event(rt, end)
    if isinstance(first, int):
        return 0.0, first
    if isinstance(last, int):
        return 0.0, last
    if not (first.recorded and last.recorded):
        return 0.0, fail(C.ACL_ERROR_RT_PARAM_INVALID, "both events must be recorded")
    return (last.timestamp - first.timestamp) / 1e6, C.ACL_SUCCESS


@needs_init(0)
def event_get_timestamp(rt: Runtime, event: int) -> tuple[int, int]:
    found = _event(rt, event)
    if isinstance(found, int):
        return 0, found
    if not found.recorded:
        return 0, fail(C.ACL_ERROR_RT_PARAM_INVALID, "the event was not recorded")
    return found.timestamp // 1000, C.ACL_SUCCESS


# ---------------------------------------------------------------- memory
def _malloc(rt: Runtime, size: int, policy: int) -> tuple[int, int]:
    if size <= 0:
        return 0, fail(C.ACL_ERROR_INVALID_PARAM, "size must be positive")
    ctx = _current(rt)
    if isinstance(ctx, int):
        return 0, ctx
    allocation = rt.allocate(ctx.device, size)
    if allocation is None:
        device = ctx.device
        return 0, fail(
            C.ACL_ERROR_RT_MEMORY_ALLOCATION,
            f"device {device.device_id}: {size} bytes requested, "
            f"{device.total_bytes - device.used_bytes} free",
        )
    return allocation.address, C.ACL_SUCCESS


@needs_init(0)
def malloc(rt: Runtime, size: int, policy: int) -> tuple[int, int]:
    return _malloc(rt, size, policy)


@needs_init(0)
def malloc_cached(rt: Runtime, size: int, policy: int) -> tuple[int, int]:
    return _malloc(rt, size, policy)


@needs_init(0)
def malloc_align32(rt: Runtime, size: int, policy: int) -> tuple[int, int]:
    return _malloc(rt, size, policy)


@needs_init()
def free(rt: Runtime, dev_ptr: int) -> int:
    if not dev_ptr:
        return fail(C.ACL_ERROR_INVALID_PARAM, "pointer is NULL")
    allocation = rt.allocations.get(dev_ptr)
    if allocation is None:
        return fail(C.ACL_ERROR_RT_PARAM_INVALID, f"{dev_ptr:#x} is not an allocation")
    rt.release(allocation, by_job=True)
    return C.ACL_SUCCESS


@needs_init(0)
def malloc_host(rt: Runtime, size: int) -> tuple[int, int]:
    if size <= 0:
        return 0, fail(C.ACL_ERROR_INVALID_PARAM, "size must be positive")
    buffer = np.empty(size, dtype=np.uint8)
    address = buffer.ctypes.data
    rt.host_allocations[address] = buffer
    return address, C.ACL_SUCCESS


@needs_init()
def free_host(rt: Runtime, host_ptr: int) -> int:
    if rt.host_allocations.pop(host_ptr, None) is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"{host_ptr:#x} is not from malloc_host")
    return C.ACL_SUCCESS


def _memset(rt: Runtime, dev_ptr: int, max_count: int, value: int, count: int) -> int:
    if not dev_ptr or count < 0 or count > max_count:
        return fail(C.ACL_ERROR_INVALID_PARAM, "invalid memset arguments")
    found = rt.find_allocation(dev_ptr, count)
    if found is not None:
        allocation, offset = found
        allocation.buffer[offset : offset + count] = value & 0xFF
        return C.ACL_SUCCESS
    if dev_ptr in rt.host_allocations or any(
        a <= dev_ptr and dev_ptr + count <= a + b.size for a, b in rt.host_allocations.items()
    ):
        H.write_host(dev_ptr, bytes([value & 0xFF]) * count)
        return C.ACL_SUCCESS
    return fail(C.ACL_ERROR_RT_PARAM_INVALID, f"{dev_ptr:#x} is not allocated memory")


@needs_init()
def memset(rt: Runtime, dev_ptr: int, max_count: int, value: int, count: int) -> int:
    return _memset(rt, dev_ptr, max_count, value, count)


@needs_init()
def memset_async(
    rt: Runtime, dev_ptr: int, max_count: int, value: int, count: int, stream: int
) -> int:
    return _memset(rt, dev_ptr, max_count, value, count)


def _memcpy(
    rt: Runtime,
    dst: int,
    dest_max: int,
    src: int,
    count: int,
    kind: int,
    stream: D.Stream | None = None,
) -> int:
    """One copy, its direction taken from the pointers (CANN documents ``kind`` as
    reserved: the runtime looks at the addresses); ``stream`` for the async form."""
    if not dst or not src or count < 0 or count > dest_max:
        return fail(C.ACL_ERROR_INVALID_PARAM, "invalid memcpy arguments (count > dest_max?)")
    if not 0 <= kind < MEMCPY_KINDS:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"unknown memcpy kind {kind}")
    if count == 0:
        return C.ACL_SUCCESS
    dst_dev = rt.locate(dst)
    src_dev = rt.locate(src)
    if (
        stream is not None
        and dst_dev is None
        and src_dev is None
        and rt.config.run_mode == C.ACL_HOST
        and not rt.is_device_address(dst)
        and not rt.is_device_address(src)
    ):
        return fail(C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "memcpy_async does not copy host to host")
    # The common case costs two lookups: both ends inside their allocations, or on the host.
    if (
        (dst_dev[1] + count > dst_dev[0].size if dst_dev else rt.is_device_address(dst))
        or (src_dev[1] + count > src_dev[0].size if src_dev else rt.is_device_address(src))
    ):  # fmt: skip
        fault = _span_fault(rt, "destination", dst, dst_dev, count) or _span_fault(
            rt, "source", src, src_dev, count
        )
        return _report_copy_fault(rt, fault, dst, src, count, kind, stream)
    _copy(rt, dst, dst_dev, src, src_dev, count)
    return C.ACL_SUCCESS


def _span_fault(
    rt: Runtime, what: str, address: int, found: tuple[D.Allocation, int] | None, count: int
) -> str:
    """Why ``count`` bytes at ``address`` cannot be touched by the device ("" when they
    can): an end past its allocation, or a device address that no allocation holds."""
    if found is None:
        if rt.is_device_address(address):
            return f"the {what} {address:#x} is not in any device allocation"
        return ""
    allocation, offset = found
    if offset + count <= allocation.size:
        return ""
    return (
        f"the {what} runs {offset + count - allocation.size} bytes past the end of "
        f"its allocation ({allocation.size} bytes at {allocation.address:#x})"
    )


def _report_copy_fault(
    rt: Runtime,
    reason: str,
    dst: int,
    src: int,
    count: int,
    kind: int,
    stream: D.Stream | None,
) -> int:
    """The copy engine (SDMA) faults, as the device reports it: the plog lines, the
    exception callback, then the error at the copy (sync) or the stream's next
    synchronize (async). Nothing is written."""
    on = stream
    if on is None:
        ctx = rt.current_context()
        if ctx is None:
            return fail(C.ACL_ERROR_RT_CONTEXT_NULL, "no current context")
        on = ctx.default_stream
        assert on is not None
    task_id = on.take_task_id()
    detail = R.log_copy_fault(on, task_id, count, kind, src, dst, reason)
    delivered = rt.raise_exception(
        on, task_id, C.ACL_ERROR_RT_SYS_DMA, detail=detail, arm=stream is not None
    )
    if stream is not None:
        return C.ACL_SUCCESS  # the task was queued: the fault comes at the synchronize
    rt.wait_delivered(delivered)
    return fail(
        C.ACL_ERROR_RT_SYS_DMA, f"Memory copy sync failed, cnt={count}, kind={kind}", detail
    )


def _copy(
    rt: Runtime,
    dst: int,
    dst_dev: tuple[D.Allocation, int] | None,
    src: int,
    src_dev: tuple[D.Allocation, int] | None,
    count: int,
) -> None:
    if src_dev is not None:
        allocation, offset = src_dev
        data = allocation.buffer[offset : offset + count]
    else:
        data = np.frombuffer(H.read_host(src, count), dtype=np.uint8)
    if dst_dev is not None:
        allocation, offset = dst_dev
        allocation.buffer[offset : offset + count] = data
    else:
        H.write_host(dst, data.tobytes())


@needs_init()
def memcpy(rt: Runtime, dst: int, dest_max: int, src: int, count: int, kind: int) -> int:
    return _memcpy(rt, dst, dest_max, src, count, kind)


@needs_init()
def memcpy_async(
    rt: Runtime, dst: int, dest_max: int, src: int, count: int, kind: int, stream: int
) -> int:
    target = rt.resolve_stream(stream)
    if isinstance(target, int):
        return target
    if kind == C.ACL_MEMCPY_HOST_TO_HOST:
        return fail(C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "memcpy_async does not copy host to host")
    return _memcpy(rt, dst, dest_max, src, count, kind, target)


def _memcpy2d(
    rt: Runtime,
    dst: int,
    dpitch: int,
    src: int,
    spitch: int,
    width: int,
    height: int,
    kind: int,
    stream: D.Stream | None = None,
) -> int:
    """A matrix copy: ``height`` rows of ``width`` bytes, rows ``spitch``/``dpitch`` apart.
    Only host-to-device and device-to-host copies exist (CANN's restriction); the
    direction, again, comes from the pointers."""
    if not dst or not src or width <= 0 or height <= 0 or width > dpitch or width > spitch:
        return fail(C.ACL_ERROR_INVALID_PARAM, "invalid memcpy2d arguments (width > pitch?)")
    if not 0 <= kind < MEMCPY_KINDS:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"unknown memcpy kind {kind}")
    span_dst = dpitch * (height - 1) + width
    span_src = spitch * (height - 1) + width
    dst_dev = rt.locate(dst)
    src_dev = rt.locate(src)
    device_dst = dst_dev is not None or rt.is_device_address(dst)
    device_src = src_dev is not None or rt.is_device_address(src)
    if rt.config.run_mode == C.ACL_HOST and device_dst == device_src:
        return fail(
            C.ACL_ERROR_RT_PARAM_INVALID,
            "memcpy2d copies host to device or device to host only",
        )
    fault = _span_fault(rt, "destination", dst, dst_dev, span_dst) or _span_fault(
        rt, "source", src, src_dev, span_src
    )
    if fault:
        return _report_copy_fault(rt, fault, dst, src, width * height, kind, stream)
    for row in range(height):
        d, s = dst + row * dpitch, src + row * spitch
        _copy(rt, d, rt.locate(d), s, rt.locate(s), width)
    return C.ACL_SUCCESS


@needs_init()
def memcpy2d(
    rt: Runtime, dst: int, dpitch: int, src: int, spitch: int, width: int, height: int, kind: int
) -> int:
    return _memcpy2d(rt, dst, dpitch, src, spitch, width, height, kind)


@needs_init()
def memcpy2d_async(
    rt: Runtime,
    dst: int,
    dpitch: int,
    src: int,
    spitch: int,
    width: int,
    height: int,
    kind: int,
    stream: int,
) -> int:
    target = rt.resolve_stream(stream)
    if isinstance(target, int):
        return target
    return _memcpy2d(rt, dst, dpitch, src, spitch, width, height, kind, target)


@needs_init(0, 0)
def get_mem_info(rt: Runtime, attr: int) -> tuple[int, int, int]:
    ctx = _current(rt)
    if isinstance(ctx, int):
        return 0, 0, ctx
    if attr in HBM_ATTRS:
        device = ctx.device
        return device.total_bytes - device.used_bytes, device.total_bytes, C.ACL_SUCCESS
    if attr in DDR_ATTRS:
        return 0, 0, C.ACL_SUCCESS  # 910B-class cards have no DDR next to the HBM
    return 0, 0, fail(C.ACL_ERROR_INVALID_PARAM, f"unknown memory attribute {attr}")


# ---------------------------------------------------------------- host callbacks
@needs_init()
def subscribe_report(rt: Runtime, thread_id: int, stream: int) -> int:
    return _on_stream(rt, stream, lambda target: rt.subscribe_reports(thread_id, target))


@needs_init()
def unsubscribe_report(rt: Runtime, thread_id: int, stream: int) -> int:
    return _on_stream(rt, stream, lambda target: rt.unsubscribe_reports(thread_id, target))


@needs_init()
def launch_callback(
    rt: Runtime, fn: Callable[[Any], Any], user_data: Any, block_type: int, stream: int
) -> int:
    if not callable(fn):
        raise TypeError("acl.rt.launch_callback: fn is not callable")
    if block_type not in (C.ACL_CALLBACK_NO_BLOCK, C.ACL_CALLBACK_BLOCK):
        return fail(C.ACL_ERROR_INVALID_PARAM, f"unknown block type {block_type}")
    target = rt.resolve_stream(stream)
    if isinstance(target, int):
        return target
    with rt.lock:
        if target.report_thread is None:
            return fail(
                C.ACL_ERROR_RT_STREAM_SUBSCRIBE, "call subscribe_report for this stream first"
            )
        callback = D.HostCallback(
            max(now_ns(), target.busy_until), fn, user_data, threading.Event()
        )
        rt.reports.setdefault(target.report_thread, []).append(callback)
        if block_type == C.ACL_CALLBACK_BLOCK:
            target.blocking_callbacks.append(callback.done)
        rt.reports_changed.notify_all()
    return C.ACL_SUCCESS


@needs_init()
def process_report(rt: Runtime, timeout: int) -> int:
    """Run the next due host callback of the streams subscribed to this thread."""
    if timeout < -1:
        return fail(C.ACL_ERROR_INVALID_PARAM, "timeout must be -1 or >= 0 ms")
    me = threading.get_native_id()
    deadline = None if timeout < 0 else time.monotonic() + timeout / 1000
    with rt.lock:
        while True:
            pending = rt.reports.get(me)
            if pending is None:
                return fail(C.ACL_ERROR_RT_THREAD_SUBSCRIBE, "this thread is not subscribed")
            now = now_ns()
            wait_s = None if deadline is None else deadline - time.monotonic()
            if pending and pending[0].ready_ns <= now:
                callback = pending.pop(0)
                break
            if wait_s is not None and wait_s <= 0:
                return fail(C.ACL_ERROR_RT_REPORT_TIMEOUT, "no callback became due in time")
            if pending:  # due once the stream's device time reaches it
                due_s = (pending[0].ready_ns - now) / 1e9
                wait_s = due_s if wait_s is None else min(wait_s, due_s)
            rt.reports_changed.wait(wait_s)
    try:
        callback.fn(callback.args)
    except Exception:
        # pyACL prints the Python error and goes on: the report thread survives and
        # the stream is released as if the callback had returned.
        _report_callback_error(callback)
    finally:
        callback.done.set()
    return C.ACL_SUCCESS


def _report_callback_error(callback: D.HostCallback) -> None:
    name = getattr(callback.fn, "__qualname__", repr(callback.fn))
    error = sys.exc_info()[1]
    print(
        f"acl (sim): the host callback {name} raised; report processing goes on:", file=sys.stderr
    )
    traceback.print_exc()
    slog.WRITER.write(
        slog.LEVEL_ERROR,
        "ASCENDCL",
        "callback.cpp:212",
        "aclrtProcessReport",
        f"host callback {name} raised {type(error).__name__}: {error}",
    )


# ---------------------------------------------------------------- exception info
@needs_init()
def set_exception_info_callback(rt: Runtime, *args: Any) -> int:
    if len(args) > 1:
        raise TypeError("acl.rt.set_exception_info_callback args parse failed")
    callback: Callable[[int], Any] | None = args[0] if args else None
    if callback is not None and not callable(callback):
        raise TypeError("acl.rt.set_exception_info_callback: the callback is not callable")
    rt.exception_callback = callback
    return C.ACL_SUCCESS


def _exception_info_getter(field: str) -> Callable[[int], int]:
    def getter(info: int) -> int:
        rt = R.runtime()
        found = rt.exception_infos.get(info) if rt is not None else None
        return getattr(found, field) if found is not None else C.EXCEPTION_INFO_INVALID

    return named(
        getter,
        f"get_{field}_from_exception_info",
        f"The {field} of the failed task an exception info describes; 0xFFFFFFFF "
        "(what the C getters return for a NULL info) for an unknown handle.",
    )


(
    get_device_id_from_exception_info,
    get_stream_id_from_exception_info,
    get_task_id_from_exception_info,
    get_thread_id_from_exception_info,
    get_error_code_from_exception_info,
) = map(_exception_info_getter, ("device_id", "stream_id", "task_id", "thread_id", "error_code"))
