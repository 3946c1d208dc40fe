"""Memory copies take their direction from the pointers, as CANN does (the kind is a
reserved parameter), and a copy past the end of a device allocation is a device
fault (a clean error), never a write into host memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

from aclmon import acl_constants as C

from .test_flows import SAMPLES, run_sample


def test_host_read_back_async_and_2d_copies(acl, tmp_path):
    result = tmp_path / "result.json"
    run_sample("sample_memcpy.py", os.fspath(result))
    data = json.loads(result.read_text())
    expected = np.arange(256, dtype=np.float32)
    np.testing.assert_array_equal(data["read_back"], expected)
    np.testing.assert_array_equal(data["columns"], expected.reshape(16, 16)[:, :8])


def test_overrun_copy_is_a_device_fault_and_the_process_lives(tmp_path):
    """Run in its own interpreter: before, this copy killed the process (SIGSEGV)."""
    result = tmp_path / "result.json"
    code = (
        "import sys, aclmon.sim\n"
        f"aclmon.sim.run_script({os.fspath(SAMPLES / 'sample_memcpy.py')!r},"
        f" [{os.fspath(result)!r}, '--overrun'])\n"
    )
    env = {**os.environ, "ACLMON_SIM_CONFIG": '{"time_scale": 0}'}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(result.read_text())
    assert data["overrun_ret"] == C.ACL_ERROR_RT_SYS_DMA
    assert "past the end of its allocation (1000 bytes" in data["overrun_message"]
    # The async copy is queued; the stream's next synchronize reports the fault, once.
    assert data["async_overrun_ret"] == 0
    assert data["async_sync_ret"] == C.ACL_ERROR_RT_SYS_DMA
    assert data["after_ret"] == 0


def test_any_kind_copies_by_the_pointers(acl):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    host = np.arange(16, dtype=np.uint8)
    dev, _ = acl.rt.malloc(16, 0)
    ptr = acl.util.numpy_to_ptr(host)
    for kind in range(8):
        out = np.zeros(16, np.uint8)
        assert acl.rt.memcpy(dev, 16, ptr, 16, kind) == 0
        assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), 16, dev, 16, kind) == 0
        np.testing.assert_array_equal(out, host)
    assert acl.rt.memcpy(dev, 16, ptr, 16, 8) == C.ACL_ERROR_INVALID_PARAM


def test_device_fault_reaches_the_exception_callback_and_writes_nothing(acl):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    first, _ = acl.rt.malloc(64, 0)
    second, _ = acl.rt.malloc(64, 0)
    codes: list[int] = []
    assert (
        acl.rt.set_exception_info_callback(
            lambda info: codes.append(acl.rt.get_error_code_from_exception_info(info))
        )
        == 0
    )
    big = np.full(256, 7, np.uint8)
    assert acl.rt.memcpy(first, 256, acl.util.numpy_to_ptr(big), 256, 1) == (C.ACL_ERROR_RT_SYS_DMA)
    # An address between allocations is device memory nobody holds: a fault too.
    assert acl.rt.memcpy(first + 4096 * 1024, 16, acl.util.numpy_to_ptr(big), 16, 1) == (
        C.ACL_ERROR_RT_SYS_DMA
    )
    out = np.ones(64, np.uint8)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), 64, second, 64, 2) == 0
    assert not out.any()  # the neighbour was not written
    acl.rt.synchronize_device()
    assert codes[:2] == [C.ACL_ERROR_RT_SYS_DMA] * 2


def test_memcpy2d_only_crosses_between_host_and_device(acl):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    dev, _ = acl.rt.malloc(256, 0)
    host = np.arange(64, dtype=np.uint8)
    ptr = acl.util.numpy_to_ptr(host)
    assert acl.rt.memcpy2d(dev, 8, ptr, 16, 8, 4, 4) == 0
    assert acl.rt.memcpy2d(ptr, 8, ptr, 16, 8, 4, 1) == C.ACL_ERROR_RT_PARAM_INVALID
    assert acl.rt.memcpy2d(dev, 4, ptr, 16, 8, 4, 1) == C.ACL_ERROR_INVALID_PARAM
    stream, _ = acl.rt.create_stream()
    out = np.zeros(32, np.uint8)
    assert acl.rt.memcpy2d_async(acl.util.numpy_to_ptr(out), 8, dev, 8, 8, 4, 2, stream) == 0
    np.testing.assert_array_equal(out, host.reshape(4, 16)[:, :8].ravel())
