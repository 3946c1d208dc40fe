"""Host memory and the host-side structures pyACL hands out.

Host pointers are real pointers. Data buffers, datasets and descriptors are
host structures: they exist with or without acl.init, like the C structs pyACL
hands out.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from aclmon import acl_constants as C
from aclmon.sim.devices import new_handle
from aclmon.sim.errmsg import fail

V = TypeVar("V")


def read_host(address: int, count: int) -> bytes:
    """Bytes at a real host address (pyACL host pointers are real pointers)."""
    return ctypes.string_at(address, count)


def write_host(address: int, data: bytes | np.ndarray) -> None:
    raw = data if isinstance(data, bytes) else np.ascontiguousarray(data).tobytes()
    ctypes.memmove(address, raw, len(raw))


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


def register(registry: dict[int, V], value: V) -> int:
    """A new handle for a host structure, kept in ``registry`` until it is destroyed."""
    handle = new_handle()
    registry[handle] = value
    return handle


def unregister(registry: dict[int, Any], handle: int, what: str) -> int:
    """Destroy a host structure: ACL_SUCCESS, or ACL_ERROR_INVALID_PARAM for an unknown handle."""
    if handle not in registry:
        return fail(C.ACL_ERROR_INVALID_PARAM, f"unknown {what}")
    del registry[handle]
    return C.ACL_SUCCESS
