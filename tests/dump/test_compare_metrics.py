"""The ten msaccucmp metrics against an independent element-wise reference.

The reference below is written from the formulas of docs/reference/compare.md
alone: both tensors cast to float32 (as msaccucmp does), then every formula
evaluated element by element in float64. It shares no code with
``aclmon.dump.compare.metrics``; the two must print the same special cases and
agree on every number to float32 rounding.
"""

from __future__ import annotations

import math
import sys
from unittest import mock

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aclmon.dump.compare import metrics as m

EPS = float(np.finfo(np.float64).eps)
EPS32 = float(np.finfo(np.float32).eps)


def fmt(value: float) -> str:
    return f"{value:.6f}"


def reference(x, y, *, scalar, my_file="L", golden_file="R"):
    """Column -> (text, reason or "") computed element by element in float64."""
    a = np.asarray(x).reshape(-1).astype(np.float32).astype(np.float64)
    b = np.asarray(y).reshape(-1).astype(np.float32).astype(np.float64)
    out = {}
    with np.errstate(all="ignore"):
        # CosineSimilarity
        if scalar:
            out[m.COSINE] = ("1.000000", "This tensor is scalar.")
        else:
            nx = math.sqrt(sum(v * v for v in a))
            ny = math.sqrt(sum(v * v for v in b))
            if nx <= EPS and ny < EPS:
                out[m.COSINE] = ("1.0", "")
            elif nx**0.5 <= EPS:
                out[m.COSINE] = (
                    "NaN",
                    f"Cannot compare by Cosine Similarity. All the data is zero in {my_file}.",
                )
            elif ny**0.5 <= EPS:
                out[m.COSINE] = (
                    "NaN",
                    f"Cannot compare by Cosine Similarity. All the data is zero in {golden_file}.",
                )
            else:
                cos = sum((p / nx) * (q / ny) for p, q in zip(a, b, strict=True))
                out[m.COSINE] = (fmt(cos if math.isnan(cos) else min(cos, 1.0)), "")
        diffs = [p - q for p, q in zip(a, b, strict=True)]
        rel = [abs(p / q - 1) if abs(q) > EPS else 0.0 for p, q in zip(a, b, strict=True)]
        n = len(a)
        empty = "zero-size array to reduction operation maximum which has no identity"

        def failed(name):
            return ("NaN", f"Failed to execute 'compare' in '{name}'. {empty}")

        out[m.MAX_ABS] = (fmt(_max(abs(d) for d in diffs)), "") if n else failed(m.MAX_ABS)
        out[m.ACC_REL] = (fmt(sum(rel)), "")
        golden_squares = sum(q * q for q in b)
        if math.sqrt(golden_squares) <= EPS:
            out[m.EUCLID] = (fmt(0.0), "")
        else:
            out[m.EUCLID] = (fmt(math.sqrt(sum(d * d for d in diffs) / golden_squares)), "")
        if n:
            p, q = _normalised(a), _normalised(b)
            sp, sq = sum(p), sum(q)
            kl = sum(
                (u / sp) * math.log((u / sp) / (v / sq)) if not math.isnan(u + v) else math.nan
                for u, v in zip(p, q, strict=True)
            )
            kl = 0.0 if abs(kl) < EPS else kl
            out[m.KL] = (fmt(kl), "")
        else:
            out[m.KL] = failed(m.KL)
        out[m.STD] = (_std(a, b), "")
        out[m.MEAN_ABS] = (fmt(sum(abs(d) for d in diffs) / n if n else math.nan), "")
        out[m.RMSE] = (fmt(math.sqrt(sum(d * d for d in diffs) / n) if n else math.nan), "")
        out[m.MAX_REL] = (fmt(_max(rel)), "") if n else failed(m.MAX_REL)
        out[m.MEAN_REL] = (fmt(sum(rel) / n if n else math.nan), "")
    return out


def _max(values):
    values = list(values)
    if any(math.isnan(v) for v in values):
        return math.nan
    return max(values)


def _normalised(values):
    top, bottom = _max(values), -_max(-v for v in values)
    span = float(np.float32(top) - np.float32(bottom))
    scaled = [(v - bottom) / span for v in values] if span != 0 else list(values)
    return [v if math.isnan(v) else max(v, EPS32) for v in scaled]


def _std(a, b):
    shown = []
    for values in (a, b):
        n = len(values)
        mean = sum(values) / n if n else math.nan
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / n) if n else math.nan
        shown += [0.0 if abs(v) < 0.001 else v for v in (mean, std)]
    return "({:.3f};{:.3f}),({:.3f};{:.3f})".format(*shown)


