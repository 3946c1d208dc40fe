"""Device formats -> host layout, cropped to the original (or a given) shape.

Each conversion reshapes the device buffer, transposes it and merges the
padded axes, exactly as msaccucmp's built-in converters (and MindSpore's
``trans.cc`` for C1HWNCoC0 and NC1HWC0_C04), then slices away the C0/N padding.
4-D device formats go through padded NCHW and are then transposed to the
requested host layout (NCHW, NHWC or HWCN); the target shape is given in that
layout, as msaccucmp expects. Results keep the tensor's dtype.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from aclmon.dump import proto_enums as pe
from aclmon.errors import AclmonError

#: source format -> the formats it converts to; the first is its default host format.
CONVERSIONS: dict[int, tuple[int, ...]] = {
    pe.FORMAT_NC1HWC0: (pe.FORMAT_NCHW, pe.FORMAT_NHWC, pe.FORMAT_HWCN),
    pe.FORMAT_NC1HWC0_C04: (pe.FORMAT_NCHW, pe.FORMAT_NHWC, pe.FORMAT_HWCN),
    pe.FORMAT_FRACTAL_Z: (pe.FORMAT_NCHW, pe.FORMAT_HWCN),
    pe.FORMAT_C1HWNCoC0: (pe.FORMAT_NCHW,),
    pe.FORMAT_NDC1HWC0: (pe.FORMAT_NCDHW, pe.FORMAT_ND),
    # msaccucmp's FRACTAL_NZ -> NCHW/NHWC use the very same arithmetic as -> ND
    pe.FORMAT_FRACTAL_NZ: (pe.FORMAT_ND, pe.FORMAT_NCHW, pe.FORMAT_NHWC),
    # host layouts: plain transposes (msaccucmp's NCHW/NHWC/HWCN built-ins)
    pe.FORMAT_NCHW: (pe.FORMAT_NHWC,),
    pe.FORMAT_NHWC: (pe.FORMAT_NCHW, pe.FORMAT_HWCN),
    pe.FORMAT_HWCN: (pe.FORMAT_NCHW, pe.FORMAT_NHWC),
}

#: axis order of each 4-D host layout, taken from NCHW: ``layout = nchw.transpose(p)``.
_FROM_NCHW: dict[int, tuple[int, int, int, int]] = {
    pe.FORMAT_NCHW: (0, 1, 2, 3),
    pe.FORMAT_NHWC: (0, 2, 3, 1),
    pe.FORMAT_HWCN: (2, 3, 1, 0),
}
_DEVICE_4D = (pe.FORMAT_NC1HWC0, pe.FORMAT_NC1HWC0_C04, pe.FORMAT_FRACTAL_Z, pe.FORMAT_C1HWNCoC0)


class FormatError(AclmonError):
    """A tensor cannot be converted as asked (shapes do not fit)."""


def host_format(src_format: int) -> int | None:
    """The default host format a device format converts to (``None``: no conversion)."""
    targets = CONVERSIONS.get(src_format)
    return targets[0] if targets else None


def can_convert(src_format: int, dst_format: int) -> bool:
    return dst_format in CONVERSIONS.get(src_format, ())


def _to_nchw_order(shape: tuple[int, ...], layout: int) -> tuple[int, ...]:
    perm = _FROM_NCHW[layout]
    nchw = [0, 0, 0, 0]
    for axis, source in enumerate(perm):
        nchw[source] = shape[axis]
    return tuple(nchw)


def convert_to_host(
    array: np.ndarray,
    src_format: int,
    target_shape: Sequence[int] | None,
    dst_format: int | None = None,
) -> np.ndarray:
    """Convert ``array`` (device layout, header shape) to ``dst_format`` (default: its host format).

    ``target_shape`` is the original shape (or the user's ``-s``) in the
    destination layout; FRACTAL_Z and FRACTAL_NZ need it, the 5-D/6-D formats
    use it to crop C (and N). Raises :class:`FormatError` if the shapes do not fit.
    """
    target = tuple(int(d) for d in target_shape) if target_shape else None
    dst = host_format(src_format) if dst_format is None else dst_format
    if dst is None or not can_convert(src_format, dst):
        raise FormatError(
            f"no conversion from {pe.format_name(src_format)}"
            + (f" to {pe.format_name(dst)}" if dst is not None else "")
        )
    name = f"{pe.format_name(src_format)} -> {pe.format_name(dst)}"
    try:
        if src_format in _DEVICE_4D:
            if target is not None and len(target) != 4:
                raise FormatError(f"{name}: target shape {list(target)} is not 4-D")
            target_nchw = _to_nchw_order(target, dst) if target is not None else None
            nchw = _device_to_padded_nchw(array, src_format, target_nchw)
            return _crop(nchw.transpose(_FROM_NCHW[dst]), target, name)
        if src_format in _FROM_NCHW:
            _need_ndim(array, 4, pe.format_name(src_format))
            back = np.argsort(_FROM_NCHW[src_format])  # src layout -> NCHW
            return _crop(array.transpose(back).transpose(_FROM_NCHW[dst]), target, name)
        if src_format == pe.FORMAT_NDC1HWC0:
            if dst == pe.FORMAT_ND and target is not None and len(target) != 5:
                target = None  # msaccucmp's NDC1HWC0 -> ND crops only to a 5-D shape
            return _ndc1hwc0_to_ncdhw(array, target)
        return _fractal_nz_to_nd(array, target)
    except ValueError as exc:  # a reshape that cannot work
        raise FormatError(f"{name}: {exc}") from None


def _device_to_padded_nchw(
    array: np.ndarray, src_format: int, target_nchw: tuple[int, ...] | None
) -> np.ndarray:
    if src_format == pe.FORMAT_FRACTAL_Z:
        return _fractal_z_to_nchw(array, target_nchw)
    if src_format == pe.FORMAT_C1HWNCoC0:
        return _c1hwncoc0_to_nchw(array)
    return _nc1hwc0_to_nchw(array)


def _need_ndim(array: np.ndarray, ndim: int, name: str) -> None:
    if array.ndim != ndim:
        raise FormatError(f"{name} data must be {ndim}-D, got shape {list(array.shape)}")


def _crop(merged: np.ndarray, target: tuple[int, ...] | None, name: str) -> np.ndarray:
    if target is None:
        return merged
    if len(target) != merged.ndim or any(t > m for t, m in zip(target, merged.shape, strict=True)):
        raise FormatError(f"{name}: target shape {list(target)} does not fit {list(merged.shape)}")
    return merged[tuple(slice(0, t) for t in target)]


def _nc1hwc0_to_nchw(array: np.ndarray) -> np.ndarray:
    _need_ndim(array, 5, "NC1HWC0")
    n, c1, h, w, c0 = array.shape
    nchw: np.ndarray = array.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)
    return nchw


def _ndc1hwc0_to_ncdhw(array: np.ndarray, target: tuple[int, ...] | None) -> np.ndarray:
    _need_ndim(array, 6, "NDC1HWC0")
    n, d, c1, h, w, c0 = array.shape
    merged = array.transpose(0, 2, 5, 1, 3, 4).reshape(n, c1 * c0, d, h, w)
    return _crop(merged, target, "NDC1HWC0")


def _fractal_z_to_nchw(array: np.ndarray, target: tuple[int, ...] | None) -> np.ndarray:
    if target is None or len(target) != 4:
        raise FormatError("FRACTAL_Z needs a 4-D target shape (original_shape or -s)")
    _need_ndim(array, 4, "FRACTAL_Z")
    _, h, w = target[0], target[2], target[3]
    c1hw, no, ni, c0 = array.shape
    if h * w == 0 or c1hw % (h * w):
        raise FormatError(f"FRACTAL_Z: first axis {c1hw} is not a multiple of H*W = {h * w}")
    c1 = c1hw // (h * w)
    nchw: np.ndarray = (
        array.reshape(c1, h, w, no, ni, c0)
        .transpose(3, 4, 0, 5, 1, 2)
        .reshape(no * ni, c1 * c0, h, w)
    )
    return nchw


def _c1hwncoc0_to_nchw(array: np.ndarray) -> np.ndarray:
    _need_ndim(array, 6, "C1HWNCoC0")
    c1, h, w, n, co, c0 = array.shape
    if co != c0:
        raise FormatError(f"C1HWNCoC0: Co ({co}) must equal C0 ({c0})")
    # element (n, c, h, w) sits at [c // C0, h, w, n, c % C0, c % C0]: the Co/C0 diagonal.
    diagonal = np.diagonal(array, axis1=4, axis2=5)  # (c1, h, w, n, c0)
    nchw: np.ndarray = diagonal.transpose(3, 0, 4, 1, 2).reshape(n, c1 * c0, h, w)
    return nchw


def _fractal_nz_to_nd(array: np.ndarray, target: tuple[int, ...] | None) -> np.ndarray:
    """The target shape itself, batch axes included. (msaccucmp folds the batch axes
    into one, (B, N, C) with B = prod(target[:-2]), and gives (1, C) for a 1-D target:
    same values, but not the tensor's shape.) A new C-contiguous array, each element
    copied once (the padding is never copied)."""
    if target is None or len(target) < 1:
        raise FormatError("FRACTAL_NZ needs a target shape (original_shape or -s)")
    if array.ndim < 4:
        raise FormatError(f"FRACTAL_NZ data must be at least 4-D, got shape {list(array.shape)}")
    c1, no, ni, c0 = array.shape[-4:]
    if len(target) == 1:
        batch, rows, cols = 1, 1, target[0]
    else:
        batch, rows, cols = math.prod(target[:-2]), target[-2], target[-1]
    if batch * c1 * no * ni * c0 != array.size:
        raise FormatError(
            f"FRACTAL_NZ: shape {list(array.shape)} does not hold target {list(target)}"
        )
    if rows > no * ni or cols > c1 * c0:
        raise FormatError(f"FRACTAL_NZ: target {list(target)} does not fit {[no * ni, c1 * c0]}")
    # (batch, rows, C1, C0) without a copy: No x Ni merge (they are adjacent), rows cropped
    fractals = array.reshape(batch, c1, no * ni, c0)[:, :, :rows].transpose(0, 2, 1, 3)
    full, rest = divmod(cols, c0)
    if not rest:  # whole C0 groups: one copy, C1 x C0 merged by the reshape of its result
        return np.ascontiguousarray(fractals[:, :, :full]).reshape(target)
    out = np.empty((batch, rows, cols), dtype=array.dtype)
    _fill_merged(out, fractals, (1, 1, 2))  # the whole groups, then the last partial one
    return out.reshape(target)


def convert_contiguous(
    array: np.ndarray, src_format: int, target_shape: Sequence[int] | None, dst_format: int
) -> np.ndarray | None:
    """What :func:`convert_to_host` gives, made C-contiguous, in one pass.

    :func:`convert_to_host` merges each padded axis pair (C1 x C0 ...) with a
    ``reshape``, which copies, and the crop and the host transpose then need a
    second copy to be contiguous. Here the destination array is made first and
    every element is copied into it once from the device layout, a block of
    whole C0 groups and a block of the last partial group. Handles NC1HWC0
    (and C04) to NCHW/NHWC/HWCN, cropped to the target shape or, without one,
    padded (1.6-1.9x faster than the two copies on a 26 MB float16 tensor
    cropped to C=120); ``None`` for anything else, or shapes that do not fit
    (``convert_to_host`` says why). FRACTAL_NZ needs no help here:
    :func:`convert_to_host` itself copies it once into a contiguous array.
    """
    if src_format not in (pe.FORMAT_NC1HWC0, pe.FORMAT_NC1HWC0_C04):
        return None
    if dst_format not in _FROM_NCHW or array.ndim != 5:
        return None
    n, c1, h, w, c0 = array.shape
    padded = (n, c1 * c0, h, w)
    if target_shape:
        target = tuple(int(d) for d in target_shape)
        if len(target) != 4:
            return None
        nchw = _to_nchw_order(target, dst_format)
        if any(t > m for t, m in zip(nchw, padded, strict=True)):
            return None
    else:
        target = tuple(padded[axis] for axis in _FROM_NCHW[dst_format])
    out = np.empty(target, dtype=array.dtype)
    back = tuple(int(a) for a in np.argsort(_FROM_NCHW[dst_format]))
    _fill_merged(out.transpose(back), array.transpose(0, 1, 4, 2, 3), (1, 2, 1, 1))
    return out


def _fill_merged(out: np.ndarray, device: np.ndarray, groups: tuple[int, ...]) -> None:
    """Copy ``device`` into ``out``, each axis of ``out`` being one axis of ``device``
    (group 1) or an (outer, inner) pair of them merged (group 2), cropped to
    ``out``'s shape. ``out`` may be strided (a transposed view): it is written
    through views that split its merged axes, never copied."""
    pieces: list[list[tuple[slice, tuple[slice, ...], tuple[int, ...]]]] = []
    axis = 0
    for size, group in zip(out.shape, groups, strict=True):
        if group == 1:
            pieces.append([(slice(0, size), (slice(0, size),), (size,))])
        else:
            inner = device.shape[axis + 1]
            full, rest = divmod(size, inner)
            options: list[tuple[slice, tuple[slice, ...], tuple[int, ...]]] = []
            if full:
                options.append(
                    (slice(0, full * inner), (slice(0, full), slice(None)), (full, inner))
                )
            if rest:
                options.append(
                    (slice(full * inner, size), (slice(full, full + 1), slice(0, rest)), (1, rest))
                )
            pieces.append(options)
        axis += group
    for combo in itertools.product(*pieces):
        block = out[tuple(piece[0] for piece in combo)]
        shape: list[int] = []
        strides: list[int] = []
        for piece, stride in zip(combo, block.strides, strict=True):
            if len(piece[2]) == 1:
                shape.append(piece[2][0])
                strides.append(stride)
            else:
                outer, inner = piece[2]
                shape += [outer, inner]
                strides += [stride * inner, stride]
        split = np.lib.stride_tricks.as_strided(block, tuple(shape), tuple(strides))
        np.copyto(split, device[tuple(s for piece in combo for s in piece[1])])
