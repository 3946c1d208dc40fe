"""Smaller API surfaces: model descs, load_from_mem, tensor descs, util pointers, refcounted init."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from aclmon import acl_constants as C

NPY_FLOAT32 = 11


def test_finalize_reference_counts_inits(acl):
    assert acl.init() == 0
    assert acl.init() == C.ACL_ERROR_REPEAT_INITIALIZE
    assert acl.finalize_reference() == (1, 0)
    assert acl.rt.get_device_count() == (8, 0)  # still initialized
    assert acl.finalize_reference() == (0, 0)
    assert acl.rt.get_device_count()[1] == C.ACL_ERROR_UNINITIALIZE


def test_model_desc_queries_and_load_from_mem(acl, model_path):
    acl.init()
    acl.rt.set_device(0)
    raw = Path(model_path["resnet_tiny"]).read_bytes()
    model_id, ret = acl.mdl.load_from_mem(acl.util.bytes_to_ptr(raw), len(raw))
    assert ret == 0
    desc = acl.mdl.create_desc()
    assert acl.mdl.get_desc(desc, model_id) == 0
    assert acl.mdl.get_num_inputs(desc) == 1 and acl.mdl.get_num_outputs(desc) == 1
    assert acl.mdl.get_input_name_by_index(desc, 0) == "image"
    assert acl.mdl.get_input_index_by_name(desc, "image") == (0, 0)
    assert acl.mdl.get_input_index_by_name(desc, "nope")[1] == C.ACL_ERROR_INVALID_PARAM
    assert acl.mdl.get_input_dims(desc, 0) == (
        {"name": "image", "dimCount": 4, "dims": [1, 3, 16, 16]},
        0,
    )
    assert acl.mdl.get_input_size_by_index(desc, 0) == 3 * 16 * 16 * 2
    assert acl.mdl.get_input_data_type(desc, 0) == C.ACL_FLOAT16
    assert acl.mdl.get_input_format(desc, 0) == C.ACL_FORMAT_NCHW
    assert acl.mdl.get_output_dims(desc, 0)[0]["dims"] == [1, 10]
    work, weights, ret = acl.mdl.query_size(model_path["resnet_tiny"])
    assert ret == 0 and weights == (8 * 3 * 9 + 8 + 8 * 8 * 9) * 2 + 16 * 16 * 2 and work > 0
    free_before = acl.rt.get_mem_info(C.ACL_HBM_MEM)[0]
    assert acl.mdl.unload(model_id) == 0
    assert acl.rt.get_mem_info(C.ACL_HBM_MEM)[0] > free_before  # weights and activations freed
    assert acl.mdl.destroy_desc(desc) == 0


def test_tensor_desc_functions(acl):
    desc = acl.create_tensor_desc(C.ACL_FLOAT16, [2, 3, 4], C.ACL_FORMAT_ND)
    assert desc != 0
    assert acl.get_tensor_desc_type(desc) == C.ACL_FLOAT16
    assert acl.get_tensor_desc_format(desc) == C.ACL_FORMAT_ND
    assert acl.get_tensor_desc_num_dims(desc) == 3
    assert acl.get_tensor_desc_dim_v2(desc, 2) == (4, 0)
    assert acl.get_tensor_desc_dim_v2(desc, 3)[1] == C.ACL_ERROR_INVALID_PARAM
    assert acl.get_tensor_desc_dim(desc, 1) == 3
    assert acl.get_tensor_desc_element_count(desc) == 24
    assert acl.get_tensor_desc_size(desc) == 48
    assert acl.destroy_tensor_desc(desc) is None
    assert acl.get_tensor_desc_num_dims(desc) == 0
    assert acl.create_tensor_desc(999, [1], C.ACL_FORMAT_ND) == 0


def test_util_pointers_and_threads():
    from aclmon.sim import acl

    array = np.arange(6, dtype=np.float32)
    ptr = acl.util.numpy_to_ptr(array)
    view = acl.util.ptr_to_numpy(ptr, (2, 3), NPY_FLOAT32)
    view[0, 0] = 42.0  # a view on the same memory, as pyACL gives
    assert array[0] == 42.0
    assert acl.util.ptr_to_bytes(ptr, 8) == array[:2].tobytes()
    data = b"hello"
    assert acl.util.ptr_to_bytes(acl.util.bytes_to_ptr(data), 5) == data
    seen = []
    thread_id, ret = acl.util.start_thread(lambda args: seen.append(args), [1, 2])
    assert ret == 0 and thread_id > 0
    assert acl.util.stop_thread(thread_id) == 0
    assert seen == [[1, 2]]
    assert acl.util.stop_thread(thread_id) == C.ACL_ERROR_INVALID_PARAM


def test_capabilities_and_device_info(acl):
    acl.init()
    assert acl.get_device_capability(0, C.ACL_DEVICE_INFO_AI_CORE_NUM) == (24, 0)
    assert acl.rt.get_device_info(0, C.ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE) == (64 << 30, 0)
    assert acl.rt.query_device_status(3) == (C.ACL_DEVICE_STATUS_NORMAL, 0)
    assert acl.rt.get_device_info(0, 12345)[1] == C.ACL_ERROR_INVALID_PARAM
