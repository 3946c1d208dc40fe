"""DVPP video through PyAV: VDEC of a short H.264 clip (acllite's video reader over a
local file) into VPC and a model, and VENC of generated frames, in both codecs."""

from __future__ import annotations

import json
import os
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from .test_flows import run_sample
from .test_public_samples import MODELS

GREYS = [60, 100, 140, 180, 220]


def _clip(path: Path, encoder: str, greys: list[int]) -> None:
    """A raw H.264/H.265 stream of flat grey 64 x 48 frames, one per level."""
    codec = av.CodecContext.create(encoder, "w")
    codec.width, codec.height, codec.pix_fmt = 64, 48, "yuv420p"
    codec.framerate, codec.time_base = Fraction(25), Fraction(1, 25)
    codec.options = {"preset": "ultrafast"} | (
        {"x265-params": "log-level=error"} if encoder == "libx265" else {}
    )
    data = b""
    for index, grey in enumerate(greys):
        planes = np.full((72, 64), 128, np.uint8)
        planes[:48] = grey
        frame = av.VideoFrame.from_ndarray(planes, format="yuv420p")
        frame.pts = index
        data += b"".join(bytes(p) for p in codec.encode(frame))
    data += b"".join(bytes(p) for p in codec.encode(None))
    path.write_bytes(data)


@pytest.mark.parametrize(("encoder", "suffix"), [("libx264", "h264"), ("libx265", "hevc")])
def test_vdec_clip_then_vpc_resize_then_a_model(acl, tmp_path, encoder, suffix):
    clip = tmp_path / f"clip.{suffix}"
    _clip(clip, encoder, GREYS)
    result = tmp_path / "result.json"
    run_sample(
        "video_classify.py", os.fspath(clip), os.fspath(MODELS / "yuv_row_means.json"),
        os.fspath(result),
    )  # fmt: skip
    data = json.loads(result.read_text())
    assert [
        (f["width"], f["height"], f["width_stride"], f["height_stride"]) for f in data["frames"]
    ] == [(64, 48, 64, 48)] * len(GREYS)
    np.testing.assert_allclose([f["y_mean"] for f in data["frames"]], GREYS, atol=2)
    for grey, output in zip(GREYS, data["outputs"], strict=True):
        np.testing.assert_allclose(output[:32], grey, atol=2)  # the resized luma rows
        np.testing.assert_allclose(output[32:], 128, atol=2)  # flat chroma


@pytest.mark.parametrize("codec", ["h264", "h265"])
def test_venc_of_generated_frames_decodes_back(acl, tmp_path, codec, capfd):
    stream = tmp_path / "out.bin"
    run_sample("sample_venc.py", os.fspath(stream), codec, "5")
    assert "frames [0, 1, 2, 3, 4]" in capfd.readouterr().out
    decoder = av.CodecContext.create("hevc" if codec == "h265" else "h264", "r")
    frames = []
    for packet in [*decoder.parse(stream.read_bytes()), *decoder.parse(b""), None]:
        frames.extend(decoder.decode(packet))
    assert [(f.width, f.height) for f in frames] == [(64, 48)] * 5
    lumas = [f.to_ndarray(format="yuv420p")[:48].mean() for f in frames]  # the Y plane
    np.testing.assert_allclose(lumas, [40, 60, 80, 100, 120], atol=3)
