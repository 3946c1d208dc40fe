"""Dynamic dims (ATC --dynamic_dims), the way the ND-format inference samples run a
model: ask the gears, fill the ascend_mbatch_shape_data input, set one gear's dims,
execute, read the current output dims."""

import json
import sys

import acl
import numpy as np
from common_io import check, destroy_dataset, prepare_dataset

ACL_MEMCPY_DEVICE_TO_HOST = 2
NPY_FLOAT32 = 11
model_path, result_path, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])

check(acl.init(), "acl.init")
check(acl.rt.set_device(0), "acl.rt.set_device")
model_id, ret = acl.mdl.load_from_file(model_path)
check(ret, "acl.mdl.load_from_file")
model_desc = acl.mdl.create_desc()
check(acl.mdl.get_desc(model_desc, model_id), "acl.mdl.get_desc")

gear_count, ret = acl.mdl.get_input_dynamic_gear_count(model_desc, -1)
check(ret, "acl.mdl.get_input_dynamic_gear_count")
gears, ret = acl.mdl.get_input_dynamic_dims(model_desc, -1, gear_count)
check(ret, "acl.mdl.get_input_dynamic_dims")
shape_index, ret = acl.mdl.get_input_index_by_name(model_desc, "ascend_mbatch_shape_data")
check(ret, "acl.mdl.get_input_index_by_name")

rng = np.random.default_rng(3)
features = rng.standard_normal((rows, 8)).astype(np.float32)
mask = (rng.random((rows, 8)) > 0.5).astype(np.float32)
# Inputs are sized for the biggest gear: pad each to its buffer.
inputs = []
for i, array in enumerate([features, mask]):
    padded = np.zeros(acl.mdl.get_input_size_by_index(model_desc, i) // 4, np.float32)
    padded[: array.size] = array.ravel()
    inputs.append(padded)
inputs.append(np.zeros(acl.mdl.get_input_size_by_index(model_desc, shape_index) // 8, np.int64))
input_dataset, output_dataset = prepare_dataset(model_desc, inputs)

dims = {"name": "", "dimCount": 4, "dims": [rows, 8, rows, 8]}
check(
    acl.mdl.set_input_dynamic_dims(model_id, input_dataset, shape_index, dims),
    "acl.mdl.set_input_dynamic_dims",
)
check(acl.mdl.execute(model_id, input_dataset, output_dataset), "acl.mdl.execute")
out_dims, ret = acl.mdl.get_cur_output_dims(model_desc, 0)
check(ret, "acl.mdl.get_cur_output_dims")
buffer = acl.mdl.get_dataset_buffer(output_dataset, 0)
size = rows * 4
host = np.zeros(rows, np.float32)
check(
    acl.rt.memcpy(acl.util.numpy_to_ptr(host), size, acl.get_data_buffer_addr(buffer), size,
                  ACL_MEMCPY_DEVICE_TO_HOST),
    "acl.rt.memcpy",
)  # fmt: skip
bad_ret = acl.mdl.set_input_dynamic_dims(
    model_id, input_dataset, shape_index, {"name": "", "dimCount": 4, "dims": [3, 8, 3, 8]}
)

destroy_dataset(input_dataset)
destroy_dataset(output_dataset)
check(acl.mdl.unload(model_id), "acl.mdl.unload")
check(acl.mdl.destroy_desc(model_desc), "acl.mdl.destroy_desc")
check(acl.rt.reset_device(0), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")
with open(result_path, "w") as f:
    json.dump(
        {
            "gear_count": gear_count,
            "gears": gears,
            "out_dims": out_dims,
            "output": host.tolist(),
            "expected": (features * mask).mean(axis=1).tolist(),
            "bad_ret": bad_ret,
        },
        f,
    )
