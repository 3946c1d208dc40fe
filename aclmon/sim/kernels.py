"""numpy kernels of the simulated AI Core, computed in the operators' declared dtypes.

A kernel takes logical arrays (NCHW / ND; the executor converts device layouts
on the way in and out) and the operator's attributes, and returns the logical
outputs. Like the hardware, vector units compute in the tensor's own dtype
(float16 adds overflow to inf in float16) while the cube unit (MatMul, Conv2D)
accumulates in float32 and casts the result to the output dtype.

:func:`overflow_status` turns what a kernel produced into the AI Core status
bits of an Opdebug record (dump_formats.md §2.3).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from aclmon.sim import aipp

Attrs = dict[str, Any]
Kernel = Callable[[list[np.ndarray], Attrs, list[np.dtype]], list[np.ndarray]]

#: operators that run on the cube unit (matrix engine); the rest are vector ops.
CUBE_OPS = frozenset({"MatMul", "BatchMatMul", "Conv2D"})

STATUS_INT_OVERFLOW = 0x010
STATUS_FLOAT_OVERFLOW = 0x020
STATUS_CONVERT_TO_FP16_OVERFLOW = 0x100
STATUS_CUBE_OVERFLOW = 0x400


class KernelError(ValueError):
    """An operator got inputs or attributes it cannot work with."""


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Kernel:
    def kernel(inputs: list[np.ndarray], attrs: Attrs, out: list[np.dtype]) -> list[np.ndarray]:
        if len(inputs) != 2:
            raise KernelError("needs 2 inputs")
        a, b = inputs
        with np.errstate(all="ignore"):
            return [fn(a.astype(out[0], copy=False), b.astype(out[0], copy=False))]

    return kernel


def _relu(inputs: list[np.ndarray], attrs: Attrs, out: list[np.dtype]) -> list[np.ndarray]:
    (x,) = inputs
    return [np.maximum(x, np.zeros((), dtype=x.dtype)).astype(out[0], copy=False)]


def _cast(inputs: list[np.ndarray], attrs: Attrs, out: list[np.dtype]) -> list[np.ndarray]:
    (x,) = inputs
    with np.errstate(all="ignore"):
        return [x.astype(out[0])]


def _identity(inputs: list[np.ndarray], attrs: Attrs, out: list[np.dtype]) -> list[np.ndarray]:
    # TransData: the value is unchanged, only the stored layout differs (the
    # executor lays the output out in its declared format).
    (x,) = inputs
    return [x.astype(out[0], copy=False)]


def _softmax(inputs: list[np.ndarray], attrs: Attrs, out: list[np.dtype]) -> list[np.ndarray]:
    (x,) = inputs
    axis = int(attrs.get("axis", -1))
    with np.errstate(all="ignore"):
        wide = x.astype(np.float32)
        shifted = np.exp(wide - wide.max(axis=axis, keepdims=True))
        return [(shifted / shifted.sum(axis=axis, keepdims=True)).astype(out[0])]


def _matmul(inputs: list[np.ndarray], attrs: Attrs, out: list[np.dtype]) -> list[np.ndarray]:
    if len(inputs) not in (2, 3):
        raise KernelError("needs 2 inputs (+ optional bias)")
    a = inputs[0].astype(np.float32)
    b = inputs[1].astype(np.float32)
    if attrs.get("transpose_x1") or attrs.get("adj_x1"):
        a = np.swapaxes(a, -1, -2)
    if attrs.get("transpose_x2") or attrs.get("adj_x2"):
        b = np.swapaxes(b, -1, -2)
    if a.shape[-1] != b.shape[-2]:
        raise KernelError(f"MatMul shapes {a.shape} and {b.shape} do not match")
    with np.errstate(all="ignore"):
        acc = a @ b
        if len(inputs) == 3:
            acc = acc + inputs[2].astype(np.float32)
        return [acc.astype(out[0])]


def _conv2d(inputs: list[np.ndarray], attrs: Attrs, out: list[np.dtype]) -> list[np.ndarray]:
    """NCHW x OIHW convolution (groups = 1) as one im2col matmul on the cube."""
    if len(inputs) not in (2, 3):
        raise KernelError("needs input and filter (+ optional bias)")
    x = inputs[0].astype(np.float32)
    w = inputs[1].astype(np.float32)
    stride_h, stride_w = attrs.get("strides", (1, 1))
    pad_top, pad_bottom, pad_left, pad_right = attrs.get("pads", (0, 0, 0, 0))
    _n, c, _h, _wid = x.shape
    o, ci, kh, kw = w.shape
    if ci != c:
        raise KernelError(f"Conv2D filter has {ci} input channels, input has {c}")
    x = np.pad(x, ((0, 0), (0, 0), (pad_top, pad_bottom), (pad_left, pad_right)))
    out_h = (x.shape[2] - kh) // stride_h + 1
    out_w = (x.shape[3] - kw) // stride_w + 1
    if out_h <= 0 or out_w <= 0:
        raise KernelError("Conv2D filter is larger than the padded input")
    windows = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))
    windows = windows[:, :, ::stride_h, ::stride_w][:, :, :out_h, :out_w]
    with np.errstate(all="ignore"):
        acc = np.einsum("nchwij,ocij->nohw", windows, w, optimize=True)
        if len(inputs) == 3:
            acc = acc + inputs[2].astype(np.float32).reshape(1, o, 1, 1)
        return [acc.astype(out[0])]


def _reduce_mean(inputs: list[np.ndarray], attrs: Attrs, out: list[np.dtype]) -> list[np.ndarray]:
    x = inputs[0]
    axes = tuple(_axes(inputs, attrs, "axes", 1, (-1,)))
    keep = bool(attrs.get("keep_dims", False))
    with np.errstate(all="ignore"):
        return [x.astype(np.float32).mean(axis=axes, keepdims=keep).astype(out[0])]


def _axes(inputs: list[np.ndarray], attrs: Attrs, name: str, index: int, default: Any) -> Any:
    """An operator parameter given as an attribute or, as CANN's single operators take
    it, as a constant input tensor."""
    if name in attrs:
        return attrs[name]
    if len(inputs) > index:
        return [int(v) for v in np.asarray(inputs[index]).ravel()]
    return default


def _reduce_sum(inputs: list[np.ndarray], attrs: Attrs, out: list[np.dtype]) -> list[np.ndarray]:
    axes = tuple(_axes(inputs, attrs, "axes", 1, (-1,)))
    keep = bool(attrs.get("keep_dims", False))
    with np.errstate(all="ignore"):
        return [inputs[0].astype(np.float32).sum(axis=axes, keepdims=keep).astype(out[0])]


def _gelu(inputs: list[np.ndarray], attrs: Attrs, out: list[np.dtype]) -> list[np.ndarray]:
    x = inputs[0].astype(np.float32)
    with np.errstate(all="ignore"):  # the tanh form, as the vector unit computes it
        inner = np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)
        return [(0.5 * x * (1.0 + np.tanh(inner))).astype(out[0])]


def _transpose(inputs: list[np.ndarray], attrs: Attrs, out: list[np.dtype]) -> list[np.ndarray]:
    perm = _axes(inputs, attrs, "perm", 1, None)
    return [np.transpose(inputs[0], perm).astype(out[0], copy=False)]


def _slice(inputs: list[np.ndarray], attrs: Attrs, out: list[np.dtype]) -> list[np.ndarray]:
    x = inputs[0]
    offsets = _axes(inputs, attrs, "offsets", 1, [0] * x.ndim)
    size = _axes(inputs, attrs, "size", 2, [-1] * x.ndim)
    index = tuple(slice(o, None if n == -1 else o + n) for o, n in zip(offsets, size, strict=True))
    return [x[index].astype(out[0], copy=False)]


def _strided_slice(inputs: list[np.ndarray], attrs: Attrs, out: list[np.dtype]) -> list[np.ndarray]:
    x = inputs[0]
    begin = _axes(inputs, attrs, "begin", 1, [0] * x.ndim)
    end = _axes(inputs, attrs, "end", 2, list(x.shape))
    strides = _axes(inputs, attrs, "strides", 3, [1] * len(begin))
    index = tuple(slice(b, e, st) for b, e, st in zip(begin, end, strides, strict=True))
    return [x[index].astype(out[0], copy=False)]


def _concat(inputs: list[np.ndarray], attrs: Attrs, out: list[np.dtype]) -> list[np.ndarray]:
    axis = int(attrs.get("concat_dim", attrs.get("axis")) or 0)
    return [np.concatenate(inputs, axis=axis).astype(out[0], copy=False)]


def _reshape(inputs: list[np.ndarray], attrs: Attrs, out: list[np.dtype]) -> list[np.ndarray]:
    x = inputs[0]
    return [x.reshape(tuple(attrs["shape"])).astype(out[0], copy=False)]


KERNELS: dict[str, Kernel] = {
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Mul": _binary(np.multiply),
    "Div": _binary(np.divide),
    "RealDiv": _binary(np.divide),
    "Relu": _relu,
    "Gelu": _gelu,
    "Transpose": _transpose,
    "TransposeD": _transpose,
    "Slice": _slice,
    "SliceD": _slice,
    "StridedSlice": _strided_slice,
    "StridedSliceD": _strided_slice,
    "ReduceSum": _reduce_sum,
    "ReduceSumD": _reduce_sum,
    "ReduceMeanD": _reduce_mean,
    "Concat": _concat,
    "ConcatD": _concat,
    "ConcatV2": _concat,
    "ConcatV2D": _concat,
    "Cast": _cast,
    "Softmax": _softmax,
    "MatMul": _matmul,
    "BatchMatMul": _matmul,
    "Conv2D": _conv2d,
    "ReduceMean": _reduce_mean,
    "Reshape": _reshape,
    "TransData": _identity,
    "Aipp": lambda inputs, attrs, out: [aipp.run(inputs[0], attrs, out[0])],
    "Identity": _identity,
}


def overflow_status(op_type: str, inputs: list[np.ndarray], outputs: list[np.ndarray]) -> int:
    """AI Core status bits for what this kernel produced (0 = no overflow).

    Only a non-finite float16/bfloat16 (or wrapped integer) result computed from
    finite inputs counts: an inf that came in is not this operator's overflow.
    """
    status = 0
    for out in outputs:
        kind = out.dtype.kind
        if out.dtype.itemsize > 2 or kind not in "fV":
            if kind in "iu" and op_type in ("Add", "Sub", "Mul") and len(inputs) == 2:
                wide = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}[op_type](
                    inputs[0].astype(np.float64), inputs[1].astype(np.float64)
                )
                if not np.array_equal(wide, out.astype(np.float64)):
                    status |= STATUS_INT_OVERFLOW
            continue
        if np.isfinite(out.astype(np.float32)).all():
            continue
        if not all(np.isfinite(x.astype(np.float32)).all() for x in inputs if x.dtype.kind in "fV"):
            continue
        if op_type in CUBE_OPS:
            status |= STATUS_CUBE_OVERFLOW
        elif op_type == "Cast":
            status |= STATUS_CONVERT_TO_FP16_OVERFLOW
        else:
            status |= STATUS_FLOAT_OVERFLOW
    return status
