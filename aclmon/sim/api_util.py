"""``acl.util.*``: threads and real host pointers, as the documented samples use them.

Host pointers in pyACL are real addresses in the process, so these helpers
work on real memory (ctypes / numpy), exactly like the C extension.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from aclmon import acl_constants as C
from aclmon.sim.errmsg import fail

_threads: dict[int, threading.Thread] = {}
_threads_lock = threading.Lock()

#: numpy type number (NPY_BYTE = 1, NPY_FLOAT = 11, ...) -> dtype, as ptr_to_numpy takes.
_DTYPE_BY_NUM: dict[int, np.dtype] = {}
for _type in set(np.sctypeDict.values()):
    try:
        _dtype = np.dtype(_type)
    except TypeError:
        continue
    _DTYPE_BY_NUM.setdefault(_dtype.num, _dtype)


def start_thread(fn: Callable[[Any], Any], args: Any) -> tuple[int, int]:
    if not callable(fn):
        raise TypeError("acl.util.start_thread: fn is not callable")
    ready = threading.Event()
    ident: list[int] = []

    def run() -> None:
        ident.append(threading.get_native_id())
        ready.set()
        fn(args)

    thread = threading.Thread(target=run, name="acl-util-thread", daemon=True)
    thread.start()
    ready.wait()
    with _threads_lock:
        _threads[ident[0]] = thread
    return ident[0], C.ACL_SUCCESS


def stop_thread(thread_id: int) -> int:
    with _threads_lock:
        thread = _threads.pop(thread_id, None)
    if thread is None:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"no thread {thread_id} from start_thread")
    if thread is not threading.current_thread():
        thread.join()
    return C.ACL_SUCCESS


def bytes_to_ptr(data: bytes) -> int:
    if not isinstance(data, bytes):
        raise TypeError("acl.util.bytes_to_ptr: data must be bytes")
    # c_char_p points at the bytes object's own buffer (no copy); the caller
    # keeps ``data`` alive, as with the C extension.
    return ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0


def ptr_to_bytes(ptr: int, size: int) -> bytes:
    if not ptr or size < 0:
        raise ValueError("acl.util.ptr_to_bytes: invalid pointer or size")
    return ctypes.string_at(ptr, size)


def numpy_to_ptr(array: np.ndarray) -> int:
    if not isinstance(array, np.ndarray):
        raise TypeError("acl.util.numpy_to_ptr: expects a numpy array")
    if not array.flags["C_CONTIGUOUS"]:
        print(
            "Warning:The input ndarray is discontiguous. "
            "Please use acl.util.numpy_contiguous_to_ptr instead.",
            file=sys.stderr,
        )
    return int(array.ctypes.data)


def numpy_contiguous_to_ptr(array: np.ndarray) -> tuple[int, np.ndarray]:
    """``(ptr, data_out)``: the address of a C-contiguous copy when ``array`` is not one.

    The caller keeps ``data_out`` alive while the pointer is in use.
    """
    if not isinstance(array, np.ndarray):
        raise TypeError("acl.util.numpy_contiguous_to_ptr: expects a numpy array")
    contiguous = np.ascontiguousarray(array)
    return int(contiguous.ctypes.data), contiguous


def ptr_to_numpy(ptr: int, shape: tuple[int, ...], np_type: int) -> np.ndarray:
    dtype = _DTYPE_BY_NUM.get(np_type)
    if dtype is None or not ptr:
        raise ValueError("acl.util.ptr_to_numpy: invalid pointer or numpy type number")
    shape = tuple(shape)
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    raw = (ctypes.c_byte * (count * dtype.itemsize)).from_address(ptr)
    return np.frombuffer(memoryview(raw), dtype=dtype, count=count).reshape(shape)
