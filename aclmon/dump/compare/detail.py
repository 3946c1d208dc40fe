"""One row side by side: both tensors' shapes and statistics, the worst elements
with both values and their error, and a histogram of the error.

This is what the Compare view shows when a row is opened, and what
``aclmon compare -op NAME`` prints and writes (msaccucmp's single-operator
files: ``{op}_{input|output}_{i}_summary.txt``, ``..._absolute_error_topn.csv``,
``..._relative_error_topn.csv`` and the converted ``{op}_{input|output}_{i}.npy``).
It reads both tensors again, so call it off the UI thread; memory stays a few
blocks beyond the two tensors (the errors are computed block by block).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aclmon.dump.compare.matching import INPUT, TensorSource, dump_tensors, npy_tensor
from aclmon.dump.compare.metrics import CHUNK, Array, as_float32
from aclmon.dump.compare.rows import CompareRow
from aclmon.errors import AclmonError

#: decade bins of the absolute error: 1e-12 ... 1e12 (smaller and larger go to the ends)
LOWEST_DECADE = -12
HIGHEST_DECADE = 12
DEFAULT_TOP = 20
MAX_TOP = 10_000


@dataclass(frozen=True)
class Side:
    """One tensor as the detail shows it."""

    file: str
    dtype: str
    layout: str  # the file's format name ("NC1HWC0", "ND" ...; "npy" for .npy data)
    stored_shape: tuple[int, ...]
    shape: tuple[int, ...]  # the logical shape compared
    stats: dict[str, Any]  # aclmon.dump.stats.tensor_stats of the logical tensor


@dataclass(frozen=True)
class Element:
    flat: int  # position in the flattened tensor
    position: tuple[int, ...]  # the same position in the logical shape
    mine: float
    golden: float
    abs_error: float
    rel_error: float  # abs_error / |golden|: inf when the golden is 0, nan when both are


@dataclass(frozen=True)
class ErrorHistogram:
    """Counts of the absolute error by decade: ``counts[i]`` holds errors in
    ``[edges[i], edges[i + 1])``; the first bin takes everything smaller, the last
    everything larger; exact zeros and NaN/Inf errors are counted apart."""

    edges: tuple[float, ...]
    counts: tuple[int, ...]
    zeros: int
    nonfinite: int


@dataclass(frozen=True)
class RowDetail:
    row: CompareRow
    mine: Side | None = None
    golden: Side | None = None
    worst: tuple[Element, ...] = ()  # by absolute error, largest first (NaN/Inf first of all)
    worst_relative: tuple[Element, ...] = ()
    histogram: ErrorHistogram | None = None
    min_abs_error: float = math.nan
    max_abs_error: float = math.nan
    min_rel_error: float = math.nan
    max_rel_error: float = math.nan
    error: str = ""  # why there is no detail ("" when there is)
    my_values: Array | None = field(default=None, repr=False, compare=False)

    def lines(self) -> list[str]:
        """The detail as text (``aclmon compare -op``)."""
        row = self.row
        out = [f"{row.tensor_index}  ({row.op_type})  status {row.status}"]
        if self.error:
            return [*out, f"  {self.error}"]
        for label, side in (("my output   ", self.mine), ("ground truth", self.golden)):
            if side is None:
                continue
            stats = side.stats
            figures = "  ".join(
                f"{key} {short(stats.get(key))}" for key in ("min", "max", "mean", "std")
            )
            out.append(
                f"  {label} {side.dtype} {side.layout} {list(side.stored_shape)} -> "
                f"{list(side.shape)}  {figures}  nan {stats.get('nan', 0)}  "
                f"inf {stats.get('pos_inf', 0) + stats.get('neg_inf', 0)}"
            )
        out.append(
            f"  absolute error min {short(self.min_abs_error)} max {short(self.max_abs_error)}"
            f"  relative error min {short(self.min_rel_error)} max {short(self.max_rel_error)}"
        )
        if self.worst:
            out.append("  worst elements (absolute error):")
            out.append(
                f"    {'index':<12} {'position':<17} {'my output':>14} {'ground truth':>14} "
                f"{'abs error':>13} {'rel error':>13}"
            )
            for e in self.worst:
                out.append(
                    f"    {e.flat:<12} {list(e.position)!s:<17} {short(e.mine):>14} "
                    f"{short(e.golden):>14} {short(e.abs_error):>13} {short(e.rel_error):>13}"
                )
        if self.histogram is not None:
            h = self.histogram
            out.append(f"  absolute error by decade (zeros {h.zeros}, NaN/Inf {h.nonfinite}):")
            width = max(h.counts, default=0)
            for low, high, count in zip(h.edges, h.edges[1:], h.counts, strict=False):
                if count:
                    bar = "#" * max(1, round(30 * count / width)) if width else ""
                    out.append(f"    [{low:.0e}, {high:.0e})  {count:>10}  {bar}")
        return out


def short(value: Any) -> str:
    """A figure as the detail prints it: six significant digits ("-" for none)."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return f"{float(value):.6g}"


