"""The simulated hardware and the objects the runtime hands out for it.

Devices (memory accounting, utilization), contexts, streams, events, device
allocations, host-callback tasks and exception infos, named by plain ``int``
handles that look like the pointer values pyACL returns, and the clock they
all run on: device time is host monotonic time, shown as epoch nanoseconds.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aclmon.sim.config import SimConfig
from aclmon.sim.driver import driver_reserved_bytes

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


# ---------------------------------------------------------------- objects
@dataclass(eq=False)
class Handled:
    """A runtime object named by a fresh handle (``new_handle``) from the moment it is made."""

    handle: int = field(default_factory=new_handle, kw_only=True)


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
class Stream(Handled):
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

    def wait_for(self, event: Event) -> None:
        """Later work on the stream starts after ``event`` (no wait if it was never recorded)."""
        if event.recorded:
            self.busy_until = max(self.busy_until, event.timestamp)


@dataclass(eq=False)
class Context(Handled):
    device: Device
    is_default: bool
    default_stream: Stream | None = None
    streams: dict[int, Stream] = field(default_factory=dict)


@dataclass(eq=False)
class Event(Handled):
    device_id: int
    flag: int
    timestamp: int = 0
    recorded: bool = False

    def record(self, stream: Stream) -> None:
        """Recorded when ``stream`` gets there: after the work already queued on it."""
        self.timestamp = max(now_ns(), stream.busy_until)
        self.recorded = True

    def reset(self) -> None:
        self.recorded = False


UTIL_BUCKET_NS = 100_000_000
UTIL_BUCKETS = 10


class Device:
    """One simulated NPU: refcount, default context, memory, utilization."""

    ADDRESS_SHIFT = 44
    ADDRESS_SPACING = 1 << ADDRESS_SHIFT
    ADDRESS_BASE = 0x12C0_0000_0000

    def __init__(self, device_id: int, config: SimConfig) -> None:
        self.device_id = device_id
        self.refcount = 0
        self.default_context: Context | None = None
        self.total_bytes = config.hbm_bytes
        self.reserved_bytes = driver_reserved_bytes(config.hbm_bytes)
        self.used_bytes = self.reserved_bytes
        self._next_address = self.ADDRESS_BASE + device_id * self.ADDRESS_SPACING
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
        cube, vector, aicpu = (min(100, round(100 * t / window)) for t in totals)
        return cube, vector, aicpu


#: the busy counter (Device.add_busy) a task's time goes to.
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
class ExceptionInfo(Handled):
    device_id: int
    stream_id: int
    task_id: int
    thread_id: int
    error_code: int
