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


def test_vdec_frames_without_a_picture_still_get_their_callback(acl):
    """Data the decoder cannot use: the frame's callback runs at the end of the
    stream with the output's ret_code set, and the channel closes cleanly."""
    import threading

    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    seen: list[tuple[int, int]] = []
    running = threading.Event()

    def report_loop(args):
        while not running.is_set():
            acl.rt.process_report(50)

    thread_id, _ = acl.util.start_thread(report_loop, [])
    channel = acl.media.vdec_create_channel_desc()
    acl.media.vdec_set_channel_desc_thread_id(channel, thread_id)
    acl.media.vdec_set_channel_desc_callback(
        channel,
        lambda stream, pic, user: seen.append((user, acl.media.dvpp_get_pic_desc_ret_code(pic))),
    )
    assert acl.media.vdec_create_channel(channel) == 0
    garbage = np.frombuffer(b"\x00\x00\x01\x65" + bytes(range(200)), np.uint8)
    data, _ = acl.media.dvpp_malloc(garbage.nbytes)
    acl.rt.memcpy(data, garbage.nbytes, acl.util.numpy_to_ptr(garbage), garbage.nbytes, 1)
    stream = acl.media.dvpp_create_stream_desc()
    acl.media.dvpp_set_stream_desc_data(stream, data)
    acl.media.dvpp_set_stream_desc_size(stream, garbage.nbytes)
    pic = acl.media.dvpp_create_pic_desc()
    out, _ = acl.media.dvpp_malloc(64 * 48 * 3 // 2)
    acl.media.dvpp_set_pic_desc_data(pic, out)
    config = acl.media.vdec_create_frame_config()
    assert acl.media.vdec_send_frame(channel, stream, pic, config, 7) in (0, 100000)
    assert acl.media.vdec_destroy_channel(channel) == 0
    running.set()
    acl.util.stop_thread(thread_id)
    assert seen == [(7, 100000)]
