"""msaccucmp's ten compare metrics, with its formulas, its float32 cast and its printing.

Both tensors are flattened; unless both are bool they are cast to float32 before
any metric (msaccucmp's algorithm manager does the same), so sums, norms and
means are float32 arithmetic; StandardDeviation alone asks for float64. Every
result is printed ``'{:.6f}'`` (``nan``/``inf`` when computed so); the sentinel
``NaN`` marks a metric that could not be computed, with the reason beside it.
The reasons are msaccucmp's own sentences, so a reader of both tools sees the
same words.

Two ways to the same numbers:

* the *literal* path evaluates each formula on the whole arrays, exactly as
  written in docs/reference/compare.md; small tensors, bool tensors and any
  tensor whose sums are not finite (NaN, Inf, float32 overflow) take it, so the
  special cases behave exactly as msaccucmp's do;
* the *chunked* path, for everything else, reads the two arrays once in blocks
  of :data:`CHUNK` elements that stay in the CPU cache and gathers every sum
  the metrics need on the way (dot products in float32 per block, blocks added
  in float64), plus one more pass for the KL divergence, which needs both
  tensors' global minimum and maximum first. It is what makes a compare cost
  little more than reading the tensors; its sums agree with the literal ones to
  float32 rounding (checked against an element-wise reference in the tests).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from aclmon.errors import AclmonError

COSINE = "CosineSimilarity"
MAX_ABS = "MaxAbsoluteError"
ACC_REL = "AccumulatedRelativeError"
EUCLID = "RelativeEuclideanDistance"
KL = "KullbackLeiblerDivergence"
STD = "StandardDeviation"
MEAN_ABS = "MeanAbsoluteError"
RMSE = "RootMeanSquareError"
MAX_REL = "MaxRelativeError"
MEAN_REL = "MeanRelativeError"

#: msaccucmp's built-in algorithms in its fixed order (``-alg`` indexes 0-9 refer to it).
ALGORITHMS: tuple[str, ...] = (
    COSINE,
    MAX_ABS,
    ACC_REL,
    EUCLID,
    KL,
    STD,
    MEAN_ABS,
    RMSE,
    MAX_REL,
    MEAN_REL,
)
#: the only ones attempted when both tensors are bool.
BOOL_ALGORITHMS = (COSINE, EUCLID)

#: the sentinel of a metric that could not be computed (a computed NaN prints ``nan``).
NAN = "NaN"
#: float64 machine epsilon: msaccucmp's zero test for norms and golden values.
DOUBLE_EPS = float(np.finfo(np.float64).eps)
#: float32 epsilon: the floor of the KL divergence's normalised values.
SINGLE_EPS = np.float32(np.finfo(np.float32).eps)
#: StandardDeviation prints any mean or deviation smaller than this as 0.000.
STD_FLOOR = 0.001
#: elements per block of the chunked path: 128 KiB of float32, well inside L2
#: (64 Ki blocks were no faster, and the float32 dot products of the KL pass
#: drift more over longer blocks).
CHUNK = 1 << 15
#: tensors up to this many elements take the literal path (same rounding as msaccucmp).
LITERAL_MAX = CHUNK
#: the KL divergence's block pass leaves Q unscaled when the spans' ratio is this
#: close to 1: its logarithms then carry a common term under 1e-3, which the float32
#: dot product keeps to 1e-10 of the result.
KL_SCALE_SLACK = 2.0**-10

Array = NDArray[Any]
Float32 = NDArray[np.float32]

_BOOL_SUBTRACT = (
    "numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, "
    "the `^` operator, or the logical_xor function instead."
)


@dataclass(frozen=True)
class MetricResults:
    """One tensor pair's metrics: column -> printed text, in the order asked, and
    msaccucmp's messages about them."""

    values: dict[str, str]
    reasons: tuple[str, ...]


def format_value(value: float) -> str:
    return f"{value:.6f}"


def metric_number(text: str) -> float:
    """A printed metric as a number: ``nan`` for the ``NaN`` sentinel and for
    StandardDeviation's text."""
    try:
        return float(text)
    except ValueError:
        return math.nan


def is_scalar_shape(shape: Sequence[int]) -> bool:
    """msaccucmp's test: ``sum(shape) == len(shape)`` (so also ``[0, 2]``)."""
    return sum(shape) == len(shape)


