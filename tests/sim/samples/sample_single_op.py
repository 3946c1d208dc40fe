"""Single-operator execution the way the acl_execute_* samples do it: load the
operator models' directory, describe tensors, execute Add, then a Cast + MatMul
chain on one stream, and read the results back."""

import json
import os
import sys

import acl
import numpy as np
from common_io import check

ACL_INT32, ACL_FLOAT, ACL_FLOAT16 = 3, 0, 1
ACL_FORMAT_ND = 2
ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST = 1, 2
result_path = sys.argv[1]
extra = sys.argv[2] if len(sys.argv) > 2 else ""

check(acl.init(), "acl.init")
check(acl.rt.set_device(0), "acl.rt.set_device")
context, ret = acl.rt.create_context(0)
check(ret, "acl.rt.create_context")
stream, ret = acl.rt.create_stream()
check(ret, "acl.rt.create_stream")
check(
    acl.op.set_model_dir(os.path.join(os.path.dirname(__file__), "op_models")),
    "acl.op.set_model_dir",
)


def device_tensor(array, acl_type):
    desc = acl.create_tensor_desc(acl_type, list(array.shape), ACL_FORMAT_ND)
    size = array.nbytes
    ptr, ret = acl.rt.malloc(size, 0)
    check(ret, "acl.rt.malloc")
    check(
        acl.rt.memcpy(ptr, size, acl.util.numpy_to_ptr(array), size, ACL_MEMCPY_HOST_TO_DEVICE),
        "acl.rt.memcpy",
    )
    return desc, acl.create_data_buffer(ptr, size), ptr


def output_tensor(shape, acl_type, itemsize):
    desc = acl.create_tensor_desc(acl_type, list(shape), ACL_FORMAT_ND)
    size = int(np.prod(shape)) * itemsize
    ptr, ret = acl.rt.malloc(size, 0)
    check(ret, "acl.rt.malloc")
    return desc, acl.create_data_buffer(ptr, size), ptr


def read(ptr, shape, dtype):
    out = np.zeros(shape, dtype)
    check(
        acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, ptr, out.nbytes,
                      ACL_MEMCPY_DEVICE_TO_HOST),
        "acl.rt.memcpy",
    )  # fmt: skip
    return out


rng = np.random.default_rng(11)
a = rng.integers(-100, 100, (8, 16)).astype(np.int32)
b = rng.integers(-100, 100, (8, 16)).astype(np.int32)
a_desc, a_buf, _ = device_tensor(a, ACL_INT32)
b_desc, b_buf, _ = device_tensor(b, ACL_INT32)
sum_desc, sum_buf, sum_ptr = output_tensor((8, 16), ACL_INT32, 4)
add_attr = acl.op.create_attr()
check(
    acl.op.execute_v2("Add", [a_desc, b_desc], [a_buf, b_buf], [sum_desc], [sum_buf], add_attr,
                      stream),
    "acl.op.execute_v2 Add",
)  # fmt: skip

# Cast float32 -> float16, twice, then MatMul(x, w^T) on the cast values.
x = rng.standard_normal((16, 32)).astype(np.float32)
w = rng.standard_normal((16, 32)).astype(np.float32)
cast_attr = acl.op.create_attr()
check(acl.op.set_attr_int(cast_attr, "dst_type", ACL_FLOAT16), "acl.op.set_attr_int")
halves = []
for array in (x, w):
    src_desc, src_buf, _ = device_tensor(array, ACL_FLOAT)
    dst_desc, dst_buf, dst_ptr = output_tensor(array.shape, ACL_FLOAT16, 2)
    check(
        acl.op.execute_v2("Cast", [src_desc], [src_buf], [dst_desc], [dst_buf], cast_attr, stream),
        "acl.op.execute_v2 Cast",
    )
    halves.append((dst_desc, dst_buf))
mm_attr = acl.op.create_attr()
check(acl.op.set_attr_bool(mm_attr, "transpose_x1", 0), "acl.op.set_attr_bool")
check(acl.op.set_attr_bool(mm_attr, "transpose_x2", 1), "acl.op.set_attr_bool")
mm_desc, mm_buf, mm_ptr = output_tensor((16, 16), ACL_FLOAT16, 2)
handle, ret = acl.op.create_handle("MatMul", [halves[0][0], halves[1][0]], [mm_desc], mm_attr)
check(ret, "acl.op.create_handle")
check(
    acl.op.execute_with_handle(handle, [halves[0][1], halves[1][1]], [mm_buf], stream),
    "acl.op.execute_with_handle",
)
check(acl.rt.synchronize_stream(stream), "acl.rt.synchronize_stream")

result = {
    "a": a.tolist(), "b": b.tolist(), "sum": read(sum_ptr, (8, 16), np.int32).tolist(),
    "x": x.tolist(), "w": w.tolist(),
    "matmul": read(mm_ptr, (16, 16), np.float16).astype(float).tolist(),
}  # fmt: skip
if extra == "--missing":
    # Not described in op_models: the runtime finds no operator model for it.
    result["unmatched_ret"] = acl.op.execute_v2(
        "Add", [a_desc, a_desc, a_desc], [a_buf, a_buf, a_buf], [sum_desc], [sum_buf],
        add_attr, stream,
    )  # fmt: skip
    result["unmatched_message"] = acl.get_recent_err_msg()
    erf_attr = acl.op.create_attr()
    result["no_kernel_ret"] = acl.op.execute_v2(
        "Erfinv", [a_desc], [a_buf], [sum_desc], [sum_buf], erf_attr, stream
    )
    result["no_kernel_message"] = acl.get_recent_err_msg()

acl.op.destroy_handle(handle)
for attr in (add_attr, cast_attr, mm_attr):
    acl.op.destroy_attr(attr)
check(acl.rt.destroy_stream(stream), "acl.rt.destroy_stream")
check(acl.rt.destroy_context(context), "acl.rt.destroy_context")
check(acl.rt.reset_device(0), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")
with open(result_path, "w") as f:
    json.dump(result, f)
