"""Calls the public samples make that the sim gained: shapes and codes as in pyACL."""

from __future__ import annotations

import numpy as np

from aclmon import acl_constants as C


def test_data_type_size_and_contiguous_pointer(acl):
    assert acl.data_type_size(C.ACL_FLOAT16) == 2
    assert acl.data_type_size(C.ACL_INT64) == 8
    assert acl.data_type_size(C.ACL_BF16) == 2
    assert acl.data_type_size(C.ACL_DT_UNDEFINED) == 0
    strided = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]
    ptr, data_out = acl.util.numpy_contiguous_to_ptr(strided)
    assert data_out.flags["C_CONTIGUOUS"]
    assert np.frombuffer(acl.util.ptr_to_bytes(ptr, 24), np.int32).tolist() == [0, 2, 4, 6, 8, 10]


def test_set_tensor_const(acl):
    desc = acl.create_tensor_desc(C.ACL_FLOAT, [2], C.ACL_FORMAT_ND)
    data = np.array([1.0, 2.0], np.float32)
    assert acl.set_tensor_const(desc, acl.util.numpy_to_ptr(data), 8) == 0
    assert acl.set_tensor_const(desc, 0, 8) == C.ACL_ERROR_INVALID_PARAM


def test_load_with_user_memory_and_dims_v2(acl, model_path):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    work_size, weight_size, ret = acl.mdl.query_size(model_path["mlp_head"])
    assert ret == 0
    work, _ = acl.rt.malloc(work_size, 0)
    weight, _ = acl.rt.malloc(weight_size, 0)
    model_id, ret = acl.mdl.load_from_file_with_mem(
        model_path["mlp_head"], work, work_size, weight, weight_size
    )
    assert ret == 0 and model_id > 0
    desc = acl.mdl.create_desc()
    assert acl.mdl.get_desc(desc, model_id) == 0
    assert acl.mdl.get_input_dims_v2(desc, 0) == acl.mdl.get_input_dims(desc, 0)
    assert acl.mdl.get_cur_output_dims(desc, 0) == acl.mdl.get_output_dims(desc, 0)
    with open(model_path["mlp_head"], "rb") as handle:
        raw = handle.read()
    model_id2, ret = acl.mdl.load_from_mem_with_mem(
        acl.util.bytes_to_ptr(raw), len(raw), 0, 0, 0, 0
    )
    assert ret == 0 and model_id2 != model_id
    bad = acl.mdl.load_from_file_with_mem(model_path["mlp_head"], 0x1234, 16, 0, 0)
    assert bad == (0, C.ACL_ERROR_INVALID_PARAM)


def test_synchronize_fails_when_no_thread_can_run_a_blocking_callback(acl):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    stream, _ = acl.rt.create_stream()
    thread_id, ret = acl.util.start_thread(lambda _args: None, None)  # returns at once
    assert ret == 0
    assert acl.util.stop_thread(thread_id) == 0
    assert acl.rt.subscribe_report(thread_id, stream) == 0
    assert acl.rt.launch_callback(lambda _d: None, None, C.ACL_CALLBACK_BLOCK, stream) == 0
    assert acl.rt.synchronize_stream(stream) == C.ACL_ERROR_RT_THREAD_SUBSCRIBE
    assert acl.rt.synchronize_stream(stream) == 0  # the dead callback is forgotten