def parse_algorithms(items: Iterable[str]) -> tuple[str, ...]:
    """``-alg`` values (``all``; names or indexes 0-9, comma- or space-separated,
    case-insensitive) as column names in the order given, without repeats."""
    wanted: list[str] = []
    for item in items:
        for part in str(item).split(","):
            token = part.strip()
            if not token:
                continue
            if token.lower() == "all":
                return ALGORITHMS
            if token.isdigit():
                if int(token) >= len(ALGORITHMS):
                    raise AclmonError(
                        f"-alg {token}: no algorithm with that index (0-{len(ALGORITHMS) - 1})"
                    )
                name = ALGORITHMS[int(token)]
            else:
                matches = [a for a in ALGORITHMS if a.lower() == token.lower()]
                if not matches:
                    raise AclmonError(
                        f"-alg {token}: unknown algorithm; known: {', '.join(ALGORITHMS)}"
                    )
                name = matches[0]
            if name not in wanted:
                wanted.append(name)
    if not wanted:
        raise AclmonError("-alg: select at least one algorithm")
    return tuple(wanted)


@dataclass(frozen=True)
class _Files:
    my: str
    golden: str
    scalar: bool


def compare_arrays(
    my: Array,
    golden: Array,
    algorithms: Sequence[str] = ALGORITHMS,
    *,
    my_file: str = "",
    golden_file: str = "",
    scalar: bool | None = None,
    max_elements: int = 0,
) -> MetricResults:
    """The metrics of one tensor pair (``my`` = the NPU side), as msaccucmp prints them.

    ``scalar`` defaults to msaccucmp's test on ``my``'s shape; ``max_elements``
    (``-max``) compares only the first elements of each flattened tensor. Never
    raises for any array content: a metric that fails is ``NaN`` with the reason.
    """
    files = _Files(my_file, golden_file, is_scalar_shape(my.shape) if scalar is None else scalar)
    x, y = my.reshape(-1), golden.reshape(-1)
    if x.shape[0] != y.shape[0]:
        reason = (
            f"The my output dump data size ({x.shape[0]}) in {my_file!r} does not match "
            f"the ground truth dump data size ({y.shape[0]}) in {golden_file!r}."
        )
        return MetricResults(dict.fromkeys(algorithms, NAN), (reason,))
    if max_elements > 0:
        x, y = x[:max_elements], y[:max_elements]
    if x.dtype == np.bool_ and y.dtype == np.bool_:
        return _compare_bool(x, y, algorithms, files)
    x32, y32 = as_float32(x), as_float32(y)
    with np.errstate(all="ignore"):
        if x32.shape[0] > LITERAL_MAX:
            chunked = _chunked(x32, y32, algorithms, files)
            if chunked is not None:
                return chunked
        return _literal(x32, y32, algorithms, files)


def as_float32(array: Array) -> Float32:
    """msaccucmp's cast (``astype("float32")``): complex tensors keep their real part."""
    if array.dtype == np.float32:
        return array
    if array.dtype.kind == "c":
        return np.real(array).astype(np.float32)
    with np.errstate(all="ignore"):
        return array.astype(np.float32)


# ---------------------------------------------------------------- the literal path
def _failed(name: str, exc: BaseException) -> tuple[str, str]:
    return NAN, f"Failed to execute 'compare' in '{name}'. {exc}"


def _results(algorithms: Sequence[str], compute: Callable[[str], tuple[str, str]]) -> MetricResults:
    values: dict[str, str] = {}
    reasons: list[str] = []
    for name in algorithms:
        try:
            text, reason = compute(name)
        except Exception as exc:  # msaccucmp turns any failure of a metric into NaN + why
            text, reason = _failed(name, exc)
        values[name] = text
        if reason:
            reasons.append(reason)
    return MetricResults(values, tuple(reasons))


def _compare_bool(x: Array, y: Array, algorithms: Sequence[str], files: _Files) -> MetricResults:
    def compute(name: str) -> tuple[str, str]:
        if name not in BOOL_ALGORITHMS:
            return NAN, f"Algorithm {name} does not support Boolean types."
        if name == EUCLID:
            raise TypeError(_BOOL_SUBTRACT)
        # np.linalg.norm computes a bool array's norm in float64
        return _cosine(x.astype(np.float64), y.astype(np.float64), files)

    return _results(algorithms, compute)


def _cosine(x: Array, y: Array, files: _Files) -> tuple[str, str]:
    if files.scalar:
        return format_value(1), "This tensor is scalar."
    nx = float(np.sqrt(np.add.reduce(x * x)))
    ny = float(np.sqrt(np.add.reduce(y * y)))
    return _cosine_from(
        nx, ny, lambda: float(np.sum((x / x.dtype.type(nx)) * (y / y.dtype.type(ny)))), files
    )


