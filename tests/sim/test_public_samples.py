"""Programs written the way the public Ascend samples are written run unchanged on the sim.

Each runs as ``__main__`` with ``import acl`` served by the sim and its outputs
are checked against numpy recomputations of the same models.
"""

from __future__ import annotations

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


def test_host_run_mode_rejects_device_copies_of_host_memory(acl):
    """On a PCIe card a DEVICE_TO_DEVICE copy from a numpy array is an error."""
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    host = np.arange(16, dtype=np.uint8)
    dev, ret = acl.rt.malloc(16, C.ACL_MEM_MALLOC_NORMAL_ONLY)
    assert ret == 0
    ptr = acl.util.numpy_to_ptr(host)
    assert acl.rt.memcpy(dev, 16, ptr, 16, C.ACL_MEMCPY_DEVICE_TO_DEVICE) != 0
    assert acl.rt.memcpy(dev, 16, ptr, 16, C.ACL_MEMCPY_HOST_TO_DEVICE) == 0
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
