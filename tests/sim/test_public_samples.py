"""Programs written the way the public Ascend samples are written run unchanged on the sim.

Each runs as ``__main__`` with ``import acl`` served by the sim and its outputs
are checked against numpy recomputations of the same models.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import numpy as np
import pytest

from aclmon import acl_constants as C
from aclmon.sim import config as sim_config

from .test_flows import reference_resnet, run_sample


def _result(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.parametrize("run_mode", ["host", "device"])
@pytest.mark.parametrize("load_type", [0, 1])
def test_acllite_classifier_in_both_run_modes(acl, model_path, tmp_path, run_mode, load_type):
    sim_config.configure(run_mode=run_mode)
    result = tmp_path / "result.json"
    run_sample("acllite_classify.py", model_path["resnet_tiny"], os.fspath(result), str(load_type))
    data = _result(result)
    assert data["run_mode"] == (C.ACL_HOST if run_mode == "host" else C.ACL_DEVICE)
    image = np.array(data["input"], dtype=np.float16)
    expected = reference_resnet(image)
    np.testing.assert_allclose(np.array(data["output"]), expected, atol=2e-3)
    assert data["repeat_equal"]


def test_host_run_mode_copies_by_the_pointers_whatever_the_kind(acl):
    """On a PCIe card the kind is reserved: a DEVICE_TO_DEVICE copy from a numpy array
    is a host-to-device copy; only an async host-to-host copy is refused."""
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    host = np.arange(16, dtype=np.uint8)
    dev, ret = acl.rt.malloc(16, C.ACL_MEM_MALLOC_NORMAL_ONLY)
    assert ret == 0
    ptr = acl.util.numpy_to_ptr(host)
    assert acl.rt.memcpy(dev, 16, ptr, 16, C.ACL_MEMCPY_DEVICE_TO_DEVICE) == 0
    out = np.zeros(16, np.uint8)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), 16, dev, 16, 2) == 0
    np.testing.assert_array_equal(out, host)
    stream, _ = acl.rt.create_stream()
    assert (
        acl.rt.memcpy_async(ptr, 16, acl.util.numpy_to_ptr(out), 16, 0, stream)
        == C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT
    )


def test_device_run_mode_copies_any_direction_inside_the_device(acl):
    sim_config.configure(run_mode="device")
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    assert acl.rt.get_run_mode() == (C.ACL_DEVICE, 0)
    host = np.arange(16, dtype=np.uint8)
    dev, _ = acl.rt.malloc(16, C.ACL_MEM_MALLOC_NORMAL_ONLY)
    ptr = acl.util.numpy_to_ptr(host)
    assert acl.rt.memcpy(dev, 16, ptr, 16, C.ACL_MEMCPY_DEVICE_TO_DEVICE) == 0
    out = np.zeros(16, np.uint8)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), 16, dev, 16, C.ACL_MEMCPY_HOST_TO_DEVICE) == 0
    np.testing.assert_array_equal(out, host)


def test_async_classifier_survives_a_raising_callback(acl, model_path, tmp_path, capfd):
    sim_config.configure(time_scale=1.0)
    result = tmp_path / "result.json"
    run_sample("resnet_async_callback.py", model_path["resnet_tiny"], os.fspath(result))
    data = _result(result)
    assert data["sync_ret"] == 0
    assert data["dims"]["dims"] == [1, 10]
    assert sorted(data["outputs"]) == ["0", "2"]  # callback 1 raised, 2 still ran
    for key in ("0", "2"):
        image = np.array(data["images"][int(key)], dtype=np.float16)
        np.testing.assert_allclose(
            np.array(data["outputs"][key]), reference_resnet(image), atol=2e-3
        )
    assert "ValueError: a bug in the user's callback" in capfd.readouterr().err


MODELS = Path(__file__).parent / "samples" / "models"


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_dynamic_batch_model(acl, tmp_path):
    result = tmp_path / "result.json"
    run_sample(
        "acllite_dynamic.py",
        os.fspath(MODELS / "classifier_dyn_batch.json"),
        os.fspath(result),
        "batch",
    )
    data = _result(result)
    assert data["gears"] == {"batchCount": 3, "batch": [1, 2, 4]}
    assert data["input_dims"] == [-1, 3, 16, 16]
    assert data["num_inputs"] == 2 and data["mbatch_index"] == 1
    assert data["max_output_dims"] == [4, 4]
    weights = np.array(
        [0.5, -0.25, 1.0, 0.0, 0.75, 0.5, -1.0, 0.25, -0.5, 1.0, 0.25, 0.5], np.float32
    ).reshape(3, 4)
    for run in data["runs"]:
        batch = run["gear"][0]
        assert run["cur_dims"] == [batch, 4]
        image = np.array(run["input"], np.float16).astype(np.float32)
        pooled = image.mean(axis=(2, 3)).astype(np.float16).astype(np.float32)
        expected = _softmax((pooled @ weights).astype(np.float16).astype(np.float32))
        np.testing.assert_allclose(np.array(run["output"]), expected, atol=2e-3)
    assert data["rejected"]  # batch 3 is not a gear: 145013 and no execution


def test_dynamic_hw_model(acl, tmp_path):
    result = tmp_path / "result.json"
    run_sample(
        "acllite_dynamic.py", os.fspath(MODELS / "classifier_dyn_hw.json"), os.fspath(result), "hw"
    )
    data = _result(result)
    assert data["gears"] == {"hwCount": 3, "hw": [[8, 8], [16, 12], [32, 32]]}
    assert data["input_dims"] == [1, 3, -1, -1]
    assert data["max_output_dims"] == [1, 3, 32, 32]
    scale = np.array([2.0, -1.0, 0.5], np.float32).reshape(1, 3, 1, 1)
    for run in data["runs"]:
        height, width = run["gear"]
        assert run["cur_dims"] == [1, 3, height, width]
        image = np.array(run["input"], np.float32)
        np.testing.assert_allclose(np.array(run["output"]), np.maximum(image * scale, 0))


def test_dynamic_gear_errors(acl):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    model_id, ret = acl.mdl.load_from_file(os.fspath(MODELS / "classifier_dyn_batch.json"))
    assert ret == 0
    dataset = acl.mdl.create_dataset()
    small, _ = acl.rt.malloc(4, 0)
    acl.mdl.add_dataset_buffer(dataset, acl.create_data_buffer(small, 4))
    assert (
        acl.mdl.set_dynamic_batch_size(model_id, dataset, 0, 2)
        == C.ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID
    )
    assert acl.mdl.set_dynamic_batch_size(model_id, dataset, 5, 2) == C.ACL_ERROR_INVALID_PARAM
    assert acl.mdl.set_dynamic_hw_size(model_id + 99, dataset, 0, 8, 8) == (
        C.ACL_ERROR_INVALID_MODEL_ID
    )
    desc = acl.mdl.create_desc()
    assert acl.mdl.get_desc(desc, model_id) == 0
    assert acl.mdl.get_dynamic_hw(desc, -1) == ({"hwCount": 0, "hw": []}, 0)
    assert acl.mdl.get_input_size_by_index(desc, 1) == 8


def _nearest(plane: np.ndarray, height: int, width: int) -> np.ndarray:
    rows = [
        min(int((i + 0.5) * plane.shape[0] / height), plane.shape[0] - 1) for i in range(height)
    ]
    cols = [min(int((j + 0.5) * plane.shape[1] / width), plane.shape[1] - 1) for j in range(width)]
    return plane[np.ix_(rows, cols)]


@pytest.mark.parametrize("run_mode", ["host", "device"])
def test_dvpp_jpeg_decode_resize_into_a_model(acl, tmp_path, run_mode):
    from PIL import Image

    sim_config.configure(run_mode=run_mode)
    h, w = 44, 60
    yy, xx = np.mgrid[0:h, 0:w]
    rgb = np.stack([xx * 4, yy * 5, (xx + yy) * 2], axis=-1).astype(np.uint8)
    jpeg = tmp_path / "picture.jpg"
    Image.fromarray(rgb).save(jpeg, quality=95)
    result = tmp_path / "result.json"
    run_sample(
        "dvpp_classify.py",
        os.fspath(jpeg),
        os.fspath(MODELS / "yuv_row_means.json"),
        os.fspath(result),
    )
    data = _result(result)
    assert data["decoded"]["width"] == w and data["decoded"]["height"] == h
    assert (data["decoded"]["width_stride"], data["decoded"]["height_stride"]) == (128, 48)
    ycbcr = np.asarray(Image.open(jpeg).convert("YCbCr"), dtype=np.float32)
    y = ycbcr[:, :, 0]
    chroma = ycbcr[:, :, 1:].reshape(h // 2, 2, w // 2, 2, 2).mean(axis=(1, 3))
    uv = np.rint(chroma)  # NV12: U V U V ...
    expected_y = _nearest(y, 32, 32)
    expected_uv = _nearest(uv, 16, 16).reshape(16, 32)
    yuv = np.array(data["yuv"], np.uint8).reshape(48, 32)
    np.testing.assert_array_equal(yuv[:32], expected_y.astype(np.uint8))
    np.testing.assert_array_equal(yuv[32:], expected_uv.astype(np.uint8))
    expected = np.concatenate([expected_y, expected_uv]).mean(axis=1)
    np.testing.assert_allclose(np.array(data["output"]), expected, rtol=1e-6)


def test_jpeg_encode_batch_crop_and_png_decode(acl, tmp_path):
    from PIL import Image

    h, w = 48, 64
    yy, xx = np.mgrid[0:h, 0:w]
    rgb = np.stack([xx * 4, yy * 5, (xx + yy) * 2], axis=-1).astype(np.uint8)
    Image.fromarray(rgb).save(tmp_path / "picture.jpg", quality=95)
    Image.fromarray(rgb[:20, :30]).save(tmp_path / "picture.png")
    result = tmp_path / "result.json"
    run_sample(
        "dvpp_images.py",
        os.fspath(tmp_path / "picture.jpg"),
        os.fspath(tmp_path / "picture.png"),
        os.fspath(result),
    )
    data = _result(result)
    decoded = np.array(data["decoded"], np.uint8).reshape(72, 128)  # strides 128 x 48
    # JPEGE: a real JPEG of the decoded picture, close to it.
    encoded = Image.open(io.BytesIO(bytes.fromhex(data["encoded"])))
    assert (encoded.format, encoded.size) == ("JPEG", (w, h))
    luma = np.asarray(encoded.convert("YCbCr"), np.float32)[:, :, 0]
    assert np.abs(luma - decoded[:h, :w]).mean() < 3
    # Batch crop: the first box is the top-left 16 x 16, as is (no scaling).
    first = np.array(data["crops"][0], np.uint8).reshape(24, 16)
    np.testing.assert_array_equal(first[:16], decoded[:16, :16])
    np.testing.assert_array_equal(first[16:], decoded[48 : 48 + 8, :16])
    second = np.array(data["crops"][1], np.uint8).reshape(24, 16)
    np.testing.assert_array_equal(second[:16], decoded[9:40:2, 17:48:2])  # pixel centres
    # PNGD: RGB888 rows of 128 bytes, 16 rows aligned.
    assert data["png_layout"] == [30, 20, 128, 32]
    rows = np.array(data["png"], np.uint8).reshape(32, 128)
    np.testing.assert_array_equal(rows[:20, :90].reshape(20, 30, 3), rgb[:20, :30])


def test_media_without_pillow_says_so(acl, monkeypatch):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    # Without Pillow the JPEG calls answer ACL_ERROR_FEATURE_UNSUPPORTED, never an error.
    monkeypatch.setitem(__import__("sys").modules, "PIL", None)
    raw = np.frombuffer(b"\xff\xd8\xff\xe0" + bytes(60), np.uint8)
    size, ret = acl.media.dvpp_jpeg_predict_dec_size(acl.util.numpy_to_ptr(raw), raw.nbytes, 1)
    assert (size, ret) == (0, C.ACL_ERROR_FEATURE_UNSUPPORTED)
    assert "needs Pillow" in acl.get_recent_err_msg()


def test_run_mode_is_known_before_acl_init(acl):
    """acllite's image class reads the run mode when it is imported, before acl.init."""
    sim_config.configure(run_mode="device")
    assert acl.rt.get_run_mode() == (C.ACL_DEVICE, 0)
    sim_config.configure(run_mode="host")
    assert acl.rt.get_run_mode() == (C.ACL_HOST, 0)


