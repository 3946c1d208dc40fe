"""The job's exception callback raises: pyACL drops it, the next exception
reaches no job callback; a synchronous execute fails."""

import json
import os

os.environ["ACLMON_SIM_FAULTS"] = json.dumps([{"kind": "aicore_exception", "op_type": "Softmax"}])

import acl
from jobview import Model, check, said, show

calls = []


def on_exception(info):
    calls.append(acl.rt.get_task_id_from_exception_info(info))
    raise ValueError("the job's callback fails")


check(acl.init(), "acl.init")
check(acl.rt.set_device(0), "acl.rt.set_device")
check(acl.rt.set_exception_info_callback(on_exception), "set_exception_info_callback")
model = Model("mlp_head")
for step in range(3):
    ret = acl.mdl.execute(model.model_id, model.inputs, model.outputs)
    show(f"execute {step}", ret)
    show("said", said(acl.get_recent_err_msg()).splitlines()[:2])
show("callback calls", len(calls))
model.release()
check(acl.rt.reset_device(0), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")