def _cosine_from(nx: float, ny: float, dot: Callable[[], float], files: _Files) -> tuple[str, str]:
    if nx <= DOUBLE_EPS and ny < DOUBLE_EPS:
        return "1.0", ""
    if nx**0.5 <= DOUBLE_EPS:
        return NAN, f"Cannot compare by Cosine Similarity. All the data is zero in {files.my}."
    if ny**0.5 <= DOUBLE_EPS:
        return NAN, f"Cannot compare by Cosine Similarity. All the data is zero in {files.golden}."
    result = dot()
    return format_value(result if math.isnan(result) else min(result, 1.0)), ""


def _relative(x: Float32, y: Float32) -> Float32:
    """``|x/y - 1|`` where ``|y| > eps``, 0 elsewhere."""
    relative: Float32 = np.where(np.abs(y) > DOUBLE_EPS, np.abs(x / y - 1), np.float32(0))
    return relative


def _normalized(values: Float32) -> Float32:
    top, bottom = values.max(), values.min()  # an empty tensor raises, as in msaccucmp
    span = top - bottom
    scaled = (values - bottom) / span if span != 0 else values
    floored: Float32 = np.maximum(scaled, SINGLE_EPS)
    return floored


def _kl_text(result: float, files: _Files) -> tuple[str, str]:
    if abs(result) < DOUBLE_EPS:
        result = 0.0
    reason = ""
    if result == math.inf:
        reason = f"Cannot compare by KL Divergence. The data contains 0 in {files.golden!r}."
    return format_value(result), reason


def _std_text(mean_x: float, std_x: float, mean_y: float, std_y: float) -> str:
    shown = [0.0 if abs(v) < STD_FLOOR else v for v in (mean_x, std_x, mean_y, std_y)]
    return "({:.3f};{:.3f}),({:.3f};{:.3f})".format(*shown)


def _literal(x: Float32, y: Float32, algorithms: Sequence[str], files: _Files) -> MetricResults:
    def compute(name: str) -> tuple[str, str]:
        if name == COSINE:
            return _cosine(x, y, files)
        if name == MAX_ABS:
            return format_value(float(np.abs(x - y).max())), ""
        if name == ACC_REL:
            return format_value(float(_relative(x, y).sum())), ""
        if name == EUCLID:
            golden_squares = (y**2).sum()
            if golden_squares**0.5 <= DOUBLE_EPS:
                return format_value(0.0), ""
            return format_value(float((((x - y) ** 2).sum() / golden_squares) ** 0.5)), ""
        if name == KL:
            p, q = _normalized(x), _normalized(y)
            p, q = p / p.sum(), q / q.sum()
            return _kl_text(float((p * np.log(p / q)).sum()), files)
        if name == STD:
            return (
                _std_text(
                    float(np.mean(x, dtype=np.float64)),
                    float(np.std(x, dtype=np.float64)),
                    float(np.mean(y, dtype=np.float64)),
                    float(np.std(y, dtype=np.float64)),
                ),
                "",
            )
        if name == MEAN_ABS:
            return format_value(float(np.abs(x - y).mean())), ""
        if name == RMSE:
            return format_value(float(np.sqrt(np.average((x - y) ** 2)))), ""
        if name == MAX_REL:
            return format_value(float(_relative(x, y).max())), ""
        if name == MEAN_REL:
            return format_value(float(_relative(x, y).mean())), ""
        raise AclmonError(f"unknown algorithm {name}")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # mean of an empty tensor
        return _results(algorithms, compute)


# ---------------------------------------------------------------- the chunked path
class _Sums:
    """What one pass over the blocks gathers (float64 totals of float32 block results)."""

    def __init__(self) -> None:
        self.xx = self.yy = self.xy = self.dd = 0.0
        self.abs_sum = 0.0
        self.abs_max = -math.inf
        self.rel_sum = 0.0
        self.rel_max = -math.inf
        self.x_min = self.y_min = math.inf
        self.x_max = self.y_max = -math.inf
        # StandardDeviation: count, mean, squared deviations, merged block by block (Chan)
        self.count = 0
        self.x_mean = self.y_mean = 0.0
        self.x_m2 = self.y_m2 = 0.0

    def finite(self) -> bool:
        return all(
            math.isfinite(v)
            for v in (
                self.xx,
                self.yy,
                self.xy,
                self.dd,
                self.abs_sum,
                self.abs_max,
                self.rel_sum,
                self.rel_max,
                self.x_min,
                self.x_max,
                self.y_min,
                self.y_max,
                self.x_mean,
                self.y_mean,
                self.x_m2,
                self.y_m2,
            )
        )


