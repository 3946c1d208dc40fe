"""The job profiles itself with the API (init, config, start, stop, finalize), and
misuses it; the files it gets."""

import acl
from jobview import Model, check, masked_names, show, work_dir

ACL_PROF_ACL_API = 0x0001
ACL_PROF_TASK_TIME = 0x0002
ACL_PROF_AICORE_METRICS = 0x0004
ACL_AICORE_PIPE_UTILIZATION = 1

output = work_dir("prof")
check(acl.init(), "acl.init")
show("start before init", acl.prof.start(0))
check(acl.prof.init(output), "acl.prof.init")
show("init twice", acl.prof.init(output))
check(acl.rt.set_device(0), "acl.rt.set_device")
model = Model("resnet_tiny")
config = acl.prof.create_config(
    [0],
    ACL_AICORE_PIPE_UTILIZATION,
    0,
    ACL_PROF_ACL_API | ACL_PROF_TASK_TIME | ACL_PROF_AICORE_METRICS,
)
show("config", config != 0)
show("bad config", acl.prof.create_config([0], 99, 0, ACL_PROF_TASK_TIME))
check(acl.prof.start(config), "acl.prof.start")
show("start twice", acl.prof.start(config))
for _ in range(2):
    check(acl.mdl.execute(model.model_id, model.inputs, model.outputs), "acl.mdl.execute")
show("output", model.output_sum())
check(acl.prof.stop(config), "acl.prof.stop")
check(acl.prof.destroy_config(config), "acl.prof.destroy_config")
check(acl.prof.finalize(), "acl.prof.finalize")
show("finalize twice", acl.prof.finalize())
show("files", len(masked_names(output)) > 0)
model.release()
check(acl.rt.reset_device(0), "acl.rt.reset_device")
check(acl.finalize(), "acl.finalize")
