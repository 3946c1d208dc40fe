"""AI Core exception info in a callback (pyACL guide, AI Core troubleshooting)."""

import json
import sys
import threading

import acl
import numpy as np
from common_io import check, destroy_dataset, prepare_dataset

model_path, result_path = sys.argv[1], sys.argv[2]
device_id = 0
seen = []


def exception_callback(exception_info):
    device = acl.rt.get_device_id_from_exception_info(exception_info)
    stream_id = acl.rt.get_stream_id_from_exception_info(exception_info)
    task_id = acl.rt.get_task_id_from_exception_info(exception_info)
    error_code = acl.rt.get_error_code_from_exception_info(exception_info)
    op_name, input_desc, input_num, output_desc, output_num, ret = acl.mdl.create_and_get_op_desc(
        device, stream_id, task_id, 256
    )
    tensors = []
    for desc_array, count, kind in (
        (input_desc, input_num, "input"),
        (output_desc, output_num, "output"),
    ):
        for i in range(count):
            desc = acl.get_tensor_desc_by_index(desc_array, i)
            dims = []
            for d in range(acl.get_tensor_desc_num_dims(desc)):
                dim, dim_ret = acl.get_tensor_desc_dim_v2(desc, d)
                check(dim_ret, "acl.get_tensor_desc_dim_v2")
                dims.append(dim)
            tensors.append(
                {
                    "kind": kind,
                    "address": acl.get_tensor_desc_address(desc),
                    "dtype": acl.get_tensor_desc_type(desc),
                    "format": acl.get_tensor_desc_format(desc),
                    "dims": dims,
                }
            )
    acl.destroy_tensor_desc(input_desc)
    acl.destroy_tensor_desc(output_desc)
    seen.append(
        {
            "device": device,
            "stream_id": stream_id,
            "task_id": task_id,
            "error_code": error_code,
            "op_name": op_name,
            "ret": ret,
            "tensors": tensors,
            "thread": threading.current_thread().name,
        }
    )


check(acl.init(), "acl.init")
check(acl.rt.set_device(device_id), "acl.rt.set_device")
context, ret = acl.rt.create_context(device_id)
check(ret, "acl.rt.create_context")
stream, ret = acl.rt.create_stream()
check(ret, "acl.rt.create_stream")
check(acl.rt.set_exception_info_callback(exception_callback), "set_exception_info_callback")
stream_id, ret = acl.rt.stream_get_id(stream)
check(ret, "acl.rt.stream_get_id")

model_id, ret = acl.mdl.load_from_file(model_path)
check(ret, "acl.mdl.load_from_file")
model_desc = acl.mdl.create_desc()
check(acl.mdl.get_desc(model_desc, model_id), "acl.mdl.get_desc")
dims, _ = acl.mdl.get_input_dims(model_desc, 0)
data = np.ones(dims["dims"], dtype=np.float16)
input_dataset, output_dataset = prepare_dataset(model_desc, [data])
check(acl.mdl.execute_async(model_id, input_dataset, output_dataset, stream), "execute_async")
sync_ret = acl.rt.synchronize_stream(stream)
after_ret = acl.rt.synchronize_stream(stream)
destroy_dataset(input_dataset)
destroy_dataset(output_dataset)
check(acl.mdl.unload(model_id), "acl.mdl.unload")
check(acl.mdl.destroy_desc(model_desc), "acl.mdl.destroy_desc")
check(acl.rt.set_exception_info_callback(None), "clear callback")
check(acl.rt.destroy_stream(stream), "acl.rt.destroy_stream")
check(acl.rt.destroy_context(context), "acl.rt.destroy_context")
check(acl.rt.reset_device(device_id), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")

with open(result_path, "w") as f:
    json.dump(
        {
            "seen": seen,
            "sync_ret": sync_ret,
            "after_ret": after_ret,
            "stream_id": stream_id,
            "main_thread": threading.current_thread().name,
        },
        f,
    )