def _merge_mean(
    mean: float,
    m2: float,
    count: int,
    block: Float32,
    squares: float,
    total: float,
    scratch: Float32,
) -> tuple[float, float]:
    """Chan's merge of one block (its sum of squares and its sum) into (mean,
    squared deviations). The block's own deviations come from its sum of squares
    when that loses little to cancellation (the usual case: mean and spread of one
    size), else from a centred pass."""
    n = int(block.shape[0])
    block_mean = total / n
    block_m2 = squares - total * block_mean
    if not block_m2 >= 0.01 * squares:
        np.subtract(block, np.float32(block_mean), out=scratch)
        block_m2 = float(np.dot(scratch, scratch))
    merged = count + n
    delta = block_mean - mean
    return mean + delta * n / merged, m2 + block_m2 + delta * delta * count * n / merged


def _chunked(
    x: Float32, y: Float32, algorithms: Sequence[str], files: _Files
) -> MetricResults | None:
    """The metrics from block sums; ``None`` when a sum is not finite (the literal
    path then gives msaccucmp's exact special cases).

    Each numpy call is one pass over a block that stays in L2, so the cost is the
    number of calls: sums of products are BLAS dot products (the block with itself,
    the other block, the difference), the reductions go to the ufuncs directly, and
    every result lands in a buffer allocated once. The sums printed as they are
    (MeanAbsoluteError, the relative errors) are numpy's pairwise sums, as
    msaccucmp's: a BLAS dot with a vector of ones, twice as fast, accumulates in
    float32 with a bias when the values are alike (a golden off by one constant
    factor or offset): 4e-6 of the sum, which moves its sixth decimal. StandardDeviation's
    block sums, printed to three decimals, keep the dot."""
    wanted = set(algorithms)
    need_rel = bool(wanted & {ACC_REL, MAX_REL, MEAN_REL})
    need_std = STD in wanted
    need_kl = KL in wanted
    n = int(x.shape[0])
    size = min(CHUNK, n)
    diff = np.empty(size, np.float32)
    rel = np.empty(size, np.float32)
    scratch = np.empty(size, np.float32)
    ones = np.ones(size, np.float32)
    dot, add, minimum, maximum = np.dot, np.add.reduce, np.minimum.reduce, np.maximum.reduce
    s = _Sums()
    #: each block's smallest x and y (the KL pass floors only blocks that reach the minimum)
    lows: list[tuple[float, float]] = []
    if not need_kl:
        s.x_min = s.x_max = s.y_min = s.y_max = 0.0
    if not need_rel:
        s.rel_max = 0.0
    for start in range(0, n, CHUNK):
        xc, yc = x[start : start + CHUNK], y[start : start + CHUNK]
        m = int(xc.shape[0])
        d, r, t, o = diff[:m], rel[:m], scratch[:m], ones[:m]
        xx, yy = float(dot(xc, xc)), float(dot(yc, yc))
        s.xx += xx
        s.yy += yy
        s.xy += float(dot(xc, yc))
        np.subtract(xc, yc, out=d)
        s.dd += float(dot(d, d))
        np.absolute(d, out=d)
        s.abs_sum += float(add(d))
        s.abs_max = max(s.abs_max, float(maximum(d)))
        if need_kl:
            x_low, y_low = float(minimum(xc)), float(minimum(yc))
            lows.append((x_low, y_low))
            s.x_min, s.x_max = min(s.x_min, x_low), max(s.x_max, float(maximum(xc)))
            s.y_min, s.y_max = min(s.y_min, y_low), max(s.y_max, float(maximum(yc)))
        if need_rel:
            # |x/y - 1| as |x - y| / |y|: the same number, two passes fewer; a golden
            # at or under eps (rare) is masked after, in the blocks that hold one
            np.absolute(yc, out=t)
            np.divide(d, t, out=r)
            if not float(minimum(t)) > DOUBLE_EPS:
                np.putmask(r, t <= DOUBLE_EPS, np.float32(0))
            s.rel_sum += float(add(r))
            s.rel_max = max(s.rel_max, float(maximum(r)))
        if need_std:
            s.x_mean, s.x_m2 = _merge_mean(s.x_mean, s.x_m2, s.count, xc, xx, float(dot(xc, o)), t)
            s.y_mean, s.y_m2 = _merge_mean(s.y_mean, s.y_m2, s.count, yc, yy, float(dot(yc, o)), t)
            s.count += m
    if not s.finite():
        return None
    kl = _chunked_kl(x, y, s, lows, diff, rel, scratch) if need_kl else 0.0
    if not math.isfinite(kl):
        return None

    def compute(name: str) -> tuple[str, str]:
        if name == COSINE:
            if files.scalar:
                return format_value(1), "This tensor is scalar."
            nx, ny = math.sqrt(s.xx), math.sqrt(s.yy)
            return _cosine_from(nx, ny, lambda: s.xy / (nx * ny), files)
        if name == MAX_ABS:
            return format_value(s.abs_max), ""
        if name == ACC_REL:
            return format_value(s.rel_sum), ""
        if name == EUCLID:
            if s.yy**0.5 <= DOUBLE_EPS:
                return format_value(0.0), ""
            return format_value(math.sqrt(s.dd / s.yy)), ""
        if name == KL:
            return _kl_text(kl, files)
        if name == STD:
            return _std_text(s.x_mean, math.sqrt(s.x_m2 / n), s.y_mean, math.sqrt(s.y_m2 / n)), ""
        if name == MEAN_ABS:
            return format_value(s.abs_sum / n), ""
        if name == RMSE:
            return format_value(math.sqrt(s.dd / n)), ""
        if name == MAX_REL:
            return format_value(s.rel_max), ""
        if name == MEAN_REL:
            return format_value(s.rel_sum / n), ""
        raise AclmonError(f"unknown algorithm {name}")

    return _results(algorithms, compute)


