"""An asynchronous classifier in the style of the pyACL callback samples.

Inputs are copied with memcpy, each execute_async is followed by a
launch_callback that reads the output, a report thread runs process_report in
a loop, and one callback raises (a bug in user code): the job must neither hang
nor lose the later callbacks.

usage: resnet_async_callback.py MODEL RESULT_JSON
"""

import json
import sys
import threading

import acl
import numpy as np

ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_CALLBACK_BLOCK = 1
ACL_HOST = 1

model_path, result_path = sys.argv[1], sys.argv[2]
results = {}
state = {"exit": False, "reports": []}


def check(ret, what):
    if ret != 0:
        raise RuntimeError(f"{what} failed, ret={ret}: {acl.get_recent_err_msg()}")


def process_callback(args_list):
    context, timeout = args_list
    check(acl.rt.set_context(context), "acl.rt.set_context")
    while not state["exit"]:
        state["reports"].append(acl.rt.process_report(timeout))


def on_output(user_data):
    index, out_ptr, _size, dims = user_data
    if index == 1:
        raise ValueError("a bug in the user's callback")
    host = np.zeros(dims, dtype=np.float16)
    check(
        acl.rt.memcpy(
            acl.util.numpy_to_ptr(host),
            host.nbytes,
            out_ptr,
            host.nbytes,
            ACL_MEMCPY_DEVICE_TO_HOST,
        ),
        "acl.rt.memcpy",
    )
    results[index] = host.tolist()


check(acl.init(), "acl.init")
check(acl.rt.set_device(0), "acl.rt.set_device")
context, ret = acl.rt.create_context(0)
check(ret, "acl.rt.create_context")
stream, ret = acl.rt.create_stream()
check(ret, "acl.rt.create_stream")
run_mode, ret = acl.rt.get_run_mode()
check(ret, "acl.rt.get_run_mode")
model_id, ret = acl.mdl.load_from_file(model_path)
check(ret, "acl.mdl.load_from_file")
desc = acl.mdl.create_desc()
check(acl.mdl.get_desc(desc, model_id), "acl.mdl.get_desc")
in_size = acl.mdl.get_input_size_by_index(desc, 0)
out_size = acl.mdl.get_output_size_by_index(desc, 0)
dims, ret = acl.mdl.get_cur_output_dims(desc, 0)
check(ret, "acl.mdl.get_cur_output_dims")

thread_id, ret = acl.util.start_thread(process_callback, [context, 100])
check(ret, "acl.util.start_thread")
check(acl.rt.subscribe_report(thread_id, stream), "acl.rt.subscribe_report")

rng = np.random.default_rng(3)
images, keep = [], []
for i in range(3):
    image = rng.standard_normal((1, 3, 16, 16)).astype(np.float16)
    images.append(image.tolist())
    in_ptr, ret = acl.rt.malloc(in_size, ACL_MEM_MALLOC_HUGE_FIRST)
    check(ret, "acl.rt.malloc")
    check(
        acl.rt.memcpy(
            in_ptr, in_size, acl.util.numpy_to_ptr(image), image.nbytes, ACL_MEMCPY_HOST_TO_DEVICE
        ),
        "acl.rt.memcpy",
    )
    out_ptr, ret = acl.rt.malloc(out_size, ACL_MEM_MALLOC_HUGE_FIRST)
    check(ret, "acl.rt.malloc")
    inputs, outputs = acl.mdl.create_dataset(), acl.mdl.create_dataset()
    acl.mdl.add_dataset_buffer(inputs, acl.create_data_buffer(in_ptr, in_size))
    acl.mdl.add_dataset_buffer(outputs, acl.create_data_buffer(out_ptr, out_size))
    keep.append((image, inputs, outputs))
    check(acl.mdl.execute_async(model_id, inputs, outputs, stream), "acl.mdl.execute_async")
    check(
        acl.rt.launch_callback(
            on_output, [i, out_ptr, out_size, tuple(dims["dims"])], ACL_CALLBACK_BLOCK, stream
        ),
        "acl.rt.launch_callback",
    )
sync_ret = acl.rt.synchronize_stream(stream)
check(acl.rt.unsubscribe_report(thread_id, stream), "acl.rt.unsubscribe_report")
state["exit"] = True
check(acl.util.stop_thread(thread_id), "acl.util.stop_thread")
thread_alive_after = any(t.native_id == thread_id for t in threading.enumerate())

with open(result_path, "w") as handle:
    json.dump(
        {
            "sync_ret": sync_ret,
            "images": images,
            "outputs": {str(k): v for k, v in results.items()},
            "dims": dims,
            "thread_alive_after_stop": thread_alive_after,
        },
        handle,
    )
acl.mdl.unload(model_id)
acl.mdl.destroy_desc(desc)
acl.rt.destroy_stream(stream)
acl.rt.destroy_context(context)
acl.rt.reset_device(0)
acl.finalize()
