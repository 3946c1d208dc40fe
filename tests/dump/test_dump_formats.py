"""Format conversion against layouts built element by element from the reference tables.

The device buffers here are filled with explicit index loops (the forward
mapping, written independently of the reshape/transpose code under test).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from dumpfixtures import T, dump_bytes, write
from hypothesis import given, settings
from hypothesis import strategies as st

from aclmon.dump import convert_to_host, read_dump
from aclmon.dump import proto_enums as pe
from aclmon.dump.formats import FormatError, can_convert


def host(shape, dtype=np.float32):
    return (np.arange(int(np.prod(shape))) + 1).astype(dtype).reshape(shape)


def ceil_div(a, b):
    return -(-a // b)


def to_nc1hwc0(x, c0):
    n, c, h, w = x.shape
    c1 = ceil_div(c, c0)
    dev = np.zeros((n, c1, h, w, c0), x.dtype)
    for ni, ci, hi, wi in itertools.product(range(n), range(c), range(h), range(w)):
        dev[ni, ci // c0, hi, wi, ci % c0] = x[ni, ci, hi, wi]
    return dev


def to_ndc1hwc0(x, c0=16):
    n, c, d, h, w = x.shape
    dev = np.zeros((n, d, ceil_div(c, c0), h, w, c0), x.dtype)
    for ni, ci, di, hi, wi in itertools.product(range(n), range(c), range(d), range(h), range(w)):
        dev[ni, di, ci // c0, hi, wi, ci % c0] = x[ni, ci, di, hi, wi]
    return dev


def to_fractal_z(x, c0=16, n0=16):
    n, c, h, w = x.shape
    c1, n1 = ceil_div(c, c0), ceil_div(n, n0)
    dev = np.zeros((c1 * h * w, n1, n0, c0), x.dtype)
    for ni, ci, hi, wi in itertools.product(range(n), range(c), range(h), range(w)):
        dev[(ci // c0) * h * w + hi * w + wi, ni // n0, ni % n0, ci % c0] = x[ni, ci, hi, wi]
    return dev


def to_c1hwncoc0(x, c0=16):
    n, c, h, w = x.shape
    dev = np.zeros((ceil_div(c, c0), h, w, n, c0, c0), x.dtype)
    for ni, ci, hi, wi in itertools.product(range(n), range(c), range(h), range(w)):
        dev[ci // c0, hi, wi, ni, ci % c0, ci % c0] = x[ni, ci, hi, wi]
    return dev


def to_fractal_nz(x, c0=16, n0=16):
    *batch, rows, cols = x.shape
    b = int(np.prod(batch)) if batch else 1
    flat = x.reshape(b, rows, cols)
    dev = np.zeros((b, ceil_div(cols, c0), ceil_div(rows, n0), n0, c0), x.dtype)
    for bi, r, c in itertools.product(range(b), range(rows), range(cols)):
        dev[bi, c // c0, r // n0, r % n0, c % c0] = flat[bi, r, c]
    return dev.reshape(*batch, *dev.shape[1:]) if batch else dev[0]


CASES = [
    ("NC1HWC0", pe.FORMAT_NC1HWC0, (2, 19, 3, 2), lambda x: to_nc1hwc0(x, 16)),
    ("NC1HWC0_C04", pe.FORMAT_NC1HWC0_C04, (1, 3, 2, 5), lambda x: to_nc1hwc0(x, 4)),
    ("NDC1HWC0", pe.FORMAT_NDC1HWC0, (1, 18, 2, 2, 3), to_ndc1hwc0),
    ("FRACTAL_Z", pe.FORMAT_FRACTAL_Z, (17, 20, 3, 2), to_fractal_z),
    ("C1HWNCoC0", pe.FORMAT_C1HWNCoC0, (3, 17, 2, 2), to_c1hwncoc0),
    ("FRACTAL_NZ_2d", pe.FORMAT_FRACTAL_NZ, (20, 35), to_fractal_nz),
    ("FRACTAL_NZ_batched", pe.FORMAT_FRACTAL_NZ, (2, 3, 5, 17), to_fractal_nz),
]


@pytest.mark.parametrize("name,fmt,shape,forward", CASES, ids=[c[0] for c in CASES])
def test_conversion_inverts_the_device_layout(name, fmt, shape, forward):
    x = host(shape)
    device = forward(x)
    got = convert_to_host(device, fmt, shape)
    # the original shape itself (FRACTAL_NZ keeps its batch axes, unlike msaccucmp)
    assert got.shape == x.shape
    np.testing.assert_array_equal(got, x)


def test_fractal_nz_with_a_1d_target_stays_1d():
    x = host((1, 20))
    got = convert_to_host(to_fractal_nz(x), pe.FORMAT_FRACTAL_NZ, (20,))
    assert got.shape == (20,)
    np.testing.assert_array_equal(got, x[0])


def test_fractal_nz_with_two_batch_axes_keeps_them():
    """2x3x33x20 stays 2x3x33x20 (msaccucmp folds the batch axes into 6x33x20)."""
    x = host((2, 3, 33, 20))
    got = convert_to_host(to_fractal_nz(x), pe.FORMAT_FRACTAL_NZ, x.shape)
    assert got.shape == (2, 3, 33, 20)
    np.testing.assert_array_equal(got, x)


@pytest.mark.parametrize("dtype", [np.float16, np.int32, np.int8])
def test_conversion_keeps_dtype(dtype):
    x = host((1, 5, 2, 2), dtype)
    got = convert_to_host(to_nc1hwc0(x, 16), pe.FORMAT_NC1HWC0, x.shape)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, x)


def test_conversion_through_a_dump_file(tmp_path):
    x = host((1, 20, 2, 3))
    device = to_nc1hwc0(x, 16)
    data = dump_bytes(
        outputs=[
            T(device.tobytes(), fmt=pe.FORMAT_NC1HWC0, shape=device.shape, original_shape=x.shape)
        ]
    )
    tensor = read_dump(write(tmp_path, "Conv.c.1.1.1700000000000000", data)).outputs[0]
    np.testing.assert_array_equal(
        convert_to_host(tensor.array, tensor.format, tensor.original_shape), x
    )


def test_without_target_the_padding_stays():
    x = host((1, 3, 1, 1))
    got = convert_to_host(to_nc1hwc0(x, 16), pe.FORMAT_NC1HWC0, None)
    assert got.shape == (1, 16, 1, 1)
    np.testing.assert_array_equal(got[:, :3], x)


@pytest.mark.parametrize(
    "fmt,array_shape,target",
    [
        (pe.FORMAT_FRACTAL_NZ, (1, 1, 16, 16), None),
        (pe.FORMAT_FRACTAL_NZ, (1, 1, 16, 16), (17, 3)),
        (pe.FORMAT_FRACTAL_Z, (5, 1, 16, 16), (16, 16, 2, 2)),
        (pe.FORMAT_NC1HWC0, (1, 1, 2, 2), (1, 3, 2, 2)),
        (pe.FORMAT_NC1HWC0, (1, 1, 2, 2, 16), (1, 17, 2, 2)),
        (pe.FORMAT_C1HWNCoC0, (1, 1, 1, 1, 16, 4), None),
        (pe.FORMAT_ND, (4,), None),
    ],
)
def test_impossible_conversions_raise_format_error(fmt, array_shape, target):
    with pytest.raises(FormatError):
        convert_to_host(np.zeros(array_shape, np.float32), fmt, target)


NHWC_FROM_NCHW = (0, 2, 3, 1)
HWCN_FROM_NCHW = (2, 3, 1, 0)


@pytest.mark.parametrize(
    "fmt,forward",
    [
        (pe.FORMAT_NC1HWC0, lambda x: to_nc1hwc0(x, 16)),
        (pe.FORMAT_NC1HWC0_C04, lambda x: to_nc1hwc0(x, 4)),
    ],
)
@pytest.mark.parametrize(
    "dst,perm", [(pe.FORMAT_NHWC, NHWC_FROM_NCHW), (pe.FORMAT_HWCN, HWCN_FROM_NCHW)]
)
def test_nc1hwc0_to_other_host_layouts(fmt, forward, dst, perm):
    x = host((2, 5, 3, 2))
    expected = x.transpose(perm)
    got = convert_to_host(forward(x), fmt, expected.shape, dst)
    np.testing.assert_array_equal(got, expected)


def test_fractal_z_to_hwcn_takes_the_target_in_hwcn_order():
    x = host((17, 20, 3, 2))
    expected = x.transpose(HWCN_FROM_NCHW)
    got = convert_to_host(to_fractal_z(x), pe.FORMAT_FRACTAL_Z, expected.shape, pe.FORMAT_HWCN)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(
    "src,src_perm,dst,dst_perm",
    [
        (pe.FORMAT_NCHW, (0, 1, 2, 3), pe.FORMAT_NHWC, NHWC_FROM_NCHW),
        (pe.FORMAT_NHWC, NHWC_FROM_NCHW, pe.FORMAT_NCHW, (0, 1, 2, 3)),
        (pe.FORMAT_NHWC, NHWC_FROM_NCHW, pe.FORMAT_HWCN, HWCN_FROM_NCHW),
        (pe.FORMAT_HWCN, HWCN_FROM_NCHW, pe.FORMAT_NCHW, (0, 1, 2, 3)),
        (pe.FORMAT_HWCN, HWCN_FROM_NCHW, pe.FORMAT_NHWC, NHWC_FROM_NCHW),
    ],
)
def test_host_layout_transposes(src, src_perm, dst, dst_perm):
    x = host((2, 3, 4, 5))
    got = convert_to_host(x.transpose(src_perm), src, None, dst)
    np.testing.assert_array_equal(got, x.transpose(dst_perm))


def test_pairs_without_a_converter():
    assert not can_convert(pe.FORMAT_ND, pe.FORMAT_NCHW)
    assert not can_convert(pe.FORMAT_C1HWNCoC0, pe.FORMAT_NHWC)
    with pytest.raises(FormatError, match="no conversion from ND to NCHW"):
        convert_to_host(np.zeros(4), pe.FORMAT_ND, None, pe.FORMAT_NCHW)


HOST_OF = {
    pe.FORMAT_NC1HWC0: pe.FORMAT_NCHW,
    pe.FORMAT_NC1HWC0_C04: pe.FORMAT_NCHW,
    pe.FORMAT_NDC1HWC0: pe.FORMAT_NCDHW,
    pe.FORMAT_FRACTAL_Z: pe.FORMAT_NCHW,
    pe.FORMAT_C1HWNCoC0: pe.FORMAT_NCHW,
    pe.FORMAT_FRACTAL_NZ: pe.FORMAT_ND,
}


@pytest.mark.parametrize("name,fmt,shape,forward", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_every_device_format_through_a_dump_file_and_convert(
    tmp_path, name, fmt, shape, forward, dtype
):
    from aclmon.dump import ConvertOptions, convert_file

    proto_dtype = {np.float16: pe.DT_FLOAT16, np.float32: pe.DT_FLOAT}[dtype]
    x = host(shape, dtype)
    device = forward(x)
    data = dump_bytes(
        inputs=[
            T(
                device.tobytes(),
                dtype=proto_dtype,
                fmt=fmt,
                shape=device.shape,
                original_shape=shape,
            )
        ]
    )
    src = write(tmp_path, f"Op.{name}.1.2.1700000000000000", data)
    result = convert_file(src, tmp_path, ConvertOptions(HOST_OF[fmt]))
    assert result.error is None and result.warnings == [] and len(result.written) == 1
    got = np.load(result.written[0])
    expected = x
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, expected)
    assert result.written[0].endswith(f".input.0.{'x'.join(str(d) for d in expected.shape)}.npy")


def test_msaccucmp_aliases_nz_to_nhwc_and_ndc1hwc0_to_nd():
    x = host((20, 35))
    np.testing.assert_array_equal(
        convert_to_host(to_fractal_nz(x), pe.FORMAT_FRACTAL_NZ, x.shape, pe.FORMAT_NHWC), x
    )
    y = host((1, 18, 2, 2, 3))
    device = to_ndc1hwc0(y)
    np.testing.assert_array_equal(
        convert_to_host(device, pe.FORMAT_NDC1HWC0, y.shape, pe.FORMAT_ND), y
    )
    # a target that is not 5-D: converted to NCDHW but not cropped
    padded = convert_to_host(device, pe.FORMAT_NDC1HWC0, (18, 12), pe.FORMAT_ND)
    assert padded.shape == (1, 32, 2, 2, 3)
    np.testing.assert_array_equal(padded[:, :18], y)


def test_padded_formats_convert_in_one_pass_to_what_convert_to_host_gives():
    """``convert -f`` of NC1HWC0 cropped to its shape writes into the
    final array at once: the same values, shape and dtype as the two-step path."""
    import itertools

    from aclmon.dump.formats import convert_contiguous

    nc1hwc0 = np.arange(2 * 3 * 2 * 3 * 16, dtype=np.float16).reshape(2, 3, 2, 3, 16)
    for dst, (n, c, h, w) in itertools.product(
        (pe.FORMAT_NCHW, pe.FORMAT_NHWC, pe.FORMAT_HWCN),
        [(2, 48, 2, 3), (1, 35, 2, 2), (2, 16, 1, 3), (2, 7, 2, 3), (0, 5, 2, 3)],
    ):
        order = {pe.FORMAT_NCHW: (n, c, h, w), pe.FORMAT_NHWC: (n, h, w, c)}
        target = order.get(dst, (h, w, c, n))
        for src in (pe.FORMAT_NC1HWC0, pe.FORMAT_NC1HWC0_C04):
            got = convert_contiguous(nc1hwc0, src, target, dst)
            want = convert_to_host(nc1hwc0, src, target, dst)
            assert got is not None and got.flags.c_contiguous and got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    nz = np.arange(2 * 3 * 2 * 16 * 16, dtype=np.float32).reshape(2, 3, 2, 16, 16)
    # shapes that do not fit are left to convert_to_host, which says why
    assert convert_contiguous(nc1hwc0, pe.FORMAT_NC1HWC0, (2, 49, 2, 3), pe.FORMAT_NCHW) is None
    assert convert_contiguous(nz, pe.FORMAT_FRACTAL_NZ, (2, 32, 48), pe.FORMAT_ND) is None
    assert convert_contiguous(nz, pe.FORMAT_FRACTAL_Z, (2, 3, 4, 4), pe.FORMAT_NCHW) is None


# ---------------------------------------------------------------- one pass, any shape
_NCHW_TO = {
    pe.FORMAT_NCHW: (0, 1, 2, 3),
    pe.FORMAT_NHWC: (0, 2, 3, 1),
    pe.FORMAT_HWCN: (2, 3, 1, 0),
}


@pytest.mark.parametrize(
    "shape",
    [(16, 16), (17, 16), (16, 17), (1, 1), (33, 100), (5,), (2, 3, 15, 31), (3, 1, 48), (0, 20)],
)
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_fractal_nz_is_one_contiguous_array_without_its_padding(shape, dtype):
    x = host(shape, dtype)
    got = convert_to_host(
        to_fractal_nz(x if len(shape) > 1 else x.reshape(1, -1)), pe.FORMAT_FRACTAL_NZ, shape
    )
    assert got.flags.c_contiguous and got.dtype == dtype and got.shape == shape
    np.testing.assert_array_equal(got, x)


@settings(max_examples=60, deadline=None)
@given(
    batch=st.lists(st.integers(1, 3), max_size=2),
    rows=st.integers(1, 40),
    cols=st.integers(1, 40),
    dtype=st.sampled_from([np.float16, np.float32, np.int8]),
)
def test_fractal_nz_matches_the_element_by_element_layout(batch, rows, cols, dtype):
    x = host((*batch, rows, cols), dtype)
    got = convert_to_host(to_fractal_nz(x), pe.FORMAT_FRACTAL_NZ, x.shape)
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, x)


@settings(max_examples=60, deadline=None)
@given(
    nchw=st.tuples(st.integers(1, 3), st.integers(1, 40), st.integers(1, 4), st.integers(1, 4)),
    c0=st.sampled_from([16, 4]),
    dst=st.sampled_from(sorted(_NCHW_TO)),
    cropped=st.booleans(),
)
def test_nc1hwc0_in_one_pass_matches_the_element_by_element_layout(nchw, c0, dst, cropped):
    """Cropped to its shape, or (without one) padded to whole C0 groups."""
    from aclmon.dump.formats import convert_contiguous

    x = host(nchw, np.float16)
    device = to_nc1hwc0(x, c0)
    src = pe.FORMAT_NC1HWC0 if c0 == 16 else pe.FORMAT_NC1HWC0_C04
    if cropped:
        want = x.transpose(_NCHW_TO[dst])
    else:  # padded with the zeros of the last C0 group
        n, c, h, w = nchw
        want = np.zeros((n, ceil_div(c, c0) * c0, h, w), x.dtype)
        want[:, :c] = x
        want = want.transpose(_NCHW_TO[dst])
    got = convert_contiguous(device, src, want.shape if cropped else None, dst)
    assert got is not None and got.flags.c_contiguous and got.dtype == x.dtype
    np.testing.assert_array_equal(got, want)