def assert_agrees(got: m.MetricResults, expected, *, rel=3e-4, abs_=3e-6):
    for name, (text, reason) in expected.items():
        mine = got.values[name]
        if name == m.STD:
            assert _std_numbers(mine) == pytest.approx(
                _std_numbers(text), abs=1.5e-3, nan_ok=True
            ), name
            continue
        try:
            want = float(text)
        except ValueError:
            want = None
        if want is None or not math.isfinite(want) or text == "1.0":
            assert mine == text, (name, mine, text)
        else:
            assert math.isclose(float(mine), want, rel_tol=rel, abs_tol=abs_), (name, mine, text)
        if reason:
            assert reason in got.reasons, (name, reason, got.reasons)


def _std_numbers(text):
    return [float(v) for v in text.replace("(", "").replace(")", "").replace(";", ",").split(",")]


# ---------------------------------------------------------------- the fixed cases
def test_the_reference_examples_print_exactly():
    got = m.compare_arrays(np.array([1, 2, 3], np.float32), np.array([1, 2, 3.5], np.float32))
    assert list(got.values.values()) == [
        "0.997409", "0.500000", "0.142857", "0.120386", "0.005388",
        "(2.000;0.816),(2.167;1.027)", "0.166667", "0.288675", "0.142857", "0.047619",
    ]  # fmt: skip
    assert got.reasons == ()


def test_zero_and_empty_and_scalar_and_bool_cases():
    zeros = m.compare_arrays(np.zeros(3), np.zeros(3))
    assert zeros.values[m.COSINE] == "1.0" and zeros.values[m.KL] == "0.000000"
    left = m.compare_arrays(np.zeros(3), np.array([1, 2, 3.0]), my_file="L", golden_file="R")
    assert left.values[m.COSINE] == "NaN" and left.values[m.KL] == "4.852030"
    assert left.values[m.EUCLID] == "1.000000"
    assert "Cannot compare by Cosine Similarity. All the data is zero in L." in left.reasons
    right = m.compare_arrays(np.array([1, 2, 3.0]), np.zeros(3), golden_file="R")
    assert [right.values[k] for k in (m.ACC_REL, m.EUCLID, m.MAX_REL, m.MEAN_REL)] == [
        "0.000000"
    ] * 4
    assert right.values[m.KL] == "0.462097"
    scalar = m.compare_arrays(np.array([5.0]), np.array([4.0]))
    assert scalar.values[m.COSINE] == "1.000000" and scalar.values[m.EUCLID] == "0.250000"
    assert "This tensor is scalar." in scalar.reasons
    empty = m.compare_arrays(np.zeros(0, np.float32), np.zeros(0, np.float32))
    assert empty.values[m.COSINE] == "1.0"
    assert [empty.values[k] for k in (m.MAX_ABS, m.KL, m.MAX_REL)] == ["NaN"] * 3
    assert [empty.values[k] for k in (m.MEAN_ABS, m.RMSE, m.MEAN_REL)] == ["nan"] * 3
    assert empty.values[m.STD] == "(nan;nan),(nan;nan)"
    flags = m.compare_arrays(np.array([True, False]), np.array([True, True]))
    assert flags.values[m.COSINE] == "0.707107"
    assert all(v == "NaN" for k, v in flags.values.items() if k != m.COSINE)
    assert "Algorithm MaxAbsoluteError does not support Boolean types." in flags.reasons


def test_sizes_that_differ_give_nan_and_say_so():
    got = m.compare_arrays(np.zeros((2, 3)), np.zeros(5), my_file="a", golden_file="b")
    assert set(got.values.values()) == {"NaN"}
    assert got.reasons == (
        "The my output dump data size (6) in 'a' does not match the ground truth dump data size (5) in 'b'.",
    )


def test_algorithm_selection_keeps_the_order_given():
    assert m.parse_algorithms(["all"]) == m.ALGORITHMS
    assert m.parse_algorithms(["3,0", "kullbackleiblerdivergence"]) == (m.EUCLID, m.COSINE, m.KL)
    got = m.compare_arrays(np.ones(4), np.ones(4), (m.RMSE, m.COSINE))
    assert list(got.values) == [m.RMSE, m.COSINE]
    for bad in (["10"], ["Nope"], [""]):
        with pytest.raises(Exception, match="-alg"):
            m.parse_algorithms(bad)


# ---------------------------------------------------------------- random tensors
DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int32, np.int8]


