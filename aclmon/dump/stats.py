"""Tensor statistics for the UI, computed in fixed-size chunks.

A 1 GB tensor is read chunk by chunk (each converted to float64 on its own),
so the extra memory is a few chunks, never a copy of the tensor. Two passes:
the first gives counts, min/max and mean/std (chunk results merged with Chan's
parallel formula, which keeps float64 accuracy), the second the histogram over
the finite range.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from aclmon.dump import proto_enums as pe
from aclmon.errors import AclmonError

#: elements per chunk: 1 Mi elements = 8 MiB as float64.
CHUNK_ELEMENTS = 1 << 20


def _as_float_chunk(chunk: np.ndarray) -> np.ndarray:
    floats: np.ndarray = (np.abs(chunk) if chunk.dtype.kind == "c" else chunk).astype(np.float64)
    return floats


def _chunks(flat: np.ndarray, chunk_elements: int) -> Iterator[np.ndarray]:
    for start in range(0, flat.shape[0], chunk_elements):
        yield flat[start : start + chunk_elements]


def _plain(value: Any) -> Any:
    """numpy scalars -> JSON-able Python values (NaN/Inf as strings, JSON has none)."""
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, complex) or np.iscomplexobj(value):
        return str(complex(value))
    number = float(value)
    if math.isnan(number) or math.isinf(number):
        return str(number)
    return number


def tensor_stats(
    array: np.ndarray, bins: int = 32, first: int = 8, chunk_elements: int = CHUNK_ELEMENTS
) -> dict[str, Any]:
    """Shape, dtype, min/max/mean/std over finite values, NaN/+Inf/-Inf/zero counts,
    the first ``first`` values and a ``bins``-bin histogram of the finite values.

    Complex tensors are summarised by magnitude (``"of": "magnitude"``).
    """
    flat = array.reshape(-1)
    total = int(flat.shape[0])
    result: dict[str, Any] = {
        "shape": [int(d) for d in array.shape],
        "dtype": str(array.dtype),
        "count": total,
        "first": [_plain(v) for v in flat[:first].tolist()] if total else [],
    }
    if array.dtype.kind == "c":
        result["of"] = "magnitude"
    # integers and bools cannot hold NaN/Inf; ml_dtypes types (kind "V") are checked like floats
    floating = array.dtype.kind not in "iub"
    # huge values may overflow float64 sums; the result then says "inf"/"nan" instead
    with np.errstate(over="ignore", invalid="ignore"):
        lo, hi, mean, m2, counts = _first_pass(flat, chunk_elements, floating, array.dtype.kind)
    nan, pos_inf, neg_inf, zeros, finite, exact_lo, exact_hi = counts
    result.update(
        nan=nan,
        pos_inf=pos_inf,
        neg_inf=neg_inf,
        zeros=zeros,
        finite=finite,
        min=(exact_lo if exact_lo is not None else lo) if finite else None,
        max=(exact_hi if exact_hi is not None else hi) if finite else None,
        mean=_plain(mean) if finite else None,
        std=_plain(math.sqrt(m2 / finite)) if finite else None,
    )
    with np.errstate(over="ignore", invalid="ignore"):
        result["histogram"] = _histogram(flat, bins, lo, hi, finite, chunk_elements, floating)
    return result


def _first_pass(
    flat: np.ndarray, chunk_elements: int, floating: bool, kind: str
) -> tuple[float, float, float, float, tuple[int, int, int, int, int, int | None, int | None]]:
    """min, max, mean, M2 (sum of squared deviations) and the counts, merged chunk by chunk."""
    nan = pos_inf = neg_inf = zeros = finite = 0
    lo, hi = math.inf, -math.inf
    mean = m2 = 0.0
    exact_lo: int | None = None  # integers keep exact extremes (float64 rounds past 2**53)
    exact_hi: int | None = None
    for chunk in _chunks(flat, chunk_elements):
        if kind in "iu" and chunk.size:
            chunk_lo, chunk_hi = int(chunk.min()), int(chunk.max())
            exact_lo = chunk_lo if exact_lo is None else min(exact_lo, chunk_lo)
            exact_hi = chunk_hi if exact_hi is None else max(exact_hi, chunk_hi)
        values = _as_float_chunk(chunk)
        zeros += int(np.count_nonzero(values == 0))
        if floating:
            is_finite = np.isfinite(values)
            if not is_finite.all():  # the common all-finite chunk skips these passes
                nan += int(np.count_nonzero(np.isnan(values)))
                pos_inf += int(np.count_nonzero(values == np.inf))
                neg_inf += int(np.count_nonzero(values == -np.inf))
                values = values[is_finite]
        n = int(values.shape[0])
        if n == 0:
            continue
        lo = min(lo, float(values.min()))
        hi = max(hi, float(values.max()))
        chunk_mean = float(values.mean())
        chunk_m2 = float(np.square(values - chunk_mean).sum())
        merged = finite + n
        delta = chunk_mean - mean
        mean += delta * n / merged
        m2 += chunk_m2 + delta * delta * finite * n / merged
        finite = merged
    return lo, hi, mean, max(m2, 0.0), (nan, pos_inf, neg_inf, zeros, finite, exact_lo, exact_hi)


def _histogram(
    flat: np.ndarray,
    bins: int,
    lo: float,
    hi: float,
    finite: int,
    chunk_elements: int,
    floating: bool,
) -> dict[str, Any]:
    if not finite or bins <= 0:
        return {"edges": [], "counts": []}
    if lo == hi:
        # one value: one bin holding everything (lo +- 0.5 is no wider than lo for huge values)
        return {"edges": [lo, hi], "counts": [finite]}
    edges: np.ndarray | None = None
    bins_arg: int | np.ndarray = bins
    if math.isfinite(hi - lo):
        uniform = np.linspace(lo, hi, bins + 1)
        if np.all(np.diff(uniform) > 0):
            edges = uniform  # numpy's fast uniform-bin path, same edges as range=(lo, hi)
    if edges is None:
        # the range overflows float64 (e.g. -1e308..1e308) or is too narrow for distinct
        # edges: explicit edges built at half scale, duplicates dropped
        edges = np.unique(np.linspace(lo / 2, hi / 2, bins + 1) * 2)
        bins_arg = edges
    counts = np.zeros(edges.shape[0] - 1, dtype=np.int64)
    for chunk in _chunks(flat, chunk_elements):
        values = _as_float_chunk(chunk)
        if floating:
            values = values[np.isfinite(values)]
        counts += np.histogram(values, bins=bins_arg, range=(lo, hi))[0]
    return {"edges": [float(e) for e in edges], "counts": [int(c) for c in counts]}


#: device layouts that pad the tensor (C0 blocks, N/M tiles): their stored array holds
#: more values than the tensor, so statistics are taken over the converted array.
PADDED_FORMATS = frozenset(
    (
        pe.FORMAT_NC1HWC0,
        pe.FORMAT_NC1HWC0_C04,
        pe.FORMAT_NDC1HWC0,
        pe.FORMAT_FRACTAL_Z,
        pe.FORMAT_FRACTAL_NZ,
        pe.FORMAT_C1HWNCoC0,
    )
)


def logical_array(
    array: np.ndarray, proto_format: int, original_shape: tuple[int, ...] | list[int]
) -> np.ndarray | None:
    """The tensor in its original shape, converted from a padded device layout as
    ``aclmon convert -f`` does (default host format, cropped to ``original_shape``).

    ``None`` when the stored array already is the tensor (not a padded layout, or no
    original shape). Raises :class:`aclmon.dump.formats.FormatError` when the stored
    shape cannot hold the original one.
    """
    if proto_format not in PADDED_FORMATS or not original_shape:
        return None
    from aclmon.dump.formats import convert_to_host

    return convert_to_host(array, proto_format, tuple(original_shape))


def logical_tensor_stats(
    array: np.ndarray,
    proto_format: int,
    original_shape: tuple[int, ...] | list[int],
    bins: int = 32,
    first: int = 8,
) -> dict[str, Any]:
    """:func:`tensor_stats` over the tensor the user wrote (its original shape), not
    over the padded device buffer. Where the two differ the stored-layout figures are
    kept under ``stored_stats``; if the conversion fails, the stored figures are the
    result and ``logical_error`` says why."""
    try:
        logical = logical_array(array, proto_format, original_shape)
    except AclmonError as exc:
        stats = tensor_stats(array, bins=bins, first=first)
        stats["logical_error"] = str(exc)
        return stats
    if logical is None:
        return tensor_stats(array, bins=bins, first=first)
    stats = tensor_stats(logical, bins=bins, first=first)
    stats["stored_stats"] = tensor_stats(array, bins=bins, first=first)
    return stats
