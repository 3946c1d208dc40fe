"""Host callbacks on a stream (pyACL guide): subscribe_report, launch_callback, process_report."""

import json
import sys

import acl
import numpy as np
from common_io import check, destroy_dataset, prepare_dataset

ACL_CALLBACK_BLOCK = 1
model_path, result_path = sys.argv[1], sys.argv[2]
device_id = 0
state = {"exit": False, "calls": [], "reports": []}


def callback_func(args_list):
    state["calls"].append(args_list)


def process_callback(args_list):
    context, timeout = args_list
    check(acl.rt.set_context(context), "acl.rt.set_context")
    while not state["exit"]:
        state["reports"].append(acl.rt.process_report(timeout))


check(acl.init(), "acl.init")
check(acl.rt.set_device(device_id), "acl.rt.set_device")
context, ret = acl.rt.create_context(device_id)
check(ret, "acl.rt.create_context")
stream, ret = acl.rt.create_stream()
check(ret, "acl.rt.create_stream")
model_id, ret = acl.mdl.load_from_file(model_path)
check(ret, "acl.mdl.load_from_file")
model_desc = acl.mdl.create_desc()
check(acl.mdl.get_desc(model_desc, model_id), "acl.mdl.get_desc")
dims, _ = acl.mdl.get_input_dims(model_desc, 0)
input_dataset, output_dataset = prepare_dataset(model_desc, [np.ones(dims["dims"], np.float16)])

thread_id, ret = acl.util.start_thread(process_callback, [context, 50])
check(ret, "acl.util.start_thread")
check(acl.rt.subscribe_report(thread_id, stream), "acl.rt.subscribe_report")
for i in range(3):
    check(acl.mdl.execute_async(model_id, input_dataset, output_dataset, stream), "execute_async")
    check(
        acl.rt.launch_callback(callback_func, [i, "done"], ACL_CALLBACK_BLOCK, stream),
        "acl.rt.launch_callback",
    )
check(acl.rt.synchronize_stream(stream), "acl.rt.synchronize_stream")
calls_at_sync = len(state["calls"])
state["exit"] = True
check(acl.util.stop_thread(thread_id), "acl.util.stop_thread")
check(acl.rt.unsubscribe_report(thread_id, stream), "acl.rt.unsubscribe_report")

destroy_dataset(input_dataset)
destroy_dataset(output_dataset)
check(acl.mdl.unload(model_id), "acl.mdl.unload")
check(acl.mdl.destroy_desc(model_desc), "acl.mdl.destroy_desc")
check(acl.rt.destroy_stream(stream), "acl.rt.destroy_stream")
check(acl.rt.destroy_context(context), "acl.rt.destroy_context")
check(acl.rt.reset_device(device_id), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")
with open(result_path, "w") as f:
    json.dump(
        {
            "calls": state["calls"],
            "calls_at_sync": calls_at_sync,
            "reports": sorted(set(state["reports"])),
        },
        f,
    )