@pytest.mark.parametrize("rows", [2, 8])
def test_dynamic_dims_model(acl, tmp_path, rows):
    result = tmp_path / "result.json"
    run_sample(
        "sample_dynamic_dims.py",
        os.fspath(MODELS / "masked_sum_dyn_dims.json"),
        os.fspath(result),
        str(rows),
    )
    data = _result(result)
    assert data["gear_count"] == 3
    assert [g["dims"] for g in data["gears"]] == [[2, 8, 2, 8], [4, 8, 4, 8], [8, 8, 8, 8]]
    assert all(g["dimCount"] == 4 for g in data["gears"])
    assert data["out_dims"]["dims"] == [rows]
    np.testing.assert_allclose(data["output"], data["expected"], rtol=1e-6)
    assert data["bad_ret"] == C.ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID


def test_static_models_have_no_dynamic_dims(acl, model_path):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    model_id, _ = acl.mdl.load_from_file(model_path["resnet_tiny"])
    desc = acl.mdl.create_desc()
    assert acl.mdl.get_desc(desc, model_id) == 0
    assert acl.mdl.get_input_dynamic_gear_count(desc, -1) == (0, 0)
    assert acl.mdl.get_input_dynamic_dims(desc, -1, 0)[1] == C.ACL_ERROR_INVALID_PARAM


