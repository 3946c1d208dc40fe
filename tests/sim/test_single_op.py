"""acl.op: single operators run from their descriptions, checked against numpy."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from aclmon import acl_constants as C

from .test_flows import run_sample


def _run(tmp_path, *args: str) -> dict:
    result = tmp_path / "result.json"
    run_sample("sample_single_op.py", os.fspath(result), *args)
    return json.loads(result.read_text())


def test_add_and_a_cast_matmul_chain_match_numpy(acl, tmp_path):
    data = _run(tmp_path)
    np.testing.assert_array_equal(data["sum"], np.add(data["a"], data["b"]))
    x = np.array(data["x"], np.float32).astype(np.float16).astype(np.float32)
    w = np.array(data["w"], np.float32).astype(np.float16).astype(np.float32)
    expected = (x @ w.T).astype(np.float16).astype(float)
    np.testing.assert_allclose(data["matmul"], expected, rtol=1e-3, atol=1e-3)


def test_unmatched_and_unknown_operators_name_the_operator(acl, tmp_path):
    data = _run(tmp_path, "--missing")
    assert data["unmatched_ret"] == C.ACL_ERROR_OP_NOT_FOUND
    assert "no operator model matches Add" in data["unmatched_message"]
    assert data["no_kernel_ret"] == C.ACL_ERROR_KERNEL_NOT_FOUND
    assert "'Erfinv' has no simulated kernel" in data["no_kernel_message"]


def _tensor(acl, array: np.ndarray, acl_type: int) -> tuple[int, int, int]:
    desc = acl.create_tensor_desc(acl_type, list(array.shape), C.ACL_FORMAT_ND)
    ptr, _ = acl.rt.malloc(max(array.nbytes, 1), 0)
    if array.nbytes:
        acl.rt.memcpy(ptr, array.nbytes, acl.util.numpy_to_ptr(array), array.nbytes, 1)
    return desc, acl.create_data_buffer(ptr, array.nbytes), ptr


def _read(acl, ptr: int, shape: tuple[int, ...], dtype: type) -> np.ndarray:
    out = np.zeros(shape, dtype)
    acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, ptr, out.nbytes, 2)
    return out


CASES = [
    ("Sub", [np.float32, np.float32], {}, lambda a, b: a - b),
    ("Mul", [np.float32, np.float32], {}, lambda a, b: a * b),
    ("Div", [np.float32, np.float32], {}, lambda a, b: a / b),
    ("Relu", [np.float32], {}, lambda a: np.maximum(a, 0)),
    ("Softmax", [np.float32], {"axis": -1}, None),
    ("Transpose", [np.float32], {"perm": [1, 0]}, lambda a: a.T),
    ("ReduceSum", [np.float32], {"axes": [1], "keep_dims": False}, lambda a: a.sum(axis=1)),
    ("ReduceMean", [np.float32], {"axes": [0], "keep_dims": True}, lambda a: a.mean(0, keepdims=True)),
    ("StridedSlice", [np.float32], {"begin": [0, 1], "end": [4, 6], "strides": [2, 2]},
     lambda a: a[0:4:2, 1:6:2]),
    ("ConcatD", [np.float32, np.float32], {"concat_dim": 0}, lambda a, b: np.concatenate([a, b])),
]  # fmt: skip


@pytest.mark.parametrize(("op_type", "dtypes", "attrs", "reference"), CASES)
def test_compiled_operators_match_numpy(acl, op_type, dtypes, attrs, reference):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    rng = np.random.default_rng(5)
    arrays = [rng.uniform(0.5, 2.0, (4, 8)).astype(t) for t in dtypes]
    if reference is None:
        wide = np.exp(arrays[0] - arrays[0].max(-1, keepdims=True))
        expected = wide / wide.sum(-1, keepdims=True)
    else:
        expected = np.asarray(reference(*arrays))
    inputs = [_tensor(acl, a, C.ACL_FLOAT) for a in arrays]
    out_desc, out_buf, out_ptr = _tensor(acl, np.zeros(expected.shape, np.float32), C.ACL_FLOAT)
    attr = acl.op.create_attr()
    for name, value in attrs.items():
        if isinstance(value, list):
            assert acl.op.set_attr_list_int(attr, name, value) == 0
        elif isinstance(value, bool):
            assert acl.op.set_attr_bool(attr, name, int(value)) == 0
        else:
            assert acl.op.set_attr_int(attr, name, value) == 0
    descs = [d for d, _, _ in inputs]
    buffers = [b for _, b, _ in inputs]
    ret = acl.op.compile_and_execute(
        op_type, descs, buffers, [out_desc], [out_buf], attr, 0, 0, None, 0
    )
    assert ret == 0, acl.get_recent_err_msg()
    assert acl.rt.synchronize_stream(0) == 0
    np.testing.assert_allclose(_read(acl, out_ptr, expected.shape, np.float32), expected, rtol=1e-5)


def test_cast_and_an_unloaded_operator(acl):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    src = _tensor(acl, x, C.ACL_FLOAT)
    dst = _tensor(acl, np.zeros((3, 4), np.float16), C.ACL_FLOAT16)
    # Nothing loaded or compiled: the runtime has no operator model for the Cast.
    assert acl.op.cast(src[0], src[1], dst[0], dst[1], 0, 0) == C.ACL_ERROR_OP_NOT_FOUND
    assert acl.op.compile("Cast", [src[0]], [dst[0]], 0, 0, 0, None) == 0
    assert acl.op.cast(src[0], src[1], dst[0], dst[1], 0, 0) == 0
    assert acl.rt.synchronize_stream(0) == 0
    np.testing.assert_array_equal(_read(acl, dst[2], (3, 4), np.float16), x.astype(np.float16))
    handle, ret = acl.op.create_handle_for_cast(src[0], dst[0], 0)
    assert ret == 0 and handle
    assert acl.op.execute_with_handle(handle, [src[1]], [dst[1]], 0) == 0
    attr = acl.op.create_attr()
    assert acl.op.set_attr_data_type(attr, "dst_type", C.ACL_FLOAT16) == (attr, 0)
