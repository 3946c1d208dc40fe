"""An AI Core exception with the job's own callback: what the callback reads on
the runtime's thread, the failed synchronize and its message."""

import json
import os

os.environ["ACLMON_SIM_FAULTS"] = json.dumps(
    [{"kind": "aicore_exception", "op_type": "MatMul", "nth": 2}]
)

import acl
from jobview import THREAD_LEVEL, Model, check, said, show

seen = []


def on_exception(info):
    seen.append(
        (
            acl.rt.get_device_id_from_exception_info(info),
            acl.rt.get_error_code_from_exception_info(info),
            acl.rt.peek_at_last_error(THREAD_LEVEL),
            acl.get_recent_err_msg(),
        )
    )


check(acl.init(), "acl.init")
check(acl.rt.set_exception_info_callback(on_exception), "set_exception_info_callback")
check(acl.rt.set_device(0), "acl.rt.set_device")
context, ret = acl.rt.create_context(0)
check(ret, "acl.rt.create_context")
stream, ret = acl.rt.create_stream()
check(ret, "acl.rt.create_stream")
model = Model("mlp_head")
for step in range(4):
    ret = acl.mdl.execute_async(model.model_id, model.inputs, model.outputs, stream)
    synced = acl.rt.synchronize_stream(stream)
    show(f"step {step}", (ret, synced))
    if synced:
        show("said", said(acl.get_recent_err_msg()))
        show("code", acl.rt.get_last_error(THREAD_LEVEL))
    else:
        show("output", model.output_sum())
show("callback saw", seen)
model.release()
check(acl.rt.destroy_stream(stream), "acl.rt.destroy_stream")
check(acl.rt.destroy_context(context), "acl.rt.destroy_context")
check(acl.rt.reset_device(0), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")