def test_static_aipp_model_takes_the_dvpp_picture(acl, tmp_path):
    """A model with static AIPP (as ATC builds it from an aipp.cfg) is fed the resized
    YUV420SP picture straight from DVPP, as the image samples do."""
    from PIL import Image

    yy, xx = np.mgrid[0:44, 0:60]
    rgb = np.stack([xx * 4, yy * 5, (xx + yy) * 2], axis=-1).astype(np.uint8)
    Image.fromarray(rgb).save(tmp_path / "picture.jpg", quality=95)
    result = tmp_path / "result.json"
    model = MODELS / "aipp_channel_means.json"
    run_sample("dvpp_classify.py", os.fspath(tmp_path / "picture.jpg"), os.fspath(model),
               os.fspath(result))  # fmt: skip
    data = _result(result)
    planes = np.array(data["yuv"], np.float32).reshape(48, 32)
    y = planes[:32]
    uv = planes[32:].reshape(16, 16, 2).repeat(2, axis=0).repeat(2, axis=1)
    u, v = uv[:, :, 0] - 128, uv[:, :, 1] - 128
    rgb_planes = [
        np.clip(np.floor((256 * y + 359 * v) / 256), 0, 255),
        np.clip(np.floor((256 * y - 88 * u - 183 * v) / 256), 0, 255),
        np.clip(np.floor((256 * y + 454 * u) / 256), 0, 255),
    ]
    expected = [
        ((c - mean) * scale).astype(np.float16).astype(np.float32).mean()
        for c, mean, scale in zip(
            rgb_planes, (104, 117, 123), (0.0171, 0.0175, 0.0174), strict=True
        )
    ]
    np.testing.assert_allclose(np.array(data["output"]).ravel(), expected, rtol=2e-3, atol=2e-3)


def test_static_aipp_queries(acl):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    model_id, ret = acl.mdl.load_from_file(os.fspath(MODELS / "aipp_channel_means.json"))
    assert ret == 0
    desc = acl.mdl.create_desc()
    assert acl.mdl.get_desc(desc, model_id) == 0
    assert acl.mdl.get_input_dims(desc, 0)[0]["dims"] == [1, 32, 32, 3]
    assert acl.mdl.get_input_dims_v2(desc, 0)[0]["dims"] == [1, 48, 32, 1]
    assert acl.mdl.get_input_size_by_index(desc, 0) == 32 * 32 * 3 // 2
    assert acl.mdl.get_input_data_type(desc, 0) == C.ACL_UINT8
    assert acl.mdl.get_input_format(desc, 0) == C.ACL_FORMAT_NHWC
    assert acl.mdl.get_aipp_type(model_id, 0) == (1, 0, 0)
    other, _ = acl.mdl.load_from_file(os.fspath(MODELS / "yuv_row_means.json"))
    assert acl.mdl.get_aipp_type(other, 0) == (0, 0, 0)
