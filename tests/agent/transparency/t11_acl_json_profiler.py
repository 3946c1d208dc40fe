"""Profiling switched on by acl.json (the profiler section), and a bad acl.json."""

import acl
from jobview import Model, acl_json, check, masked_names, show, work_dir

show("bad profiler section", acl.init(acl_json({"profiler": {"switch": "on", "aic_metrics": 5}})))
output = work_dir("prof")
config = {
    "profiler": {
        "switch": "on",
        "output": output,
        "task_time": "on",
        "aic_metrics": "PipeUtilization",
        "aicpu": "on",
    }
}
check(acl.init(acl_json(config)), "acl.init")
show("prof.init while acl.json profiles", acl.prof.init(work_dir("other")))
check(acl.rt.set_device(0), "acl.rt.set_device")
model = Model("mlp_head")
for _ in range(3):
    check(acl.mdl.execute(model.model_id, model.inputs, model.outputs), "acl.mdl.execute")
show("output", model.output_sum())
model.release()
check(acl.rt.reset_device(0), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")
show("files", len(masked_names(output)) > 0)
