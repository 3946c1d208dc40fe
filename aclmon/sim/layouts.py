"""Data types and device memory layouts of the simulated NPU.

Activations live in the layouts the hardware uses: convolution activations in
NC1HWC0 (channels split into C1 blocks of C0 lanes, zero padded) and matmul
operands in FRACTAL_NZ (the last two axes cut into 16 x C0 fractals, the column
blocks outermost). The shapes follow the msaccucmp conversion table in
docs/reference/dump_formats.md §3, so a reader that converts back with that
table recovers the logical tensor.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from aclmon import acl_constants as C

#: aclDataType -> numpy dtype for the dtypes the simulated kernels produce or accept.
ACL_TO_NUMPY: dict[int, np.dtype] = {
    C.ACL_FLOAT: np.dtype(np.float32),
    C.ACL_FLOAT16: np.dtype(np.float16),
    C.ACL_BF16: np.dtype(ml_dtypes.bfloat16),
    C.ACL_DOUBLE: np.dtype(np.float64),
    C.ACL_INT8: np.dtype(np.int8),
    C.ACL_UINT8: np.dtype(np.uint8),
    C.ACL_INT16: np.dtype(np.int16),
    C.ACL_UINT16: np.dtype(np.uint16),
    C.ACL_INT32: np.dtype(np.int32),
    C.ACL_UINT32: np.dtype(np.uint32),
    C.ACL_INT64: np.dtype(np.int64),
    C.ACL_UINT64: np.dtype(np.uint64),
    C.ACL_BOOL: np.dtype(np.bool_),
}

#: model-description dtype names -> aclDataType.
DTYPE_BY_NAME: dict[str, int] = {
    C.DATA_TYPE_NAMES[code].removeprefix("ACL_").lower(): code for code in ACL_TO_NUMPY
} | {"float32": C.ACL_FLOAT, "float64": C.ACL_DOUBLE, "bfloat16": C.ACL_BF16}

#: model-description format names -> aclFormat (the formats the sim keeps tensors in).
FORMAT_BY_NAME: dict[str, int] = {
    "ND": C.ACL_FORMAT_ND,
    "NCHW": C.ACL_FORMAT_NCHW,
    "NHWC": C.ACL_FORMAT_NHWC,
    "NC": C.ACL_FORMAT_NC,
    "NC1HWC0": C.ACL_FORMAT_NC1HWC0,
    "FRACTAL_NZ": C.ACL_FORMAT_FRACTAL_NZ,
}

FRACTAL_ROWS = 16


def c0_for(acl_dtype: int) -> int:
    """Lanes per C0 block: 32 bytes' worth for 1-byte types, otherwise 16."""
    return 32 if ACL_TO_NUMPY[acl_dtype].itemsize == 1 else 16


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def device_shape(logical: tuple[int, ...], fmt: int, acl_dtype: int) -> tuple[int, ...]:
    """The stored (device) shape of a tensor with this logical shape and format."""
    if fmt == C.ACL_FORMAT_NC1HWC0:
        if len(logical) != 4:
            raise ValueError(f"NC1HWC0 needs a 4-D NCHW shape, got {logical}")
        n, c, h, w = logical
        c0 = c0_for(acl_dtype)
        return (n, _ceil_div(c, c0), h, w, c0)
    if fmt == C.ACL_FORMAT_FRACTAL_NZ:
        if len(logical) < 2:
            raise ValueError(f"FRACTAL_NZ needs at least 2 dimensions, got {logical}")
        *batch, m, n = logical
        c0 = c0_for(acl_dtype)
        return (*batch, _ceil_div(n, c0), _ceil_div(m, FRACTAL_ROWS), FRACTAL_ROWS, c0)
    return tuple(logical)


def to_device(array: np.ndarray, fmt: int, acl_dtype: int) -> np.ndarray:
    """Lay a logical array out in device format (a new C-contiguous array)."""
    if fmt == C.ACL_FORMAT_NC1HWC0:
        n, c, h, w = array.shape
        c0 = c0_for(acl_dtype)
        c1 = _ceil_div(c, c0)
        padded = np.zeros((n, c1 * c0, h, w), dtype=array.dtype)
        padded[:, :c] = array
        return np.ascontiguousarray(padded.reshape(n, c1, c0, h, w).transpose(0, 1, 3, 4, 2))
    if fmt == C.ACL_FORMAT_FRACTAL_NZ:
        *batch, m, n = array.shape
        c0 = c0_for(acl_dtype)
        c1 = _ceil_div(n, c0)
        no = _ceil_div(m, FRACTAL_ROWS)
        b = int(np.prod(batch)) if batch else 1
        padded = np.zeros((b, no * FRACTAL_ROWS, c1 * c0), dtype=array.dtype)
        padded[:, :m, :n] = array.reshape(b, m, n)
        nz = padded.reshape(b, no, FRACTAL_ROWS, c1, c0).transpose(0, 3, 1, 2, 4)
        return np.ascontiguousarray(nz.reshape(*batch, c1, no, FRACTAL_ROWS, c0))
    return np.ascontiguousarray(array)


def from_device(stored: np.ndarray, fmt: int, logical: tuple[int, ...]) -> np.ndarray:
    """Recover the logical array from its device layout (padding dropped)."""
    if fmt == C.ACL_FORMAT_NC1HWC0:
        n, c1, h, w, c0 = stored.shape
        full = stored.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)
        return full[:, : logical[1]]
    if fmt == C.ACL_FORMAT_FRACTAL_NZ:
        *batch, c1, no, ni, c0 = stored.shape
        b = int(np.prod(batch)) if batch else 1
        full = stored.reshape(b, c1, no, ni, c0).transpose(0, 2, 3, 1, 4)
        full = full.reshape(b, no * ni, c1 * c0)
        m, n = logical[-2], logical[-1]
        return full[:, :m, :n].reshape(logical)
    return stored.reshape(logical)
