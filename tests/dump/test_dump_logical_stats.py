"""Statistics of padded device layouts are taken over the tensor in its original shape.

A 1x20x7x7 NC1HWC0 tensor is stored as 1x2x7x7x16: 1,568 values of which 588
are padding zeros. ``decode`` must count the 980 values of the tensor, with the
NaN/Inf/zero counts of the converted array (the one ``convert -f`` writes).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from dumpfixtures import T, dump_bytes, write
from test_dump_cli import main
from test_dump_formats import CASES, host, to_fractal_nz, to_nc1hwc0

from aclmon.dump import convert_to_host
from aclmon.dump import proto_enums as pe
from aclmon.dump.stats import logical_tensor_stats, tensor_stats


def _special(x: np.ndarray) -> np.ndarray:
    """``x`` with a NaN, a +Inf, a -Inf and a few zeros in it (float32)."""
    flat = x.astype(np.float32).reshape(-1).copy()
    flat[3], flat[7], flat[11] = np.nan, np.inf, -np.inf
    flat[5] = flat[9] = 0.0
    return flat.reshape(x.shape)


def _counts(array: np.ndarray) -> dict[str, int]:
    return {
        "count": int(array.size),
        "nan": int(np.isnan(array).sum()),
        "pos_inf": int((array == np.inf).sum()),
        "neg_inf": int((array == -np.inf).sum()),
        "zeros": int((array == 0).sum()),
    }


def test_decode_json_counts_the_original_shape_of_an_nc1hwc0_tensor(tmp_path, capsys):
    x = _special(host((1, 20, 7, 7)))
    device = to_nc1hwc0(x, 16)
    assert device.size == 1568
    src = write(
        tmp_path,
        "Conv2D.conv1.7.2.1700000000000000",
        dump_bytes(
            outputs=[
                T(
                    device.tobytes(),
                    fmt=pe.FORMAT_NC1HWC0,
                    shape=device.shape,
                    original_shape=x.shape,
                )
            ]
        ),
    )
    assert main(["decode", "--json", str(src)]) == 0
    stats = json.loads(capsys.readouterr().out)["tensors"][0]["stats"]
    converted = convert_to_host(device, pe.FORMAT_NC1HWC0, x.shape)
    assert stats["count"] == math.prod(x.shape) == 980
    assert {k: stats[k] for k in _counts(converted)} == _counts(converted)
    finite = converted[np.isfinite(converted)]
    assert stats["mean"] == pytest.approx(float(finite.astype(np.float64).mean()))
    assert stats["shape"] == [1, 20, 7, 7]
    # the stored layout's figures are kept apart: 588 more zeros of padding
    stored = stats["stored_stats"]
    assert stored["count"] == 1568 and stored["zeros"] == stats["zeros"] + 588


@pytest.mark.parametrize("name,fmt,shape,forward", CASES, ids=[c[0] for c in CASES])
def test_every_padded_layout_counts_its_original_shape(name, fmt, shape, forward):
    x = _special(host(shape))
    device = forward(x)
    stats = logical_tensor_stats(device, fmt, shape)
    assert stats["count"] == math.prod(shape)
    assert {k: stats[k] for k in _counts(x)} == _counts(x)
    assert stats["first"][:3] == [float(v) for v in x.reshape(-1)[:3]]
    if device.size != x.size:
        assert stats["stored_stats"]["count"] == device.size


def test_unpadded_tensors_have_no_stored_stats():
    x = host((4, 5))
    stats = logical_tensor_stats(x, pe.FORMAT_ND, (4, 5))
    assert stats == tensor_stats(x)
    assert "stored_stats" not in logical_tensor_stats(x, pe.FORMAT_NC1HWC0, ())


def test_an_original_shape_that_does_not_fit_keeps_the_stored_figures():
    device = np.ones((1, 1, 2, 2, 16), np.float32)
    stats = logical_tensor_stats(device, pe.FORMAT_NC1HWC0, (1, 40, 2, 2))
    assert stats["count"] == 64 and "does not fit" in stats["logical_error"]


def test_decode_text_shows_logical_and_stored_figures(tmp_path, capsys):
    x = np.full((1, 3, 2, 2), np.inf, np.float32)
    device = to_nc1hwc0(x, 16)
    src = write(
        tmp_path,
        "Relu.relu1.7.2.1700000000000000",
        dump_bytes(
            outputs=[
                T(device.tobytes(), fmt=pe.FORMAT_NC1HWC0, shape=device.shape,
                  original_shape=x.shape)
            ]
        ),
    )  # fmt: skip
    assert main(["decode", str(src)]) == 0
    out = capsys.readouterr().out
    assert "12 values in the original shape  no finite values  nan 0  pos_inf 12" in out
    assert "stored layout (64 values, padding included): min 0  max 0" in out
    assert "None" not in out


def test_fractal_nz_with_batch_axes_decodes_and_converts_in_its_true_shape(tmp_path, capsys):
    x = host((2, 3, 33, 20))
    device = to_fractal_nz(x)
    src = write(
        tmp_path,
        "MatMul.mm.7.2.1700000000000000",
        dump_bytes(
            outputs=[
                T(device.tobytes(), fmt=pe.FORMAT_FRACTAL_NZ, shape=device.shape,
                  original_shape=x.shape)
            ]
        ),
    )  # fmt: skip
    assert main(["decode", "--json", str(src)]) == 0
    stats = json.loads(capsys.readouterr().out)["tensors"][0]["stats"]
    assert stats["shape"] == [2, 3, 33, 20] and stats["count"] == x.size
    out = tmp_path / "out"
    assert main(["convert", "-d", str(src), "-out", str(out), "-f", "ND", "-j", "1"]) == 0
    written = sorted(p.name for p in out.iterdir())
    assert written == ["MatMul.mm.7.2.1700000000000000.output.0.2x3x33x20.npy"]
    np.testing.assert_array_equal(np.load(out / written[0]), x)