def _source(path: str, role: str, index: int) -> TensorSource:
    if path.endswith(".npy"):
        return npy_tensor(path, index)
    inputs, outputs, _ = dump_tensors(path)
    for tensor in inputs if role == INPUT else outputs:
        if tensor.index == index:
            return tensor
    raise AclmonError(f"{os.path.basename(path)}: no {role} {index}")


def row_detail(row: CompareRow, top: int = DEFAULT_TOP, *, keep_values: bool = False) -> RowDetail:
    """Read both tensors of ``row`` again and describe them side by side. Never raises:
    a row without two readable tensors gives a detail whose ``error`` says why."""
    from aclmon.dump.compare.engine import align_golden
    from aclmon.dump.stats import tensor_stats

    if not row.role or not row.golden_file or not row.my_file:
        return RowDetail(row, error=row.reason or "nothing to compare")
    if row.my_file.lower().endswith(".csv"):
        return RowDetail(row, error="a statistics row: its tensors were not dumped")
    try:
        mine = _source(row.my_file, row.role, row.tensor)
        golden = _source(row.golden_file, row.role, row.tensor)
        x = mine.load()
        y = align_golden(mine, golden, golden.load())
    except AclmonError as exc:
        return RowDetail(row, error=str(exc))
    sides = []
    for tensor, values in ((mine, x), (golden, y)):
        layout = "npy" if tensor.format is None else _format_name(tensor.format)
        sides.append(
            Side(
                tensor.file,
                tensor.dtype,
                layout,
                tensor.shape,
                tuple(values.shape),
                tensor_stats(values, bins=16),
            )
        )
    if x.size != y.size:
        return RowDetail(row, sides[0], sides[1], error=row.reason or "the sizes differ")
    top = max(1, min(top, MAX_TOP))
    errors = _errors(as_float32(x.reshape(-1)), as_float32(y.reshape(-1)), top, x.shape)
    return RowDetail(row, sides[0], sides[1], *errors, my_values=x if keep_values else None)


def _format_name(proto_format: int) -> str:
    from aclmon.dump import proto_enums as pe

    return pe.format_name(proto_format)


def _errors(
    x: Array, y: Array, top: int, shape: tuple[int, ...]
) -> tuple[tuple[Element, ...], tuple[Element, ...], ErrorHistogram, float, float, float, float]:
    edges = np.array([10.0**k for k in range(LOWEST_DECADE, HIGHEST_DECADE + 1)])
    counts = np.zeros(edges.shape[0] - 1, np.int64)
    zeros = nonfinite = 0
    lo_abs = lo_rel = math.inf
    hi_abs = hi_rel = -math.inf
    abs_candidates: list[tuple[float, int]] = []
    rel_candidates: list[tuple[float, int]] = []
    with np.errstate(all="ignore"):
        for start in range(0, int(x.shape[0]), CHUNK):
            xc, yc = x[start : start + CHUNK], y[start : start + CHUNK]
            err = np.abs(xc - yc)
            rel = err / np.abs(yc)
            rel[err == 0] = 0.0
            finite = np.isfinite(err)
            nonfinite += int(err.shape[0] - np.count_nonzero(finite))
            good = err[finite]
            zeros += int(np.count_nonzero(good == 0))
            positive = good[good > 0]
            if positive.size:
                clipped = np.clip(positive, edges[0], np.nextafter(edges[-1], 0))
                counts += np.histogram(clipped, bins=edges)[0]
            if good.size:
                lo_abs, hi_abs = min(lo_abs, float(good.min())), max(hi_abs, float(good.max()))
            finite_rel = rel[np.isfinite(rel)]
            if finite_rel.size:
                lo_rel = min(lo_rel, float(finite_rel.min()))
                hi_rel = max(hi_rel, float(finite_rel.max()))
            for values, pool in ((err, abs_candidates), (rel, rel_candidates)):
                ranked = np.where(np.isnan(values), np.inf, values)
                k = min(top, int(ranked.shape[0]))
                picks = np.argpartition(ranked, -k)[-k:] if k < ranked.shape[0] else np.arange(k)
                pool.extend((float(ranked[i]), start + int(i)) for i in picks)
    nonempty = np.nonzero(counts)[0]
    if nonempty.size:
        first, last = int(nonempty[0]), int(nonempty[-1]) + 1
        histogram = ErrorHistogram(
            tuple(float(e) for e in edges[first : last + 1]),
            tuple(int(c) for c in counts[first:last]),
            zeros,
            nonfinite,
        )
    else:
        histogram = ErrorHistogram((), (), zeros, nonfinite)

    def elements(pool: list[tuple[float, int]]) -> tuple[Element, ...]:
        chosen = sorted(pool, key=lambda item: (-item[0], item[1]))[:top]
        out = []
        for _, flat in chosen:
            mine, gold = float(x[flat]), float(y[flat])
            abs_error = abs(mine - gold)
            rel_error = 0.0 if abs_error == 0 else (abs_error / abs(gold) if gold else math.inf)
            position = tuple(int(p) for p in np.unravel_index(flat, shape)) if shape else ()
            out.append(Element(flat, position, mine, gold, abs_error, rel_error))
        return tuple(out)

    def bound(value: float) -> float:
        return value if math.isfinite(value) else math.nan

    return (
        elements(abs_candidates),
        elements(rel_candidates),
        histogram,
        bound(lo_abs),
        bound(hi_abs),
        bound(lo_rel),
        bound(hi_rel),
    )


