"""Model subscription with a pipe reader thread (pyACL guide / ascendfly pattern)."""

import json
import os
import sys

import acl
import numpy as np
from common_io import check, destroy_dataset, prepare_dataset

ACL_AICORE_PIPE_UTILIZATION = 1
model_path, result_path = sys.argv[1], sys.argv[2]
device_id = 0
records = []


def get_model_info(data, data_len):
    op_number, ret = acl.prof.get_op_num(data, data_len)
    check(ret, "acl.prof.get_op_num")
    for i in range(op_number):
        model_id = acl.prof.get_model_id(data, data_len, i)
        op_type, ret = acl.prof.get_op_type(data, data_len, i, 65)
        check(ret, "acl.prof.get_op_type")
        op_name, ret = acl.prof.get_op_name(data, data_len, i, 275)
        check(ret, "acl.prof.get_op_name")
        op_start = acl.prof.get_op_start(data, data_len, i)
        op_end = acl.prof.get_op_end(data, data_len, i)
        op_duration = acl.prof.get_op_duration(data, data_len, i)
        records.append([model_id, op_name, op_type, op_start, op_end, op_duration])


def read_data(args):
    fd, ctx = args
    check(acl.rt.set_context(ctx), "acl.rt.set_context")
    buffer_size, ret = acl.prof.get_op_desc_size()
    check(ret, "acl.prof.get_op_desc_size")
    data_len = buffer_size * 10
    while True:
        data = os.read(fd, data_len)
        if len(data) == 0:
            break
        np_data = np.array(data)
        np_data_ptr = acl.util.numpy_to_ptr(np_data)
        size = np_data.itemsize * np_data.size
        get_model_info(np_data_ptr, size)


check(acl.init(), "acl.init")
check(acl.rt.set_device(device_id), "acl.rt.set_device")
context, ret = acl.rt.create_context(device_id)
check(ret, "acl.rt.create_context")
model_id, ret = acl.mdl.load_from_file(model_path)
check(ret, "acl.mdl.load_from_file")
model_desc = acl.mdl.create_desc()
check(acl.mdl.get_desc(model_desc, model_id), "acl.mdl.get_desc")

r, w = os.pipe()
subscribe_config = acl.prof.create_subscribe_config(1, ACL_AICORE_PIPE_UTILIZATION, w)
check(acl.prof.model_subscribe(model_id, subscribe_config), "acl.prof.model_subscribe")
thread_id, ret = acl.util.start_thread(read_data, [r, context])
check(ret, "acl.util.start_thread")

dims, _ = acl.mdl.get_input_dims(model_desc, 0)
input_dataset, output_dataset = prepare_dataset(model_desc, [np.ones(dims["dims"], np.float16)])
for _ in range(3):
    check(acl.mdl.execute(model_id, input_dataset, output_dataset), "acl.mdl.execute")

check(acl.prof.model_un_subscribe(model_id), "acl.prof.model_un_subscribe")
check(acl.util.stop_thread(thread_id), "acl.util.stop_thread")
os.close(r)
check(acl.prof.destroy_subscribe_config(subscribe_config), "destroy_subscribe_config")
destroy_dataset(input_dataset)
destroy_dataset(output_dataset)
check(acl.mdl.unload(model_id), "acl.mdl.unload")
check(acl.mdl.destroy_desc(model_desc), "acl.mdl.destroy_desc")
check(acl.rt.destroy_context(context), "acl.rt.destroy_context")
check(acl.rt.reset_device(device_id), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")
with open(result_path, "w") as f:
    json.dump({"records": records, "model_id": model_id}, f)
