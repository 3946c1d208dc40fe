"""The Dumps pane's statistics: over the original shape, NaN/Inf coloured in the preview."""

from __future__ import annotations

import io

import numpy as np
from rich.console import Console
from rich.style import Style

from aclmon.tui.dumpdetail import decode_for_view, render_report

STYLES = {"dim": Style(dim=True), "bad": Style(color="red")}


def _nc1hwc0_dump(path, x: np.ndarray) -> None:
    """A dump file with one float32 NC1HWC0 output whose original shape is x.shape."""
    from aclmon.acl_constants import ACL_FLOAT, ACL_FORMAT_NC1HWC0
    from aclmon.sim import dumpfile

    n, c, h, w = x.shape
    device = np.zeros((n, 1, h, w, 16), np.float32)
    device[:, 0, :, :, :c] = x.transpose(0, 2, 3, 1)
    tensor = dumpfile.DumpTensor(
        ACL_FLOAT, ACL_FORMAT_NC1HWC0, device.shape, x.shape, device.tobytes()
    )
    path.write_bytes(dumpfile.encode_dump("relu1", 1700000000000000, [], [tensor]))


def test_pane_counts_the_original_shape_and_colours_nan(tmp_path):
    x = np.arange(12, dtype=np.float32).reshape(1, 3, 2, 2)
    x[0, 0, 0, 0] = np.nan
    path = tmp_path / "Relu.relu1.7.2.1700000000000000"
    _nc1hwc0_dump(path, x)
    report = decode_for_view(str(path))
    assert "error" not in report, report["error"]
    tensor = report["tensors"][0]
    assert tensor["original_shape"] == [1, 3, 2, 2]
    assert tensor["stats"]["count"] == 12 and tensor["stats"]["nan"] == 1
    assert tensor["stats"]["stored_stats"]["count"] == 64
    console = Console(width=120, record=True, color_system="standard", file=io.StringIO())
    console.print(render_report(report, STYLES))
    text = console.export_text(clear=False)
    assert "original [1, 3, 2, 2]" in text
    assert "12 in the original shape" in text
    assert "NaN, 1, 2, 3" in text
    ansi = console.export_text(styles=True)
    assert "\x1b[31mNaN\x1b[0m, 1, 2" in ansi  # the preview's NaN in the error colour