def _chunked_kl(
    x: Float32,
    y: Float32,
    s: _Sums,
    lows: list[tuple[float, float]],
    a: Float32,
    b: Float32,
    ratio: Float32,
) -> float:
    """``sum P log(P/Q)`` with P, Q the normalised tensors, from block sums.

    P is ``max((x - min_x) / span_x, eps)`` over its sum, and so is
    ``a = max(x - min_x, eps * span_x)`` over its own (the span cancels in the
    quotient): one pass fewer. Q likewise, with ``b = max((y - min_y) * span_x /
    span_y, eps * span_x)``, so that ``a / b`` is the normalised ratio: close to
    1, its logarithm small, and the float32 dot product of ``a`` with it loses
    nothing to a large common term. The divergence is ``(1/Sa) sum a log(a/b) +
    log(Sb/Sa)``. The floor is applied only in blocks whose smallest value comes
    within it of the minimum (elsewhere ``x - min`` is above it already: the
    subtraction's rounding is monotone). ``Sa`` and ``Sb`` are numpy's pairwise
    sums: the two terms nearly cancel, so their relative error is the result's
    absolute error, and a BLAS dot with ones drifts by 1e-6 on such blocks.

    Q's scale cancels in the result (``log s`` enters both terms, once with each
    sign): it only keeps the logarithms small. When the two spans are within
    :data:`KL_SCALE_SLACK` of each other (a golden close to its NPU tensor) the
    logarithms are as small without it, and the pass is one multiplication
    shorter; ``b``'s floor is then P's over the scale."""
    x_low, y_low = np.float32(s.x_min), np.float32(s.y_min)
    x_span = np.float32(s.x_max) - x_low
    y_span = np.float32(s.y_max) - y_low
    # a side whose values are all equal is neither shifted nor scaled (msaccucmp
    # divides only by a nonzero span); Q's scale is P's span over its own
    x_shift = x_low if x_span != 0 else np.float32(0)
    y_shift = y_low if y_span != 0 else np.float32(0)
    unit = x_span if x_span != 0 else np.float32(1)
    y_scale = unit / y_span if y_span != 0 else unit
    floor = y_floor = SINGLE_EPS * unit
    if y_span != 0 and abs(float(y_scale) - 1) <= KL_SCALE_SLACK:
        y_floor, y_scale = floor / y_scale, np.float32(1)
    add = np.add.reduce
    sa = sb = sal = 0.0
    for block, start in enumerate(range(0, int(x.shape[0]), CHUNK)):
        xc, yc = x[start : start + CHUNK], y[start : start + CHUNK]
        m = int(xc.shape[0])
        ac, bc, rc = a[:m], b[:m], ratio[:m]
        x_least, y_least = lows[block]
        np.subtract(xc, x_shift, out=ac)
        if not np.float32(x_least) - x_shift >= floor:
            np.maximum(ac, floor, out=ac)
        np.subtract(yc, y_shift, out=bc)
        if y_scale != 1:
            np.multiply(bc, y_scale, out=bc)
        if not (np.float32(y_least) - y_shift) * y_scale >= y_floor:
            np.maximum(bc, y_floor, out=bc)
        sa += float(add(ac))
        sb += float(add(bc))
        np.divide(ac, bc, out=rc)
        np.log(rc, out=rc)
        sal += float(np.dot(ac, rc))
    return sal / sa + math.log(sb / sa)