@st.composite
def tensor_pairs(draw, special=False):
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=0, max_size=4)))
    size = math.prod(shape)
    dtype = draw(st.sampled_from(DTYPES))
    magnitude = st.floats(1e-3, 1e4) | st.just(0.0)
    signed = st.tuples(magnitude, st.booleans()).map(lambda t: -t[0] if t[1] else t[0])
    values = signed
    if special:
        values = signed | st.sampled_from([math.nan, math.inf, -math.inf])
    x = np.array(draw(st.lists(values, min_size=size, max_size=size)), dtype=np.float64)
    mode = draw(st.sampled_from(["near", "independent", "same", "zeros"]))
    if mode == "near":
        noise = np.array(draw(st.lists(st.floats(-0.1, 0.1), min_size=size, max_size=size)))
        y = x * (1 + noise)
    elif mode == "independent":
        y = np.array(draw(st.lists(values, min_size=size, max_size=size)), dtype=np.float64)
    elif mode == "same":
        y = x.copy()
    else:
        y = np.zeros(size)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        x = np.clip(np.nan_to_num(x), info.min, info.max)
        y = np.clip(np.nan_to_num(y), info.min, info.max)
    with np.errstate(all="ignore"):
        return x.astype(dtype).reshape(shape), y.astype(dtype).reshape(shape)


def check_against_reference(x, y):
    got = m.compare_arrays(x, y, my_file="L", golden_file="R")
    assert_agrees(got, reference(x, y, scalar=sum(x.shape) == len(x.shape)))


@settings(deadline=None, max_examples=300)
@given(tensor_pairs())
def test_every_metric_matches_the_element_wise_reference(pair):
    check_against_reference(*pair)


@settings(deadline=None, max_examples=200)
@given(tensor_pairs(special=True))
def test_nan_and_inf_follow_the_reference(pair):
    check_against_reference(*pair)


@settings(deadline=None, max_examples=25)
@given(
    st.integers(m.LITERAL_MAX + 1, 3 * m.CHUNK + 17),
    st.integers(0, 2**32 - 1),
    st.sampled_from([np.float32, np.float16, ml_dtypes.bfloat16]),
    st.floats(0.0, 0.5),
    st.sampled_from([0.0, 0.3]),
)
def test_large_tensors_take_the_block_path_and_agree(size, seed, dtype, noise, zero_share):
    """Tensors past LITERAL_MAX are summed block by block; the reference (float64,
    vectorised here for speed: the same element-wise formulas) must still agree."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 3, size)
    x[rng.random(size) < zero_share] = 0.0
    y = x * (1 + rng.normal(0, noise, size))
    x, y = x.astype(dtype), y.astype(dtype)
    got = m.compare_arrays(x, y)
    assert_agrees(got, _vector_reference(x, y), rel=2e-5)


def _vector_reference(x, y):
    a = x.astype(np.float32).astype(np.float64)
    b = y.astype(np.float32).astype(np.float64)
    n = a.size
    nx, ny = np.sqrt((a * a).sum()), np.sqrt((b * b).sum())
    d = a - b
    with np.errstate(all="ignore"):
        rel = np.where(np.abs(b) > EPS, np.abs(a / b - 1), 0.0)
    p, q = (np.maximum((v - v.min()) / (v.max() - v.min()), EPS32) for v in (a, b))
    pn, qn = p / p.sum(), q / q.sum()
    kl = float((pn * np.log(pn / qn)).sum())
    return {
        m.COSINE: (fmt(min((a * b).sum() / (nx * ny), 1.0)), ""),
        m.MAX_ABS: (fmt(np.abs(d).max()), ""),
        m.ACC_REL: (fmt(rel.sum()), ""),
        m.EUCLID: (fmt(np.sqrt((d * d).sum() / (b * b).sum())), ""),
        m.KL: (fmt(0.0 if abs(kl) < EPS else kl), ""),
        m.STD: (_std(a, b), ""),
        m.MEAN_ABS: (fmt(np.abs(d).sum() / n), ""),
        m.RMSE: (fmt(np.sqrt((d * d).sum() / n)), ""),
        m.MAX_REL: (fmt(rel.max()), ""),
        m.MEAN_REL: (fmt(rel.sum() / n), ""),
    }


def test_a_large_tensor_with_nan_or_inf_falls_back_to_the_literal_formulas():
    x = np.ones(m.LITERAL_MAX + 10, np.float32)
    y = x.copy()
    x[5] = np.nan
    got = m.compare_arrays(x, y)
    assert got.values[m.COSINE] == "nan" and got.values[m.MAX_ABS] == "nan"
    x[5] = np.inf
    got = m.compare_arrays(x, y)
    assert got.values[m.MAX_ABS] == "inf" and got.values[m.ACC_REL] == "inf"
    # a NaN in the golden is masked out of the relative errors, as msaccucmp does
    x[5], y[7] = 1.0, np.nan
    got = m.compare_arrays(x, y)
    assert got.values[m.ACC_REL] == "0.000000" and got.values[m.COSINE] == "nan"


def _one_shot(x, y):
    """The same call with every tensor on the literal path (the whole arrays at once)."""
    with mock.patch.object(m, "LITERAL_MAX", sys.maxsize):
        return m.compare_arrays(x, y, my_file="L", golden_file="R")


@settings(deadline=None, max_examples=20)
@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from(["none", "zeros_in_mine", "zeros_in_golden", "zeros_in_both"]),
    st.sampled_from(["x_low_last", "y_low_first", "spans_apart"]),
    st.sampled_from([0.0, 1e-3, 0.2]),
)
def test_the_block_path_equals_the_one_shot_path_across_block_borders(seed, zeros, extremes, noise):
    """Tensors of two blocks and a part: a run of zeros across the first border (a
    golden at 0 masks the relative errors in both blocks it touches), each side's
    minimum and maximum in different blocks (the KL divergence normalises by the
    whole tensor's, which the block path learns in its first pass and uses in a
    second: it is the one metric that reads the tensors twice). Both paths must
    print the same text to float32 rounding."""
    rng = np.random.default_rng(seed)
    size, border = 2 * m.CHUNK + 37, m.CHUNK
    x = rng.normal(1.0, 2.0, size).astype(np.float32)
    y = (x * (1 + rng.normal(0, noise, size))).astype(np.float32)
    run = slice(border - 40, border + 40)
    if zeros in ("zeros_in_mine", "zeros_in_both"):
        x[run] = 0
    if zeros in ("zeros_in_golden", "zeros_in_both"):
        y[run] = 0
    if extremes == "x_low_last":
        x[-3], x[5] = -50.0, 40.0
    elif extremes == "y_low_first":
        y[7], y[-9] = -60.0, 30.0
    else:
        x[border], y[border - 1] = 70.0, -70.0
    assert x.size > m.LITERAL_MAX
    assert_agrees(
        m.compare_arrays(x, y, my_file="L", golden_file="R"),
        _as_expected(_one_shot(x, y)),
        rel=2e-5,
    )


def _as_expected(results):
    """A result in the reference's form (column -> (text, reason))."""
    return {name: (text, "") for name, text in results.values.items()}


