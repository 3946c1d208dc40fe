"""Operator dumps on (acl.json dump section), then the overflow dump of an operator
that overflows; the files the job finds."""

import json
import os

os.environ["ACLMON_SIM_FAULTS"] = json.dumps([{"kind": "overflow", "op_type": "MatMul", "nth": 2}])

import acl
from jobview import Model, acl_json, check, masked_names, said, show, work_dir

dumps = work_dir("dump")
config = {
    "dump": {
        "dump_path": dumps,
        "dump_mode": "all",
        "dump_debug": "on",
        "dump_list": [{"model_name": "mlp_head"}],
    }
}
check(acl.init(acl_json(config)), "acl.init")
check(acl.rt.set_device(0), "acl.rt.set_device")
stream, ret = acl.rt.create_stream()
check(ret, "acl.rt.create_stream")
show("overflow switch", acl.rt.set_stream_overflow_switch(stream, 1))
model = Model("mlp_head", fill=2.0)
for step in range(3):
    ret = acl.mdl.execute_async(model.model_id, model.inputs, model.outputs, stream)
    synced = acl.rt.synchronize_stream(stream)
    show(f"step {step}", (ret, synced, said(acl.get_recent_err_msg()).splitlines()[:1]))
model.release()
check(acl.rt.destroy_stream(stream), "acl.rt.destroy_stream")
check(acl.rt.reset_device(0), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")
show("dump files", masked_names(dumps))
