"""Profiling API flow (pyACL guide): init -> config -> start -> run -> stop -> finalize."""

import json
import sys

import acl
import numpy as np
from common_io import check, destroy_dataset, prepare_dataset

ACL_PROF_ACL_API = 0x0001
ACL_PROF_TASK_TIME = 0x0002
ACL_PROF_AICORE_METRICS = 0x0004
ACL_AICORE_PIPE_UTILIZATION = 1
ACL_PROF_STORAGE_LIMIT = 1

model_path, prof_path, result_path = sys.argv[1], sys.argv[2], sys.argv[3]
device_id = 0

check(acl.init(), "acl.init")
check(acl.prof.init(prof_path), "acl.prof.init")
check(acl.prof.set_config(ACL_PROF_STORAGE_LIMIT, "500MB"), "acl.prof.set_config")
check(acl.rt.set_device(device_id), "acl.rt.set_device")
context, ret = acl.rt.create_context(device_id)
check(ret, "acl.rt.create_context")
model_id, ret = acl.mdl.load_from_file(model_path)
check(ret, "acl.mdl.load_from_file")
model_desc = acl.mdl.create_desc()
check(acl.mdl.get_desc(model_desc, model_id), "acl.mdl.get_desc")

prof_config = acl.prof.create_config(
    [device_id],
    ACL_AICORE_PIPE_UTILIZATION,
    0,
    ACL_PROF_ACL_API | ACL_PROF_TASK_TIME | ACL_PROF_AICORE_METRICS,
)
if prof_config == 0:
    raise RuntimeError("acl.prof.create_config failed")
check(acl.prof.start(prof_config), "acl.prof.start")

dims, _ = acl.mdl.get_input_dims(model_desc, 0)
input_dataset, output_dataset = prepare_dataset(model_desc, [np.zeros(dims["dims"], np.float16)])
for _ in range(2):
    check(acl.mdl.execute(model_id, input_dataset, output_dataset), "acl.mdl.execute")

check(acl.prof.stop(prof_config), "acl.prof.stop")
destroy_dataset(input_dataset)
destroy_dataset(output_dataset)
check(acl.mdl.unload(model_id), "acl.mdl.unload")
check(acl.mdl.destroy_desc(model_desc), "acl.mdl.destroy_desc")
check(acl.prof.destroy_config(prof_config), "acl.prof.destroy_config")
check(acl.prof.finalize(), "acl.prof.finalize")
check(acl.rt.destroy_context(context), "acl.rt.destroy_context")
check(acl.rt.reset_device(device_id), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")
with open(result_path, "w") as f:
    json.dump({"ok": True}, f)