@pytest.mark.parametrize("where", [m.CHUNK - 1, m.CHUNK, 2 * m.CHUNK])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("side", ["mine", "golden"])
def test_nan_or_inf_at_a_block_border_prints_what_the_one_shot_path_prints(where, value, side):
    """A sum that is not finite sends the tensor back to the one-shot formulas, so
    the text is msaccucmp's to the letter, wherever the NaN or Inf stands."""
    rng = np.random.default_rng(where)
    x = rng.normal(0, 1, 2 * m.CHUNK + 5).astype(np.float32)
    y = (x * np.float32(1.01)).astype(np.float32)
    y[m.CHUNK - 3 : m.CHUNK + 3] = 0
    (x if side == "mine" else y)[where] = value
    blocks = m.compare_arrays(x, y, my_file="L", golden_file="R")
    assert blocks == _one_shot(x, y)


@pytest.mark.parametrize("golden", ["scaled", "offset"])
def test_alike_values_sum_without_a_bias_on_the_block_path(golden):
    """A golden off by one factor (every relative error the same) or one offset
    (every |x - y| the same): the printed sums stay within 1e-6 of the float64 sum,
    as msaccucmp's own pairwise float32 sum does (a float32 running sum of equal
    values drifts by 4e-6, which moves the sixth decimal of a sum in the hundreds)."""
    x = np.random.default_rng(3).normal(0, 1, 2 * m.CHUNK + 5).astype(np.float32)
    y = (x * np.float32(1.01) if golden == "scaled" else x + np.float32(0.7)).astype(np.float32)
    got = m.compare_arrays(x, y)
    expected = _vector_reference(x, y)
    for name in (m.ACC_REL, m.MEAN_ABS, m.MEAN_REL):
        assert float(got.values[name]) == pytest.approx(float(expected[name][0]), rel=1e-6), name


@pytest.mark.parametrize("noise", [0.0, 1e-5, 1e-3])
def test_the_kl_pass_without_the_golden_scale_prints_what_it_prints_with_it(noise):
    """Q's scale cancels in the KL divergence: leaving it out when both spans nearly
    agree (as the block pass does) must print the same as applying it."""
    rng = np.random.default_rng(11)
    x = rng.normal(2, 1, 2 * m.CHUNK + 9).astype(np.float32)
    y = (x * (1 + rng.normal(0, noise, x.size))).astype(np.float32)
    y[x.argmin()] = x.min()
    y[x.argmax()] = x.max() + np.float32(1e-3)  # spans 2e-4 apart: within the slack
    span_ratio = float((x.max() - x.min()) / (y.max() - y.min()))
    assert span_ratio != 1 and abs(span_ratio - 1) <= m.KL_SCALE_SLACK
    unscaled = m.compare_arrays(x, y, (m.KL,))
    with mock.patch.object(m, "KL_SCALE_SLACK", -1.0):
        scaled = m.compare_arrays(x, y, (m.KL,))
    assert unscaled == scaled
    assert_agrees(unscaled, {m.KL: _vector_reference(x, y)[m.KL]}, rel=2e-5)
