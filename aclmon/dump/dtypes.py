"""Proto ``OutputDataType`` -> numpy, and tensor bytes -> typed arrays.

Zero-copy wherever numpy has the type (a view of the mapped bytes). Packed
sub-byte types are unpacked into a new array (bounded by 8x the bytes present).
A type we cannot decode for certain is returned as raw ``uint8`` with a label,
never guessed.

``ml_dtypes`` (bfloat16, float8, int4) takes longer to import than numpy
itself, so it is imported only when a tensor of one of its types is met:
``aclmon decode`` of a float32 dump never loads it.
"""

from __future__ import annotations

import importlib
import math
from functools import cache
from typing import NamedTuple

import numpy as np

from aclmon.dump import proto_enums as pe

#: one element per ``itemsize`` bytes, readable as a view.
VIEW_DTYPES: dict[int, np.dtype] = {
    pe.DT_FLOAT: np.dtype("<f4"),
    pe.DT_FLOAT16: np.dtype("<f2"),
    pe.DT_DOUBLE: np.dtype("<f8"),
    pe.DT_INT8: np.dtype("i1"),
    pe.DT_UINT8: np.dtype("u1"),
    pe.DT_INT16: np.dtype("<i2"),
    pe.DT_UINT16: np.dtype("<u2"),
    pe.DT_INT32: np.dtype("<i4"),
    pe.DT_UINT32: np.dtype("<u4"),
    pe.DT_INT64: np.dtype("<i8"),
    pe.DT_UINT64: np.dtype("<u8"),
    pe.DT_BOOL: np.dtype("?"),
    pe.DT_COMPLEX64: np.dtype("<c8"),
    pe.DT_COMPLEX128: np.dtype("<c16"),
    pe.DT_RESOURCE: np.dtype("<i8"),
}

#: viewable too, through ml_dtypes (imported on first use): proto type -> ml_dtypes name.
ML_VIEW_DTYPES: dict[int, str] = {
    pe.DT_BF16: "bfloat16",
    pe.DT_FLOAT8_E5M2: "float8_e5m2",
    pe.DT_FLOAT8_E4M3FN: "float8_e4m3fn",
    pe.DT_FLOAT8_E8M0: "float8_e8m0fnu",
}

#: ml_dtypes types msaccucmp writes as float32 (and that ``np.save`` cannot name).
HOST_CAST_FLOAT32 = set(ML_VIEW_DTYPES)


#: decoded into a new array (sub-byte packings) rather than viewed.
UNPACKED_DTYPES = {pe.DT_UINT1, pe.DT_INT4}


@cache
def ml_dtype(name: str) -> np.dtype:
    """``np.dtype(ml_dtypes.<name>)``, importing ml_dtypes the first time one is needed."""
    dtype: np.dtype = np.dtype(getattr(importlib.import_module("ml_dtypes"), name))
    return dtype


def view_dtype(data_type: int) -> np.dtype | None:
    """The dtype a tensor of ``data_type`` is viewed as (``None``: not viewable)."""
    dtype = VIEW_DTYPES.get(data_type)
    if dtype is None and data_type in ML_VIEW_DTYPES:
        return ml_dtype(ML_VIEW_DTYPES[data_type])
    return dtype


def is_decodable(data_type: int) -> bool:
    return (
        data_type in VIEW_DTYPES
        or data_type in ML_VIEW_DTYPES
        or data_type in UNPACKED_DTYPES
        or data_type == pe.DT_UNDEFINED
    )


class Decoded(NamedTuple):
    array: np.ndarray
    supported: bool
    label: str  # dtype name, or why the bytes are shown raw


def element_count(shape: tuple[int, ...]) -> int:
    return math.prod(shape) if shape else 1


def effective_shape(data_type: int, shape: tuple[int, ...], nbytes: int) -> tuple[int, ...]:
    """The shape the bytes are read as.

    An empty shape is a scalar when the bytes hold exactly one element, otherwise
    a flat vector of everything present (msaccucmp reads ``[size]``).
    DT_UNDEFINED is always bytes of ``[size]`` (as in msaccucmp).
    """
    if data_type == pe.DT_UNDEFINED:
        return (nbytes,)
    if shape:
        return shape
    if data_type in _PER_BYTE:
        return (nbytes * _PER_BYTE[data_type],)
    dtype = view_dtype(data_type)
    if dtype is None:
        return (nbytes,)
    return () if nbytes == dtype.itemsize else (nbytes // dtype.itemsize,)


_MAX_ELEMENTS = 1 << 58
#: elements packed in one byte by the sub-byte types.
_PER_BYTE = {pe.DT_INT4: 2, pe.DT_UINT1: 8}


class TensorBytesError(ValueError):
    """Raised when a tensor's bytes cannot hold its shape (caller adds file/offset)."""


def decode_bytes(raw: np.ndarray, data_type: int, shape: tuple[int, ...]) -> Decoded:
    """Interpret ``raw`` (a 1-D uint8 array) as ``data_type`` with ``shape``.

    Only the first ``prod(shape) * itemsize`` bytes are used (as msaccucmp does).
    Raises :class:`TensorBytesError` if there are fewer bytes than that.
    """
    nbytes = int(raw.shape[0])
    name = pe.dtype_name(data_type)
    shape = effective_shape(data_type, shape, nbytes)
    # numpy refuses shapes whose non-zero dims (times the item size) pass intp, even when
    # another dim is 0; no real tensor comes near this bound
    if math.prod(d for d in shape if d) > _MAX_ELEMENTS:
        raise TensorBytesError(f"shape {list(shape)} is too large for numpy to index")
    count = element_count(shape)
    if data_type == pe.DT_UNDEFINED:
        return Decoded(raw.view(np.int8), True, name)
    dtype = view_dtype(data_type)
    if dtype is not None:
        needed = count * dtype.itemsize
        _check(needed, nbytes, count, name)
        return Decoded(raw[:needed].view(dtype).reshape(shape), True, name)
    if data_type == pe.DT_UINT1:
        needed = (count + 7) // 8
        _check(needed, nbytes, count, name)
        bits = np.unpackbits(raw[:needed])[:count]
        return Decoded(bits.reshape(shape), True, name)
    if data_type == pe.DT_INT4:
        needed = (count + 1) // 2
        _check(needed, nbytes, count, name)
        return Decoded(unpack_int4(raw[:needed], count).reshape(shape), True, name)
    return Decoded(raw, False, f"raw bytes ({name} is not decoded)")


def unpack_int4(packed: np.ndarray, count: int) -> np.ndarray:
    """Two signed 4-bit values per byte, the low nibble first."""
    low = (packed & 0x0F).astype(np.int8)
    high = (packed >> 4).astype(np.int8)
    both = np.empty(packed.shape[0] * 2, dtype=np.int8)
    both[0::2] = low
    both[1::2] = high
    both = np.where(both > 7, both - 16, both).astype(np.int8)
    return both[:count].astype(ml_dtype("int4"))


def _check(needed: int, nbytes: int, count: int, name: str) -> None:
    if needed > nbytes:
        raise TensorBytesError(
            f"{name} tensor of {count} elements needs {needed} bytes, only {nbytes} present"
        )


def to_host_array(array: np.ndarray, data_type: int) -> np.ndarray:
    """What msaccucmp writes: ml_dtypes floats become float32, int4 becomes int8."""
    if data_type in HOST_CAST_FLOAT32:
        return array.astype(np.float32)
    if data_type == pe.DT_INT4:
        return array.astype(np.int8)
    return array