# ---------------------------------------------------------------- -op files
def detail_prefix(row: CompareRow) -> str:
    return f"{row.npu_dump.replace('/', '_')}_{row.role}_{row.tensor}"


def _detail_format(shape: tuple[int, ...]) -> str:
    if not shape:
        return "ID"
    return "N C D H W" if len(shape) == 5 else "N C H W"


def _padded_position(position: tuple[int, ...]) -> str:
    return " ".join(str(p) for p in list(position) + [0] * max(0, 4 - len(position)))


def _topn_line(e: Element) -> str:
    line = (
        f"{e.flat},{_padded_position(e.position)},{e.mine:.6f}\t,{e.golden:.6f}\t,"
        f"{e.abs_error:.6f}\t,{e.rel_error:.6f}\t\n"
    )
    return line.replace("nan", "-").replace("inf", "-")


def write_detail_files(detail: RowDetail, out_dir: str) -> list[str]:
    """msaccucmp's single-operator files for one tensor; the paths written."""
    if detail.error or detail.mine is None:
        return []
    row = detail.row
    prefix = os.path.join(out_dir, detail_prefix(row))
    shape = detail.mine.shape
    header = f"Index,{_detail_format(shape)},NPUDump,GroundTruth,AbsoluteError,RelativeError\n"
    written = []
    summary = (
        f"TotalCount:{int(np.prod(shape)) if shape else 1}\n"
        f"NPUDump:{row.npu_dump}\nGroundTruth:{row.ground_truth.replace(',', ' ')}\n"
        f"Format:{_detail_format(shape)}\n"
        f"MinAbsoluteError:{detail.min_abs_error:.6f}\nMaxAbsoluteError:{detail.max_abs_error:.6f}\n"
        f"MinRelativeError:{detail.min_rel_error:.6f}\nMaxRelativeError:{detail.max_rel_error:.6f}\n"
    )
    for suffix, text in (
        ("_summary.txt", summary),
        ("_absolute_error_topn.csv", header + "".join(_topn_line(e) for e in detail.worst)),
        (
            "_relative_error_topn.csv",
            header + "".join(_topn_line(e) for e in detail.worst_relative),
        ),
    ):
        with open(prefix + suffix, "w", encoding="utf-8") as handle:
            handle.write(text)
        written.append(prefix + suffix)
    if detail.my_values is not None:
        np.save(prefix + ".npy", np.ascontiguousarray(detail.my_values))
        written.append(prefix + ".npy")
    return written


def detail_json(detail: RowDetail) -> dict[str, Any]:
    def side(s: Side | None) -> dict[str, Any] | None:
        if s is None:
            return None
        return {
            "file": s.file,
            "dtype": s.dtype,
            "layout": s.layout,
            "stored_shape": list(s.stored_shape),
            "shape": list(s.shape),
            "stats": s.stats,
        }

    def element(e: Element) -> dict[str, Any]:
        return {
            "index": e.flat,
            "position": list(e.position),
            "mine": _json_float(e.mine),
            "golden": _json_float(e.golden),
            "abs_error": _json_float(e.abs_error),
            "rel_error": _json_float(e.rel_error),
        }

    h = detail.histogram
    return {
        "tensor_index": detail.row.tensor_index,
        "error": detail.error or None,
        "mine": side(detail.mine),
        "golden": side(detail.golden),
        "worst": [element(e) for e in detail.worst],
        "worst_relative": [element(e) for e in detail.worst_relative],
        "histogram": None
        if h is None
        else {
            "edges": list(h.edges),
            "counts": list(h.counts),
            "zeros": h.zeros,
            "nonfinite": h.nonfinite,
        },
        "abs_error": [_json_float(detail.min_abs_error), _json_float(detail.max_abs_error)],
        "rel_error": [_json_float(detail.min_rel_error), _json_float(detail.max_rel_error)],
    }


def _json_float(value: float) -> float | str:
    return value if math.isfinite(value) else str(value)
